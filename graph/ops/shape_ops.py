"""Shapes as data: the Shape, Size and Rank ops, shape arguments as tensors, and their static values.

Ops that take a shape (Reshape, Fill, BroadcastTo, SumToShape, Tile) take it as
an int64 1-D tensor input, so it may be computed at run time. Builders accept a
tensor, an int, or a list mixing ints and scalar tensors (`shape_tensor`);
inference recovers every dimension that is known when the graph is built
(`shape_value`).
"""
from __future__ import annotations

import operator

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import make_op
from graph.errors import ShapeError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.conversion import constant, convert, is_tensor_like, stack, static_value
from graph.ops.math import cast

_INT64 = np.dtype(np.int64)


# --------------------------------------------------------------------------- static shape values

def shape_value(t: Tensor):
    """What is known statically about the 1-D shape tensor `t`: a tuple of
    ints and Nones (None = decided at run time), or None if even its length is unknown."""
    v = static_value(t)
    if v is not None:
        return tuple(int(d) for d in np.asarray(v).reshape(-1))
    n = t.node
    if n.op == "Shape":
        return n.inputs[0].shape
    if n.op == "Cast":
        return shape_value(n.inputs[0])
    if n.op == "Stack" and n.attrs["axis"] == 0 and all(i.shape == () for i in n.inputs):
        return tuple(scalar_value(i) for i in n.inputs)
    if n.op == "Concat" and n.attrs["axis"] == 0:
        parts = [shape_value(i) for i in n.inputs]
        if all(p is not None for p in parts):
            return tuple(d for p in parts for d in p)
    if t.shape is not None and len(t.shape) == 1 and t.shape[0] is not None:
        return (None,) * t.shape[0]
    return None


def scalar_value(t: Tensor):
    """The int value of scalar tensor `t` if known when building (e.g. a static dim of shape(x)[0])."""
    v = static_value(t)
    if v is not None:
        return int(v) if np.ndim(v) == 0 else None
    n = t.node
    if n.op == "Cast":
        return scalar_value(n.inputs[0])
    if n.op == "Size":
        return _sh.num_elements(n.inputs[0].shape)
    if n.op == "Rank":
        return _sh.rank(n.inputs[0].shape)
    if n.op == "GetItem" and n.inputs[0].node.op == "Shape" and len(n.attrs["index"].items) == 1:
        k = n.attrs["index"].items[0]
        dims = n.inputs[0].node.inputs[0].shape
        if isinstance(k, int) and dims is not None and -len(dims) <= k < len(dims):
            return dims[k]
    return None


def shape_dims(value):
    """Normalised partial dims from shape_value (negative entries are unknown)."""
    return None if value is None else tuple(None if d is None or d < 0 else d for d in value)


def shape_tensor(shape, what: str = "shape") -> Tensor:
    """An int64 1-D tensor for `shape`: a tensor, an int, or a list mixing ints and scalar tensors."""
    if is_tensor_like(shape):
        t = convert(shape)
        if not _dt.is_integer(t.dtype):
            raise TypeError(f"{what} must be an integer tensor, got {t.describe()}, a {t.dtype} tensor")
        if t.shape is not None and len(t.shape) == 0:
            return stack([cast(t, _INT64)])
        if t.shape is not None and len(t.shape) != 1:
            raise ShapeError(f"{what} must be a 1-D tensor, got shape {_sh.format_shape(t.shape)}")
        return cast(t, _INT64)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if isinstance(shape, (list, tuple)):
        if any(is_tensor_like(d) for d in shape):
            parts = []
            for d in shape:
                d = convert(d) if is_tensor_like(d) else constant(np.int64(operator.index(d)))
                if not _dt.is_integer(d.dtype) or (d.shape is not None and d.shape != ()):
                    raise TypeError(f"each entry of {what} must be an int or a scalar integer tensor, "
                                    f"got {d.dtype}{_sh.format_shape(d.shape)}")
                parts.append(cast(d, _INT64))
            return stack(parts)
        return constant(np.asarray([operator.index(d) for d in shape], dtype=np.int64).reshape(-1))
    arr = np.asarray(shape)
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise TypeError(f"{what} must be ints or a 1-D integer tensor, got {shape!r}")
    return constant(arr.astype(np.int64).reshape(-1))


def shape_of(x: Tensor) -> Tensor:
    """x's shape as an int64 tensor: a constant when fully known, else a Shape op."""
    if _sh.is_fully_defined(x.shape):
        return constant(np.asarray(x.shape, dtype=np.int64))
    return shape(x)


# --------------------------------------------------------------------------- shape, size, rank

def _shape_infer(inputs, attrs):
    s = inputs[0].shape
    return [(attrs["out_type"], (None if s is None else len(s),))]


register_op("Shape", _shape_infer, differentiable=False)
register_op("Size", lambda i, a: [(a["out_type"], ())], differentiable=False)
register_op("Rank", lambda i, a: [(_INT64, ())], differentiable=False)


def shape(x, out_type=np.int64, name: str | None = None) -> Tensor:
    """The run-time shape of `x` as a 1-D integer tensor (`t.shape` is the static one)."""
    return make_op("Shape", [convert(x)], {"out_type": _dt.as_dtype(out_type)}, name=name).outputs[0]


def size(x, out_type=np.int64, name: str | None = None) -> Tensor:
    """The number of elements of `x`, as a scalar tensor."""
    return make_op("Size", [convert(x)], {"out_type": _dt.as_dtype(out_type)}, name=name).outputs[0]


def rank(x, name: str | None = None) -> Tensor:
    """The number of dimensions of `x`, as a scalar tensor."""
    return make_op("Rank", [convert(x)], name=name).outputs[0]


__all__ = ["shape", "size", "rank", "shape_of"]
