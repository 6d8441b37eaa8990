"""A stand-in for the part of CuPy that exec.device.cupy_device uses, over numpy, for machines without a GPU.

Work is done when it is launched, but an event reports completion only a little later (as
a GPU's would), so the CupyDevice's event bookkeeping and its poller thread are exercised.
Its `ndarray` computes as CuPy's does under numpy's functions (the `__array_ufunc__` and
`__array_function__` protocols: `np.add(a, b)` of device arrays gives a device array) and,
like CuPy's, refuses to become a numpy array implicitly (`np.asarray(a)` raises TypeError),
so a kernel that would read device memory on the host fails here as on a GPU. It checks the
glue code, not CUDA: the real device's tests run where cupy sees a GPU."""
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


def _unwrap(x):
    if isinstance(x, ndarray):
        return x.a
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v) for v in x)
    if isinstance(x, np.ndarray) and x.ndim:  # CuPy takes numpy scalars and 0-d arrays, not arrays
        raise TypeError(f"Unsupported type {type(x)}")
    return x


def _wrap(x):
    if isinstance(x, np.ndarray):
        return ndarray(x)
    if isinstance(x, np.generic):  # CuPy's functions give 0-d device arrays, never numpy scalars
        return ndarray(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


class ndarray(np.lib.mixins.NDArrayOperatorsMixin):
    def __init__(self, array):
        self.a = np.asarray(array)
        array = self.a
        self.shape, self.dtype, self.nbytes = array.shape, array.dtype, array.nbytes

    ndim = property(lambda self: self.a.ndim)
    size = property(lambda self: self.a.size)
    T = property(lambda self: ndarray(self.a.T))

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct "
                        "a NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            outs = kwargs["out"]
            kwargs["out"] = tuple(_unwrap(o) for o in outs)
            getattr(ufunc, method)(*_unwrap(inputs), **kwargs)
            return outs[0] if len(outs) == 1 else outs
        return _wrap(getattr(ufunc, method)(*_unwrap(inputs), **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        return _wrap(func(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))

    def __getitem__(self, key):
        return _wrap(self.a[_unwrap(key)])

    def __bool__(self):  # CuPy synchronizes and reads the one element
        return bool(self.a)

    def __float__(self):
        return float(self.a)

    def __int__(self):
        return int(self.a)

    def __len__(self):
        return len(self.a)

    def astype(self, dtype, copy=True):
        return ndarray(self.a.astype(dtype, copy=copy))

    def reshape(self, *shape):
        return ndarray(self.a.reshape(*shape))

    def copy(self):
        return ndarray(self.a.copy())

    def tolist(self):
        return self.a.tolist()

    def item(self):
        return self.a.item()

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


def asarray(x, dtype=None):
    if isinstance(x, ndarray):
        return x if dtype is None else x.astype(dtype)
    return ndarray(np.array(x, dtype=dtype))


def asnumpy(x, stream=None):
    return x.a.copy() if isinstance(x, ndarray) else np.asarray(x)


def _module_function(name):
    """cupy.<name>: numpy's function of that name over device arrays (cupy.exp, cupy.maximum, ...)."""
    fn = getattr(np, name)
    return lambda *args, **kwargs: _wrap(fn(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))


def install(monkeypatch):
    """Makes `import cupy` and `import cupyx` give this module's stand-ins (for one test)."""
    cupy = types.ModuleType("cupy")
    cupy.ndarray, cupy.empty, cupy.asarray, cupy.asnumpy = ndarray, empty, asarray, asnumpy
    cupy.__getattr__ = lambda name: _module_function(name)  # PEP 562: cupy.exp and the like
    cupy.cuda = types.SimpleNamespace(Stream=Stream, Event=Event, Device=Device, runtime=types.SimpleNamespace(
        memGetInfo=lambda: (1 << 30, 1 << 30), getDeviceCount=lambda: 1))
    cupyx = types.ModuleType("cupyx")
    cupyx.empty_pinned = lambda shape, dtype: np.empty(shape, dtype)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.delitem(sys.modules, "exec.device.cupy_device", raising=False)
