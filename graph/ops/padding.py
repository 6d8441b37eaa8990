"""`np.pad` on tensors: modes "constant", "edge", "reflect", "symmetric" and "wrap", with numpy's
pad-width forms. The widths are fixed when the graph is built; a constant fill may be a tensor.

Every supported mode takes each output element from one input element (or from the fill): the
gradient sums each output's gradient into the input element it came from (`PadGrad`), and that op's
own gradient is the pad again (with a zero fill): second order works.
"""
from __future__ import annotations

import operator

import numpy as np

from graph import dtypes as _dt
from graph.core import make_op
from graph.errors import ShapeError, UnsupportedError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.conversion import convert, is_tensor_like
from graph.ops.math import cast

MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _pad_infer(inputs, attrs):
    x, widths = inputs[0], attrs["pad_width"]
    if x.shape is None:
        return [(x.dtype, (None,) * len(widths))]
    return [(x.dtype, tuple(None if d is None else d + lo + hi for d, (lo, hi) in zip(x.shape, widths, strict=True)))]


def _pad_grad_infer(inputs, attrs):
    g, widths = inputs[0], attrs["pad_width"]
    if g.shape is None:
        return [(g.dtype, (None,) * len(widths))]
    return [(g.dtype, tuple(None if d is None else d - lo - hi for d, (lo, hi) in zip(g.shape, widths, strict=True)))]


register_op("Pad", _pad_infer)
# PadGrad(g, x_shape): the gradient of a Pad of an input of shape x_shape (the shape matters for reflections)
register_op("PadGrad", _pad_grad_infer)


def pad_widths(pad_width, ndim: int) -> tuple[tuple[int, int], ...]:
    """numpy's pad-width forms (`n`, `(before, after)`, one pair per axis) as one (before, after) per axis."""
    if is_tensor_like(pad_width) or (isinstance(pad_width, (list, tuple)) and any(map(_holds_tensor, pad_width))):
        raise UnsupportedError("np.pad on graph tensors needs pad widths known when the graph is built (Python "
                               "ints), not graph tensors")
    arr = np.asarray(pad_width)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"np.pad: pad widths must be integers, got {pad_width!r}")
    try:
        pairs = np.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise ShapeError(f"np.pad: pad widths {pad_width!r} do not fit a tensor of rank {ndim}: give one int, one "
                         f"(before, after) pair or {ndim} pairs") from None
    if (pairs < 0).any():
        raise ValueError(f"np.pad: pad widths cannot be negative, got {pad_width!r}")
    return tuple((operator.index(lo), operator.index(hi)) for lo, hi in pairs.tolist())


def _holds_tensor(v) -> bool:
    return is_tensor_like(v) or (isinstance(v, (list, tuple)) and any(map(_holds_tensor, v)))


def pad(x, pad_width, mode: str = "constant", constant_values=0, name: str | None = None) -> Tensor:
    """`np.pad(x, pad_width, mode, constant_values=...)` for the modes in MODES; a tensor fill must be
    a scalar (numpy's per-axis fills are taken as values known when the graph is built)."""
    x = convert(x)
    if mode not in MODES:
        raise UnsupportedError(f"np.pad(mode={mode!r}) is not supported on graph tensors; supported modes: "
                               f"{', '.join(map(repr, MODES))}")
    if x.shape is None:
        raise UnsupportedError("np.pad on graph tensors needs a tensor of known rank")
    widths = pad_widths(pad_width, len(x.shape))
    inputs = [x]
    if mode == "constant":
        inputs.append(_fill(constant_values, x))
    else:
        _check_nonempty(x, widths, mode)
    return make_op("Pad", inputs, {"pad_width": widths, "mode": mode}, name=name).outputs[0]


def _fill(constant_values, x: Tensor) -> Tensor:
    """The fill as a tensor of x's dtype (numpy casts it): a scalar, or numpy's per-axis pairs."""
    if is_tensor_like(constant_values):
        c = convert(constant_values)
        if c.shape != ():
            raise UnsupportedError(f"np.pad: a graph tensor constant_values must be a scalar, got {c.describe()}; "
                                   "per-axis fills must be known when the graph is built")
        return c if c.dtype == x.dtype else cast(c, x.dtype)
    arr = np.asarray(constant_values)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"np.pad: constant_values must be numbers, got {constant_values!r}")
    with np.errstate(all="ignore"):
        return convert(arr.astype(x.dtype) if _dt.is_numeric(x.dtype) else arr)


def _check_nonempty(x: Tensor, widths, mode: str) -> None:
    for axis, (d, (lo, hi)) in enumerate(zip(x.shape, widths, strict=True)):
        if d == 0 and lo + hi > 0:
            raise ValueError(f"np.pad(mode={mode!r}): cannot pad axis {axis} of a tensor of shape {x.shape}: it is "
                             "empty")


def pad_grad(g, x_shape, pad_width, mode: str) -> Tensor:
    """The gradient of `pad(x, pad_width, mode)` with respect to x, for output gradient `g`."""
    return make_op("PadGrad", [convert(g), convert(x_shape)], {"pad_width": tuple(pad_width), "mode": mode}).outputs[0]


__all__ = ["pad"]
