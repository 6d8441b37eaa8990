"""Devices: streams, events and accounted memory (base.py), over numpy (simulated.py) or CuPy (cupy_device.py)."""
from exec.device.base import Buffer, Device, DeviceOutOfMemory, Event, Stream
from exec.device.checker import HappensBeforeError
from exec.device.simulated import SimulatedDevice


def cupy_available() -> bool:
    """Whether CuPy is installed and sees a GPU (the CupyDevice's tests skip otherwise)."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def CupyDevice(*args, **kwargs):
    """A `exec.device.cupy_device.CupyDevice` (imported on use: CuPy is the optional `gpu` extra)."""
    from exec.device.cupy_device import CupyDevice as _CupyDevice
    return _CupyDevice(*args, **kwargs)
