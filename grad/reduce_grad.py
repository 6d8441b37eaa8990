"""Gradients of reductions (graph/ops/reduce.py) and of softmax / log_softmax (graph/ops/nn.py)."""
from __future__ import annotations

import numpy as np

from grad.registry import register_gradient
from graph.ops import array as a
from graph.ops import creation as c
from graph.ops import math as m
from graph.ops.reduce import reduce_prod, reduce_sum


def _axes(op):
    axis, x = op.attrs["axis"], op.fwd_inputs[0]
    if axis is None:
        if x.ndim is None:
            return None
        return tuple(range(x.ndim))
    return tuple(axis)


def _keep(op, t):
    """`t` (shaped like the reduction's output) with the reduced axes put back as size 1."""
    if op.attrs["keepdims"]:
        return t
    axes = _axes(op)
    if axes is None:  # unknown rank, all axes: a shape of ones of the input's rank
        return a.reshape(t, c.ones_like(op.input_shape(0)))
    return a.expand_dims(t, axes) if axes else t


def _spread(op, g):
    """g broadcast back over the reduced axes, to the input's shape."""
    return a.broadcast_to(_keep(op, g), op.input_shape(0))


@register_gradient("Sum")
def _sum_grad(op, g):
    """Every summed element gets the gradient of the sum (broadcast back)."""
    return _spread(op, g)


@register_gradient("Mean")
def _mean_grad(op, g):
    """The gradient of the sum divided by the count (from shapes only: values are not saved)."""
    x, y = op.fwd_inputs[0], op.fwd_outputs[0]
    if x.shape is not None and None not in x.shape and y.shape is not None and None not in y.shape:
        count = int(np.prod(x.shape, dtype=np.int64)) // max(int(np.prod(y.shape, dtype=np.int64)), 1)
        count = max(count, 1)
        return _spread(op, m.truediv(g, y.dtype.type(count)))
    count = m.truediv(reduce_prod(op.input_shape(0)), m.maximum(reduce_prod(op.output_shape(0)), 1))
    return _spread(op, m.truediv(g, m.cast(count, g.dtype)))


def _extremum_grad(op, g):
    x = op.inputs[0]
    y = _keep(op, op.outputs[0])
    hit = m.cast(m.equal(x, y), g.dtype)
    ties = reduce_sum(hit, axis=_axes(op), keepdims=True)
    return m.mul(m.truediv(_keep(op, g), ties), hit)


@register_gradient("Max")
def _max_grad(op, g):
    """The gradient goes to the elements equal to the max (split evenly between ties)."""
    return _extremum_grad(op, g)


@register_gradient("Min")
def _min_grad(op, g):
    """The gradient goes to the elements equal to the min (split evenly between ties)."""
    return _extremum_grad(op, g)


@register_gradient("Prod")
def _prod_grad(op, g):
    """d prod = prod / x_i, exactly also with zeros: with one zero, the product of the others reaches it."""
    x = op.inputs[0]
    axes = _axes(op)
    is_zero = m.equal(x, 0)
    zeros_in = reduce_sum(m.cast(is_zero, np.int64), axis=axes, keepdims=True)
    others = reduce_prod(a.where(is_zero, c.ones_like(x), x), axis=axes, keepdims=True)
    y = _keep(op, op.outputs[0])
    safe_x = a.where(is_zero, c.ones_like(x), x)
    at_zero = a.where(m.equal(zeros_in, 1), others, c.zeros_like(others))
    local = a.where(is_zero, m.mul(c.ones_like(x), at_zero), m.truediv(y, safe_x))
    return m.mul(_keep(op, g), local)


@register_gradient("Softmax")
def _softmax_grad(op, g):
    """d softmax: (g - sum(g y)) y along the axis."""
    y = op.outputs[0]
    axis = op.attrs["axis"]
    return m.mul(m.sub(g, reduce_sum(m.mul(g, y), axis=axis, keepdims=True)), y)


@register_gradient("LogSoftmax")
def _log_softmax_grad(op, g):
    """d log_softmax: g - softmax(x) sum(g) along the axis."""
    y = op.outputs[0]
    axis = op.attrs["axis"]
    return m.sub(g, m.mul(m.exp(y), reduce_sum(g, axis=axis, keepdims=True)))
