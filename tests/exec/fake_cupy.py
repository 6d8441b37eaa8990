"""A stand-in for the part of CuPy that exec.device.cupy_device uses, over numpy, for machines without a GPU.

Work is done when it is launched, but an event reports completion only a little later (as
a GPU's would), so the CupyDevice's event bookkeeping and its poller thread are exercised.
It checks the glue code, not CUDA: the real device's tests run where cupy sees a GPU."""
import sys
import time
import types

import numpy as np

LATENCY_S = 0.0005


class _Context:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Stream(_Context):
    def __init__(self, non_blocking=False):
        self.last = 0.0

    def synchronize(self):
        time.sleep(max(0.0, self.last - time.perf_counter()))

    def wait_event(self, event):
        self.last = max(self.last, event.at)


class Event:
    def __init__(self, disable_timing=True):
        self.at = 0.0

    def record(self, stream):
        self.at = stream.last = max(stream.last, time.perf_counter() + LATENCY_S)

    @property
    def done(self):
        return time.perf_counter() >= self.at

    def synchronize(self):
        time.sleep(max(0.0, self.at - time.perf_counter()))


class Device(_Context):
    def __init__(self, index=0):
        self.index = index


class ndarray:
    def __init__(self, array):
        self.a = array
        self.shape, self.dtype, self.nbytes = array.shape, array.dtype, array.nbytes

    def get(self, stream=None, out=None, blocking=True):
        if out is None:
            return self.a.copy()
        np.copyto(out, self.a)
        return out

    def set(self, array, stream=None):
        np.copyto(self.a, array)

    def __setitem__(self, key, value):
        self.a[key] = value.a if isinstance(value, ndarray) else value


def empty(shape, dtype):
    return ndarray(np.empty(shape, dtype))


def install(monkeypatch):
    """Makes `import cupy` and `import cupyx` give this module's stand-ins (for one test)."""
    cupy = types.ModuleType("cupy")
    cupy.ndarray, cupy.empty = ndarray, empty
    cupy.cuda = types.SimpleNamespace(Stream=Stream, Event=Event, Device=Device, runtime=types.SimpleNamespace(
        memGetInfo=lambda: (1 << 30, 1 << 30), getDeviceCount=lambda: 1))
    cupyx = types.ModuleType("cupyx")
    cupyx.empty_pinned = lambda shape, dtype: np.empty(shape, dtype)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.delitem(sys.modules, "exec.device.cupy_device", raising=False)
