"""Kernels on a device: the numpy kernels run on the device's arrays, launched on its compute stream.

A node of the partition of a session's device ("/gpu:0" with `Session(graph, device=d)`) keeps
the kernel exec/kernels built for it, wrapped by `device_kernel`: its inputs that are numpy
arrays (constants, fed values) are uploaded to the device's array module first, and the call is
enqueued on the device's compute stream (on `CupyDevice` inside that CUDA stream, so the work
the kernel launches is ordered before the events recorded there; on `SimulatedDevice` at once).
The numpy kernels run unchanged on CuPy arrays because numpy hands its functions and ufuncs on
such arrays to CuPy (the `__array_function__` and `__array_ufunc__` protocols): "the numpy
kernels with the array module swapped". A few kernels read their input as a numpy array
(`np.asarray`) to pick a dtype; `DEVICE_KERNELS` has their device versions, written with `xp`.
A kernel that still needs a numpy array fails with a TypeError naming the node, its line and
the device, saying to place the node on the host. A floating-point constant is uploaded once,
when the plan is built (the plan binds it into its consumers' inputs).
"""
from __future__ import annotations

import numpy as np

from graph import dtypes as _dt
from graph.op_names import CONST, NO_OP, PLACEHOLDER


def _sigmoid(xp):
    def sigmoid(x):
        x = xp.asarray(x)
        if x.dtype.kind in "iub":
            x = x.astype(np.float64)
        return 1 / (1 + xp.exp(-x))
    return sigmoid


def _relu(xp):
    return lambda x: xp.maximum(x, 0).astype(xp.asarray(x).dtype, copy=False)


def _reciprocal(xp):
    def reciprocal(x):
        x = xp.asarray(x)
        return xp.true_divide(1, x) if x.dtype.kind in "iub" else xp.reciprocal(x)
    return reciprocal


def _cast(node, xp):
    dtype = node.attrs["dtype"]
    return lambda x: xp.asarray(x).astype(dtype)


def _like(node, xp):
    dtype, one = node.attrs["dtype"], node.op == "OnesLike"

    def like(x):
        x = xp.asarray(x)
        dt = dtype if dtype is not None else x.dtype
        return xp.ones(x.shape, dt) if one else xp.zeros(x.shape, dt)
    return like


def _sum_to_shape(xp):
    def sum_to_shape(x, shape):
        shape = tuple(int(d) for d in (shape.tolist() if hasattr(shape, "tolist") else shape))
        x = xp.asarray(x)
        lead = x.ndim - len(shape)
        if lead < 0:
            raise ValueError(f"cannot sum a value of shape {x.shape} down to the larger shape {shape}")
        axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and x.shape[lead + i] != 1)
        out = xp.sum(x, axis=axes, dtype=x.dtype, keepdims=True) if axes else x
        if out.shape[lead:] != shape:
            raise ValueError(f"cannot sum a value of shape {x.shape} down to shape {shape}")
        return out.reshape(shape)
    return sum_to_shape


def _fill(xp):
    def fill(shape, value):
        value = xp.asarray(value)
        return xp.full(tuple(int(d) for d in shape.tolist()), value, dtype=value.dtype)
    return fill


# reductions through xp's functions rather than numpy's ufunc.reduce, which an array module need not serve
_REDUCTIONS = {"Sum": "sum", "Prod": "prod", "Max": "max", "Min": "min", "Any": "any", "All": "all",
               "Mean": "mean", "ArgMax": "argmax", "ArgMin": "argmin"}


def _reduce(node, xp):
    fn, axis, keepdims = getattr(xp, _REDUCTIONS[node.op]), node.attrs["axis"], node.attrs["keepdims"]
    return lambda x: fn(x, axis=axis, keepdims=keepdims)


# op -> factory(node, xp) of the kernel that runs on the device's arrays, for the kernels whose numpy
# version converts its input with np.asarray (which a device array refuses)
DEVICE_KERNELS = {
    "Sigmoid": lambda node, xp: _sigmoid(xp),
    "Relu": lambda node, xp: _relu(xp),
    "Reciprocal": lambda node, xp: _reciprocal(xp),
    "Cast": _cast,
    "ZerosLike": _like,
    "OnesLike": _like,
    "SumToShape": lambda node, xp: _sum_to_shape(xp),
    "Fill": lambda node, xp: _fill(xp),
    **{op: _reduce for op in _REDUCTIONS},
}


def runs_on_device(node) -> bool:
    """Whether `node`'s kernel is array compute that `device_kernel` launches on the device. Stack,
    TensorArray and Variable ops (handles, state kept between runs) manage memory themselves and
    run as they are on the host thread, as do Print and Assert, which read values on the host."""
    if node.op in ("Print", "Assert", NO_OP, PLACEHOLDER):
        return False
    if node.attrs.get("variable") is not None:
        return False
    return not any(t.dtype is _dt.variant for t in (*node.inputs, *node.outputs))


def device_kernel(node, fn, device, donated: bool = False):
    """`fn` (node's numpy kernel) as a kernel on `device`: see the module docstring. `donated`: `fn` is
    the in-place variant, which writes through `out=` and needs no device version."""
    xp = device.xp
    make = DEVICE_KERNELS.get(node.op)
    if make is not None and not donated:
        fn = make(node, xp)
    upload = device.upload if xp is not np else None
    if node.op == CONST and upload is not None:
        value = fn()
        if isinstance(value, np.ndarray) and value.dtype.kind in "fc":  # data: uploaded once, when the plan is built
            uploaded = upload(value)
            return lambda: uploaded
    enqueue = device.compute.enqueue
    label = f"{node.op} {node.name}"

    def on_device(*args):
        if upload is not None:
            args = [upload(a) if type(a) is np.ndarray else a for a in args]
        result = error = None

        def launch():
            nonlocal result, error
            try:
                result = fn(*args)
            except Exception as e:  # raised below, in the executor's thread, not kept as the stream's error
                error = e
        enqueue(launch, label=label)
        if error is not None:
            if isinstance(error, TypeError):
                built = f" (built at {node.source})" if node.source else ""
                raise TypeError(
                    f"{node.op} {node.name}{built} cannot run on {device.name}: its kernel needs numpy arrays "
                    f"({error}). Place it on the host: build it inside `with graph.device('/cpu:0'):`") from error
            raise error
        return result
    on_device.__name__ = f"{getattr(fn, '__name__', 'kernel')}_on_device"
    return on_device
