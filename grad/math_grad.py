"""Gradients of elementwise math, cast and matmul (graph/ops/math.py), and of Identity and Print.

Binary ops broadcast, so each operand's gradient is reduced back to the
operand's shape (`reduce_to_shape`, op SumToShape); when static shapes already
agree nothing is added. A rule computes only the gradients that are needed
(`op.needs(i)`), so forward values only the other operand's gradient would use
are never saved by a loop.
"""
from __future__ import annotations

import numpy as np

from grad.registry import register_gradient
from graph import shapes as _sh
from graph.ops import math as m
from graph.ops.array import concat, expand_dims, reduce_to_shape, reshape, transpose, where
from graph.ops.conversion import constant, static_value
from graph.ops.creation import zeros_like


def unbroadcast(op, i: int, g):
    """`g` (shaped like op's output) summed down to input i's shape, in input i's dtype:
    the adjoints of broadcasting and of type promotion (float32 * float64 -> float64)."""
    x = op.fwd_inputs[i]
    if g is None:
        return None
    if g.dtype != x.dtype:
        g = m.cast(g, x.dtype)
    if _sh.is_fully_defined(x.shape) and g.shape == x.shape:
        return g
    if x.shape is not None and g.shape is not None and x.shape == g.shape and op.fwd_outputs[0].shape == x.shape:
        return g
    return reduce_to_shape(g, op.input_shape(i))


def _zeros(g):
    return zeros_like(g)


def _select(mask, g):
    """g where mask holds, else 0 (broadcast to g's shape): a scalar zero of g's dtype, which where() broadcasts,
    instead of an array of zeros made for it (a relu's gradient made one per step)."""
    return where(mask, g, constant(np.zeros((), g.dtype)))


@register_gradient("Identity")
def _identity_grad(op, g):
    """Identity passes the gradient through."""
    return g


@register_gradient("Print")
def _print_grad(op, g):
    """Print passes its first input through; so does its gradient."""
    return [g] + [None] * (len(op.fwd_inputs) - 1)


@register_gradient("Add")
def _add_grad(op, g):
    """d(x + y) = dx + dy."""
    return [_add_operand_grad(op, 0, g), _add_operand_grad(op, 1, g)]


def _add_operand_grad(op, i, g):
    if not op.needs(i):
        return None
    rows = op.summed_after_loop(i)  # a bias added to every row in a loop: summed after it
    if rows is None:
        return unbroadcast(op, i, g)
    rows.add_row_sum(g, op.fwd_outputs[0].shape)
    return None


@register_gradient("Sub")
def _sub_grad(op, g):
    """d(x - y) = dx - dy."""
    return [unbroadcast(op, 0, g) if op.needs(0) else None,
            unbroadcast(op, 1, m.neg(g)) if op.needs(1) else None]


@register_gradient("Mul")
def _mul_grad(op, g):
    """d(x * y) = y dx + x dy."""
    return [unbroadcast(op, 0, m.mul(g, op.inputs[1])) if op.needs(0) else None,
            unbroadcast(op, 1, m.mul(op.inputs[0], g)) if op.needs(1) else None]


@register_gradient("TrueDiv")
def _div_grad(op, g):
    """d(x / y) = dx / y - x dy / y^2."""
    y = op.inputs[1]
    gx = unbroadcast(op, 0, m.truediv(g, y)) if op.needs(0) else None
    gy = None
    if op.needs(1):
        x = op.inputs[0]
        gy = unbroadcast(op, 1, m.neg(m.truediv(m.mul(g, x), m.mul(y, y))))
    return [gx, gy]


@register_gradient("Mod")
def _mod_grad(op, g):
    """x mod y = x - floor(x / y) y: d = dx - floor(x / y) dy."""
    gy = None
    if op.needs(1):
        gy = unbroadcast(op, 1, m.neg(m.mul(g, m.floordiv(op.inputs[0], op.inputs[1]))))
    return [unbroadcast(op, 0, g) if op.needs(0) else None, gy]


@register_gradient("Pow")
def _pow_grad(op, g):
    """d(x^y) = y x^(y-1) dx + x^y log(x) dy (the dy term is 0 where x <= 0)."""
    x, y = op.inputs[0], op.inputs[1]
    gx = gy = None
    if op.needs(0):
        gx = unbroadcast(op, 0, m.mul(g, m.mul(y, _power_less_one(x, y))))
    if op.needs(1):
        positive = m.greater(x, 0)
        safe_x = where(positive, x, m.add(_zeros(x), 1))
        log_x = where(positive, m.log(safe_x), _zeros(x))
        gy = unbroadcast(op, 1, m.mul(g, m.mul(op.outputs[0], log_x)))
    return [gx, gy]


def _power_less_one(x, y):
    """x ** (y - 1); x itself for a constant y of 2 (a square's gradient, 2 x: x ** 1 is x, bit for bit)."""
    value = static_value(y)
    if value is not None and value.shape == () and value == 2 and x.dtype == np.result_type(x.dtype, value.dtype):
        return x
    return m.pow(x, m.sub(y, 1))


@register_gradient("Maximum")
def _maximum_grad(op, g):
    """The gradient goes to the larger operand (to x on ties)."""
    x, y = op.inputs[0], op.inputs[1]
    mask = m.greater_equal(x, y)
    return [unbroadcast(op, 0, _select(mask, g)) if op.needs(0) else None,
            unbroadcast(op, 1, _select(m.logical_not(mask), g)) if op.needs(1) else None]


@register_gradient("Minimum")
def _minimum_grad(op, g):
    """The gradient goes to the smaller operand (to x on ties)."""
    x, y = op.inputs[0], op.inputs[1]
    mask = m.less_equal(x, y)
    return [unbroadcast(op, 0, _select(mask, g)) if op.needs(0) else None,
            unbroadcast(op, 1, _select(m.logical_not(mask), g)) if op.needs(1) else None]


@register_gradient("Atan2")
def _atan2_grad(op, g):
    """d atan2(a, b) = (b da - a db) / (a^2 + b^2)."""
    a, b = op.inputs[0], op.inputs[1]
    scale = m.truediv(g, m.add(m.square(a), m.square(b)))
    return [unbroadcast(op, 0, m.mul(scale, b)) if op.needs(0) else None,
            unbroadcast(op, 1, m.neg(m.mul(scale, a))) if op.needs(1) else None]


@register_gradient("Neg")
def _neg_grad(op, g):
    """d(-x) = -dx."""
    return m.neg(g)


@register_gradient("Abs")
def _abs_grad(op, g):
    """d|x| = sign(x) dx."""
    return m.mul(g, m.sign(op.inputs[0]))


@register_gradient("Exp")
def _exp_grad(op, g):
    """d exp(x) = exp(x) dx (reuses the output)."""
    return m.mul(g, op.outputs[0])


@register_gradient("Expm1")
def _expm1_grad(op, g):
    """d (exp(x) - 1) = exp(x) dx."""
    return m.mul(g, m.add(op.outputs[0], 1))


@register_gradient("Log")
def _log_grad(op, g):
    """d log(x) = dx / x."""
    return m.truediv(g, op.inputs[0])


@register_gradient("Log1p")
def _log1p_grad(op, g):
    """d log(1 + x) = dx / (1 + x)."""
    return m.truediv(g, m.add(op.inputs[0], 1))


@register_gradient("Sqrt")
def _sqrt_grad(op, g):
    """d sqrt(x) = dx / (2 sqrt(x)) (reuses the output)."""
    return m.truediv(g, m.mul(op.outputs[0], 2))


@register_gradient("Square")
def _square_grad(op, g):
    """d x^2 = 2 x dx."""
    return m.mul(g, m.mul(op.inputs[0], 2))


@register_gradient("Reciprocal")
def _reciprocal_grad(op, g):
    """d (1/x) = -dx / x^2 = -y^2 dx."""
    y = op.outputs[0]
    return m.neg(m.mul(g, m.mul(y, y)))


@register_gradient("Tanh")
def _tanh_grad(op, g):
    """d tanh(x) = (1 - tanh(x)^2) dx (one TanhGrad op on the saved output)."""
    return m.tanh_grad(op.outputs[0], g)


@register_gradient("Sigmoid")
def _sigmoid_grad(op, g):
    """d sigmoid(x) = s (1 - s) dx (one SigmoidGrad op on the saved output)."""
    return m.sigmoid_grad(op.outputs[0], g)


@register_gradient("TanhGrad")
def _tanh_grad_grad(op, g):
    """z = dy (1 - y^2): dz/dy = -2 y dy, dz/d(dy) = 1 - y^2."""
    y, dy = op.inputs[0], op.inputs[1]
    return [unbroadcast(op, 0, m.mul(g, m.mul(m.mul(y, dy), -2))) if op.needs(0) else None,
            unbroadcast(op, 1, m.tanh_grad(y, g)) if op.needs(1) else None]


@register_gradient("SigmoidGrad")
def _sigmoid_grad_grad(op, g):
    """z = dy y (1 - y): dz/dy = dy (1 - 2 y), dz/d(dy) = y (1 - y)."""
    y, dy = op.inputs[0], op.inputs[1]
    return [unbroadcast(op, 0, m.mul(g, m.mul(dy, m.sub(1, m.mul(y, 2))))) if op.needs(0) else None,
            unbroadcast(op, 1, m.sigmoid_grad(y, g)) if op.needs(1) else None]


@register_gradient("Relu")
def _relu_grad(op, g):
    """d relu(x) = dx where x > 0, else 0."""
    return _select(m.greater(op.outputs[0], 0), g)


@register_gradient("Sin")
def _sin_grad(op, g):
    """d sin(x) = cos(x) dx."""
    return m.mul(g, m.cos(op.inputs[0]))


@register_gradient("Cos")
def _cos_grad(op, g):
    """d cos(x) = -sin(x) dx."""
    return m.neg(m.mul(g, m.sin(op.inputs[0])))


@register_gradient("Cast")
def _cast_grad(op, g):
    """Cast's gradient is cast back (none to or from integers and bools)."""
    src = op.fwd_inputs[0].dtype
    if src.kind not in "fc" or g.dtype.kind not in "fc":
        return None
    return m.cast(g, src)


def _swap_last(x):
    nd = x.ndim
    if nd is None:
        raise ValueError(f"the gradient of matmul needs operands of known rank, got {x.name}")
    perm = list(range(nd))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return transpose(x, perm)


@register_gradient("MatMul")
def _matmul_grad(op, g):
    """d(a @ b) = g @ b^T for a and a^T @ g for b (numpy rules: 1-D operands, broadcast batch dims)."""
    a_fwd, b_fwd = op.fwd_inputs
    if a_fwd.ndim == 1 and b_fwd.ndim == 1:
        return [m.mul(g, op.inputs[1]) if op.needs(0) else None,
                m.mul(g, op.inputs[0]) if op.needs(1) else None]
    ga = gb = None
    if a_fwd.ndim == 1:
        g2 = expand_dims(g, -2)  # (..., 1, n)
        if op.needs(0):
            ga = _vector_grad(m.matmul(g2, op.outside(_swap_last, op.inputs[1])), op, 0, row=True)
        if op.needs(1):
            gb = _reduce_to(m.matmul(expand_dims(op.inputs[0], -1), g2), op, 1)
        return [ga, gb]
    if b_fwd.ndim == 1:
        g2 = expand_dims(g, -1)  # (..., m, 1)
        if op.needs(0):
            ga = _reduce_to(m.matmul(g2, expand_dims(op.inputs[1], 0)), op, 0)
        if op.needs(1):
            gb = _vector_grad(m.matmul(op.outside(_swap_last, op.inputs[0]), g2), op, 1, row=False)
        return [ga, gb]
    if op.needs(0):
        ga = _reduce_to(m.matmul(g, op.outside(_swap_last, op.inputs[1])), op, 0)
    if op.needs(1):
        rows = op.summed_after_loop(1)  # a weight in a loop: one matmul of all iterations after it
        if rows is None:
            gb = _reduce_to(m.matmul(op.outside(_swap_last, op.inputs[0]), g), op, 1)
        else:
            rows.add_product(op.fwd_inputs[0], g, op.fwd_outputs[0].shape)
    return [ga, gb]


def _reduce_to(g, op, i):
    """g summed over the batch dims that broadcasting gave it, down to input i's shape."""
    x = op.fwd_inputs[i]
    if g.ndim is not None and g.ndim == x.ndim == 2:
        return g
    if _sh.is_fully_defined(x.shape) and g.shape == x.shape:
        return g
    return reduce_to_shape(g, op.input_shape(i))


def _vector_grad(g2, op, i, row: bool):
    """The gradient of a 1-D matmul operand from g2 of shape (..., 1, k) (row) or (..., k, 1)."""
    if g2.ndim != 2:
        one = constant(np.asarray([1], np.int64))
        s = op.input_shape(i)
        g2 = reduce_to_shape(g2, concat([one, s] if row else [s, one]))
    return reshape(g2, op.input_shape(i))
