"""Array creation: fill, zeros, ones, the *_like family, range and one_hot."""
from __future__ import annotations

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import make_op
from graph.errors import ShapeError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.conversion import constant, convert, is_tensor_like, static_value
from graph.ops.math import cast
from graph.ops.shape_ops import scalar_value, shape_dims, shape_of, shape_tensor, shape_value


def _fill_infer(inputs, attrs):
    s, v = inputs
    if v.shape is not None and v.shape != ():
        raise ShapeError(f"fill value must be a scalar, got shape {_sh.format_shape(v.shape)}")
    return [(v.dtype, shape_dims(shape_value(s)))]


register_op("Fill", _fill_infer)


def fill(shape, value, dtype=None, name: str | None = None) -> Tensor:
    """A tensor of `shape` filled with the scalar `value` (`np.full`)."""
    v = convert(value) if is_tensor_like(value) else constant(value, dtype)
    if dtype is not None:
        v = cast(v, dtype)
    return make_op("Fill", [shape_tensor(shape), v], name=name).outputs[0]


full = fill


def zeros(shape, dtype=np.float64, name: str | None = None) -> Tensor:
    """`np.zeros(shape, dtype)`; `shape` may be a tensor or mix ints and scalar tensors."""
    return fill(shape, constant(np.zeros((), _dt.as_dtype(dtype))), name=name or "zeros")


def ones(shape, dtype=np.float64, name: str | None = None) -> Tensor:
    """`np.ones(shape, dtype)`."""
    return fill(shape, constant(np.ones((), _dt.as_dtype(dtype))), name=name or "ones")


def _like_infer(inputs, attrs):
    x = inputs[0]
    return [(attrs["dtype"] if attrs["dtype"] is not None else x.dtype, x.shape)]


register_op("ZerosLike", _like_infer, differentiable=False)
register_op("OnesLike", _like_infer, differentiable=False)


def zeros_like(x, dtype=None, name: str | None = None) -> Tensor:
    """`np.zeros_like(x, dtype)`."""
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    return make_op("ZerosLike", [convert(x)], {"dtype": dtype}, name=name).outputs[0]


def ones_like(x, dtype=None, name: str | None = None) -> Tensor:
    """`np.ones_like(x, dtype)`."""
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    return make_op("OnesLike", [convert(x)], {"dtype": dtype}, name=name).outputs[0]


def full_like(x, fill_value, dtype=None, name: str | None = None) -> Tensor:
    """`np.full_like(x, fill_value, dtype)`."""
    x = convert(x)
    return fill(shape_of(x), fill_value, dtype=dtype if dtype is not None else x.dtype, name=name)


# --------------------------------------------------------------------------- range, one_hot

def _arange_dtype(*dtypes):
    return np.arange(*(np.ones((), d)[()] for d in dtypes)).dtype


def _range_infer(inputs, attrs):
    dtype = attrs["dtype"] or _arange_dtype(*(t.dtype for t in inputs))
    vals = [static_value(t) for t in inputs]
    n = None
    if all(v is not None for v in vals):
        start, limit, delta = (v.item() for v in vals)
        if delta == 0:
            raise ValueError("range: delta must not be zero")
        n = max(int(np.ceil((limit - start) / delta)), 0)
    return [(dtype, (n,))]


register_op("Range", _range_infer, differentiable=False)


def _scalar_input(v, what):
    t = convert(v)
    if t.shape is not None and t.shape != ():
        raise ShapeError(f"{what} must be a scalar, got shape {_sh.format_shape(t.shape)}")
    if not _dt.is_numeric(t.dtype) or t.dtype.kind == "c":
        raise TypeError(f"{what} must be a real number, got {t.dtype}")
    return t


def range(start, limit=None, delta=1, dtype=None, name: str | None = None) -> Tensor:
    """`np.arange(start, limit, delta, dtype)`; the bounds may be scalar tensors."""
    if limit is None:
        start, limit = 0, start
    ts = [_scalar_input(v, w) for v, w in ((start, "range start"), (limit, "range limit"), (delta, "range delta"))]
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    return make_op("Range", ts, {"dtype": dtype}, name=name).outputs[0]


arange = range


def _one_hot_infer(inputs, attrs):
    idx, depth = inputs
    if not _dt.is_integer(idx.dtype):
        raise TypeError(f"one_hot indices must be integers, got {idx.dtype}")
    d = scalar_value(depth)
    return [(attrs["dtype"], None if idx.shape is None else (*idx.shape, d))]


register_op("OneHot", _one_hot_infer, differentiable=False)


def one_hot(indices, depth, dtype=np.float64, name: str | None = None) -> Tensor:
    """`np.eye(depth, dtype=dtype)[indices]`, except that out-of-range indices give all-zero rows."""
    depth_t = _scalar_input(depth, "one_hot depth")
    return make_op("OneHot", [convert(indices), depth_t], {"dtype": _dt.as_dtype(dtype)}, name=name).outputs[0]


__all__ = ["fill", "full", "zeros", "ones", "zeros_like", "ones_like", "full_like", "range", "arange", "one_hot"]
