"""The devices the device and swap tests run on: the simulated one always, a CuPy one where a GPU is present."""
import pytest

from exec.device import CupyDevice, SimulatedDevice, cupy_available

KINDS = ["simulated", pytest.param("cupy", marks=pytest.mark.skipif(not cupy_available(),
                                                                      reason="needs cupy and a GPU"))]


def make_device(kind: str, memory_limit=None, copy_bandwidth=None):
    if kind == "simulated":
        return SimulatedDevice(memory_limit=memory_limit, copy_bandwidth=copy_bandwidth)
    return CupyDevice(memory_limit=memory_limit)
