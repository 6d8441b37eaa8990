"""The devices the device and swap tests run on: the simulated one always, a CuPy one where a GPU is present,
and the CuPy device over a numpy stand-in for CuPy (tests/exec/fake_cupy.py) everywhere."""
import pytest

from exec.device import CupyDevice, SimulatedDevice, cupy_available

KINDS = ["simulated", "cupy-over-numpy",
         pytest.param("cupy", marks=pytest.mark.skipif(not cupy_available(), reason="needs cupy and a GPU"))]


def make_device(kind: str, memory_limit=None, copy_bandwidth=None):
    if kind == "simulated":
        return SimulatedDevice(memory_limit=memory_limit, copy_bandwidth=copy_bandwidth)
    if kind == "cupy-over-numpy":
        from _pytest.monkeypatch import MonkeyPatch

        from tests.exec import fake_cupy
        patch = MonkeyPatch()
        fake_cupy.install(patch)
        try:
            return CupyDevice(memory_limit=memory_limit)
        finally:
            patch.undo()  # the device keeps the stand-in modules it imported
    return CupyDevice(memory_limit=memory_limit)
