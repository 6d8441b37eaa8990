"""Neural-network helpers: softmax and log_softmax ops, and small compositions of other ops.

Compositions (logsumexp, clip, softplus, cross entropies) need no kernels or
gradient rules of their own: they differentiate through the ops they are made of.
"""
from __future__ import annotations

import numpy as np

from graph import dtypes as _dt
from graph.core import make_op
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.array import reshape, squeeze
from graph.ops.axes import normalize_axis
from graph.ops.basic import stop_gradient
from graph.ops.conversion import convert
from graph.ops.creation import one_hot
from graph.ops.math import abs as _abs
from graph.ops.math import add, cast, exp, log, log1p, maximum, minimum, mul, neg, relu, square, sub
from graph.ops.reduce import reduce_max, reduce_sum
from graph.ops.shape_ops import shape


def _float(x) -> Tensor:
    x = convert(x)
    if not _dt.is_floating(x.dtype):
        x = cast(x, np.float64)
    return x


def _softmax_infer(inputs, attrs):
    x = inputs[0]
    if not _dt.is_floating(x.dtype):
        raise TypeError(f"needs a floating-point tensor, got {x.dtype}")
    return [(x.dtype, x.shape)]


register_op("Softmax", _softmax_infer)
register_op("LogSoftmax", _softmax_infer)


def _axis_of(x: Tensor, axis: int) -> int:
    if x.shape is None:
        return axis
    return normalize_axis(axis, x.shape, "softmax axis")


def softmax(x, axis: int = -1, name: str | None = None) -> Tensor:
    """`exp(x) / sum(exp(x), axis)`, computed without overflow."""
    x = _float(x)
    return make_op("Softmax", [x], {"axis": _axis_of(x, axis)}, name=name).outputs[0]


def log_softmax(x, axis: int = -1, name: str | None = None) -> Tensor:
    """`x - logsumexp(x, axis)`, computed without overflow."""
    x = _float(x)
    return make_op("LogSoftmax", [x], {"axis": _axis_of(x, axis)}, name=name).outputs[0]


def logsumexp(x, axis=None, keepdims: bool = False, name: str | None = None) -> Tensor:
    """`log(sum(exp(x), axis))` without overflow (scipy.special.logsumexp)."""
    x = _float(x)
    # the shift cancels mathematically, so its gradient is not needed
    m = stop_gradient(reduce_max(x, axis, keepdims=True))
    total = reduce_sum(exp(sub(x, m)), axis, keepdims=keepdims)
    if not keepdims:
        m = reshape(m, []) if axis is None else squeeze(m, axis)
    return add(log(total), m, name=name)


def clip(x, min=None, max=None, name: str | None = None) -> Tensor:
    """`np.clip(x, min, max)`; either bound may be None."""
    if min is None and max is None:
        raise ValueError("clip needs at least one of min and max")
    out = convert(x)
    if min is not None:
        out = maximum(out, min)
    if max is not None:
        out = minimum(out, max, name=name)
    return out


clip_by_value = clip


def softplus(x, name: str | None = None) -> Tensor:
    """`log(1 + exp(x))`, stable for large |x|."""
    x = _float(x)
    return add(relu(x), log1p(exp(neg(_abs(x)))), name=name)


def l2_loss(x, name: str | None = None) -> Tensor:
    """`sum(x ** 2) / 2`."""
    x = _float(x)
    return mul(reduce_sum(square(x)), x.dtype.type(0.5), name=name)


def softmax_cross_entropy(labels, logits, axis: int = -1, name: str | None = None) -> Tensor:
    """`-sum(labels * log_softmax(logits), axis)`: cross entropy against a distribution per row."""
    logits = _float(logits)
    return neg(reduce_sum(mul(labels, log_softmax(logits, axis)), axis), name=name)


def sparse_softmax_cross_entropy(labels, logits, name: str | None = None) -> Tensor:
    """`-log_softmax(logits)[..., labels]`: cross entropy against integer class labels (last axis)."""
    logits = _float(logits)
    depth = logits.shape[-1] if logits.shape is not None and logits.shape[-1] is not None else None
    if depth is None:
        depth = shape(logits)[-1]
    mask = one_hot(labels, depth, dtype=logits.dtype)
    return neg(reduce_sum(mul(mask, log_softmax(logits)), -1), name=name)


__all__ = ["softmax", "log_softmax", "logsumexp", "clip", "clip_by_value", "softplus", "l2_loss",
           "softmax_cross_entropy", "sparse_softmax_cross_entropy"]
