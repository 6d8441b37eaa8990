"""Reductions: sum, mean, max, min, prod, argmax, argmin, any, all (axis, keepdims), plus var and std.

Output dtypes are numpy's (np.sum of int32 is int64, np.mean of ints is
float64), found by applying the numpy reduction to a one-element array.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import make_op
from graph.errors import ShapeError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.axes import normalize_axis
from graph.ops.conversion import convert
from graph.ops.math import cast, sqrt, square, sub, truediv
from graph.ops.shape_ops import size

# op name -> numpy function, used for dtype inference (kernels live in exec/kernels/reduce.py)
REDUCTIONS = {"Sum": np.sum, "Mean": np.mean, "Max": np.max, "Min": np.min, "Prod": np.prod,
              "Any": np.any, "All": np.all}
ARG_REDUCTIONS = {"ArgMax": np.argmax, "ArgMin": np.argmin}


@functools.lru_cache(maxsize=None)
def _reduce_dtype(fn, dtype):
    with np.errstate(all="ignore"):
        try:
            return np.asarray(fn(np.ones(1, dtype))).dtype
        except TypeError:
            raise TypeError(f"numpy's {fn.__name__} does not support {dtype}") from None


def _reduce_infer(fn):
    def infer(inputs, attrs):
        x = inputs[0]
        if not _dt.is_numeric(x.dtype):
            raise TypeError(f"cannot reduce a {x.dtype} tensor")
        return [(_reduce_dtype(fn, x.dtype), _sh.reduce_shape(x.shape, attrs["axis"], attrs["keepdims"]))]
    return infer


def _arg_infer(fn):
    def infer(inputs, attrs):
        x, axis, keepdims = inputs[0], attrs["axis"], attrs["keepdims"]
        if not _dt.is_numeric(x.dtype):
            raise TypeError(f"cannot reduce a {x.dtype} tensor")
        if x.shape is None:
            return [(np.dtype(np.int64), None)]
        if axis is None:
            return [(np.dtype(np.int64), (1,) * len(x.shape) if keepdims else ())]
        return [(np.dtype(np.int64), _sh.reduce_shape(x.shape, axis, keepdims))]
    return infer


for _name, _fn in REDUCTIONS.items():
    register_op(_name, _reduce_infer(_fn), differentiable=_name not in ("Any", "All"))
for _name, _fn in ARG_REDUCTIONS.items():
    register_op(_name, _arg_infer(_fn), differentiable=False)


def normalize_axes(axis, shape, what: str = "axis"):
    """`axis` (None, int or sequence) as a sorted tuple of non-negative ints, or None for all axes.

    With an unknown rank, negative axes are kept as given (numpy resolves them at run time).
    """
    if axis is None:
        return None
    axes = tuple(operator.index(a) for a in axis) if isinstance(axis, (tuple, list)) else (operator.index(axis),)
    if shape is None:
        return axes
    axes = tuple(normalize_axis(a, shape, what) for a in axes)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"duplicate value in axis {axis!r}")
    return tuple(sorted(axes))


def _reduction(op):
    def build(x, axis=None, keepdims: bool = False, dtype=None, name: str | None = None) -> Tensor:
        x = convert(x)
        if dtype is not None:
            x = cast(x, dtype)
        axes = normalize_axes(axis, x.shape, f"{op.lower()} axis")
        return make_op(op, [x], {"axis": axes, "keepdims": bool(keepdims)}, name=name).outputs[0]
    build.__name__ = op.lower()
    build.__doc__ = f"`np.{op.lower()}(x, axis, keepdims)`: axis is None (all), an int or a tuple of ints."
    return build


def _arg_reduction(op):
    def build(x, axis=None, keepdims: bool = False, name: str | None = None) -> Tensor:
        x = convert(x)
        if axis is not None:
            axis = operator.index(axis)
            if x.shape is not None:
                axis = normalize_axis(axis, x.shape, f"{op.lower()} axis")
        return make_op(op, [x], {"axis": axis, "keepdims": bool(keepdims)}, name=name).outputs[0]
    build.__name__ = op.lower()
    build.__doc__ = (f"`np.{op.lower()}(x, axis, keepdims)` (int64): with axis=None, the index into the "
                     "flattened tensor.")
    return build


reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod = (
    _reduction("Sum"), _reduction("Mean"), _reduction("Max"), _reduction("Min"), _reduction("Prod"))
reduce_any, reduce_all = _reduction("Any"), _reduction("All")
argmax, argmin = _arg_reduction("ArgMax"), _arg_reduction("ArgMin")


def var(x, axis=None, keepdims: bool = False, ddof: int = 0, name: str | None = None) -> Tensor:
    """`np.var(x, axis, ddof=ddof, keepdims=keepdims)`."""
    x = convert(x)
    if not _dt.is_floating(x.dtype):
        x = cast(x, np.float64)
    centered = square(sub(x, reduce_mean(x, axis, keepdims=True)))
    if not ddof:
        return reduce_mean(centered, axis, keepdims, name=name)
    total = reduce_sum(centered, axis, keepdims)
    # elements per reduced group, known only at run time for dynamic shapes
    count = truediv(cast(size(x), x.dtype), cast(size(total), x.dtype))
    return truediv(total, sub(count, ddof), name=name)


def std(x, axis=None, keepdims: bool = False, ddof: int = 0, name: str | None = None) -> Tensor:
    """`np.std(x, axis, ddof=ddof, keepdims=keepdims)`."""
    return sqrt(var(x, axis, keepdims, ddof), name=name)


# numpy's names; `graph.sum` etc. shadow builtins only for `from graph import *` users
sum, mean, max, min, prod = reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod
any, all = reduce_any, reduce_all
amax, amin = reduce_max, reduce_min

__all__ = ["sum", "mean", "max", "min", "prod", "any", "all", "amax", "amin", "argmax", "argmin", "var", "std",
           "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any", "reduce_all"]
