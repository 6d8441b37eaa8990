"""Ops along one axis: cumulative sums and products (`np.cumsum`, `np.cumprod`) and sorting (`np.sort`,
`np.argsort`), with numpy's dtypes; `axis=None` works on the flattened tensor, as in numpy.

`Permute` (take_along_axis with a permutation of each line) is what the gradient of a sort is built
from; `CumprodGrad` is the gradient of a cumulative product, exact where the input holds zeros (the
division TensorFlow's rule makes is not).
"""
from __future__ import annotations

import functools

import numpy as np

from graph import dtypes as _dt
from graph.core import make_op
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.array import reshape
from graph.ops.axes import normalize_axis
from graph.ops.conversion import convert

CUMULATIVE = {"Cumsum": np.cumsum, "Cumprod": np.cumprod}
_SORT_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


@functools.lru_cache(maxsize=None)
def _cumulative_dtype(op: str, dtype, out_dtype) -> np.dtype:
    return CUMULATIVE[op](np.ones(1, dtype), dtype=out_dtype).dtype


def _cumulative_infer(inputs, attrs):
    x = inputs[0]
    if not _dt.is_numeric(x.dtype):
        raise TypeError(f"cannot accumulate a {x.dtype} tensor")
    return [(_cumulative_dtype(attrs["op"], x.dtype, attrs["dtype"]), x.shape)]


def _cumulative_register(op: str) -> None:
    register_op(op, lambda inputs, attrs: _cumulative_infer(inputs, {**attrs, "op": op}))


for _op in CUMULATIVE:
    _cumulative_register(_op)
register_op("CumprodGrad", lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)], differentiable=False)
register_op("Sort", lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
register_op("Argsort", lambda inputs, attrs: [(np.dtype(np.intp), inputs[0].shape)], differentiable=False)
register_op("Permute", lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])


def _along(x, axis, what: str) -> tuple[Tensor, int]:
    """`x` and the axis an op along an axis works on: numpy's `axis=None` flattens `x` first."""
    x = convert(x)
    if axis is None:
        return reshape(x, [-1]), 0
    if x.shape is None:
        return x, axis  # the kernel checks it
    return x, normalize_axis(axis, x.shape, f"{what} axis")


def _cumulative(op: str, x, axis, dtype, reverse: bool, name) -> Tensor:
    x, axis = _along(x, axis, op.lower())
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    return make_op(op, [x], {"axis": axis, "dtype": dtype, "reverse": bool(reverse)}, name=name).outputs[0]


def cumsum(x, axis=None, dtype=None, reverse: bool = False, name: str | None = None) -> Tensor:
    """`np.cumsum(x, axis, dtype)`; `reverse=True` sums from the end of the axis (as TensorFlow's)."""
    return _cumulative("Cumsum", x, axis, dtype, reverse, name)


def cumprod(x, axis=None, dtype=None, reverse: bool = False, name: str | None = None) -> Tensor:
    """`np.cumprod(x, axis, dtype)`; `reverse=True` multiplies from the end of the axis."""
    return _cumulative("Cumprod", x, axis, dtype, reverse, name)


def cumprod_grad(x, g, axis: int, reverse: bool) -> Tensor:
    """The gradient of `cumprod(x, axis, reverse=reverse)` for output gradient `g` (both of `g`'s dtype)."""
    return make_op("CumprodGrad", [x, g], {"axis": axis, "reverse": bool(reverse)}).outputs[0]


def _sort_args(x, axis, kind, what: str):
    if kind not in _SORT_KINDS:
        raise ValueError(f"{what}: kind must be one of {', '.join(map(repr, _SORT_KINDS))}, got {kind!r}")
    x, axis = _along(x, axis, what)
    if not _dt.is_numeric(x.dtype):
        raise TypeError(f"{what}: cannot sort a {x.dtype} tensor")
    return x, {"axis": axis, "kind": kind}


def sort(x, axis=-1, kind=None, name: str | None = None) -> Tensor:
    """`np.sort(x, axis, kind)`: the values of each line along `axis` in ascending order (NaN last)."""
    x, attrs = _sort_args(x, axis, kind, "np.sort")
    return make_op("Sort", [x], attrs, name=name).outputs[0]


def argsort(x, axis=-1, kind=None, name: str | None = None) -> Tensor:
    """`np.argsort(x, axis, kind)`: the indices that sort each line along `axis`."""
    x, attrs = _sort_args(x, axis, kind, "np.argsort")
    return make_op("Argsort", [x], attrs, name=name).outputs[0]


def permute(x, perm, axis: int, name: str | None = None) -> Tensor:
    """`np.take_along_axis(x, perm, axis)` where each line of `perm` is a permutation of its axis."""
    return make_op("Permute", [convert(x), convert(perm)], {"axis": axis}, name=name).outputs[0]


__all__ = ["cumsum", "cumprod", "sort", "argsort"]
