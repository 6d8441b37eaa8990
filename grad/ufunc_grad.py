"""Gradients of numpy's other elementwise functions (graph/ops/ufuncs.py): log2, log10, exp2, the hyperbolic and
inverse trigonometric functions, cbrt, deg2rad / rad2deg, fabs; hypot, fmod, logaddexp(2), fmax / fmin,
copysign, float_power and ldexp. Binary rules reduce each operand's gradient to its shape (`unbroadcast`).
The steps and integer functions (isinf, signbit, trunc, heaviside, gcd, lcm, shifts) have none."""
from __future__ import annotations

import math

from grad.math_grad import unbroadcast
from grad.registry import register_gradient
from graph.ops import math as m
from graph.ops import ufuncs as u
from graph.ops.array import where
from graph.ops.creation import ones_like, zeros_like

_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _builder(op):
    return u.BUILDERS[op]


@register_gradient("Log2")
def _log2_grad(op, g):
    """d log2(x) = dx / (x ln 2)."""
    return m.truediv(g, m.mul(op.inputs[0], _LN2))


@register_gradient("Log10")
def _log10_grad(op, g):
    """d log10(x) = dx / (x ln 10)."""
    return m.truediv(g, m.mul(op.inputs[0], _LN10))


@register_gradient("Exp2")
def _exp2_grad(op, g):
    """d 2^x = 2^x ln 2 dx (reuses the output)."""
    return m.mul(g, m.mul(op.outputs[0], _LN2))


@register_gradient("Sinh")
def _sinh_grad(op, g):
    """d sinh(x) = cosh(x) dx."""
    return m.mul(g, _builder("Cosh")(op.inputs[0]))


@register_gradient("Cosh")
def _cosh_grad(op, g):
    """d cosh(x) = sinh(x) dx."""
    return m.mul(g, _builder("Sinh")(op.inputs[0]))


@register_gradient("Tan")
def _tan_grad(op, g):
    """d tan(x) = (1 + tan(x)^2) dx (reuses the output)."""
    return m.mul(g, m.add(m.square(op.outputs[0]), 1))


def _over_sqrt(g, x, one_minus: bool):
    """g / sqrt(1 - x^2), or g / sqrt(x^2 + 1)."""
    s = m.sub(1, m.square(x)) if one_minus else m.add(m.square(x), 1)
    return m.truediv(g, m.sqrt(s))


@register_gradient("Arcsin")
def _arcsin_grad(op, g):
    """d arcsin(x) = dx / sqrt(1 - x^2)."""
    return _over_sqrt(g, op.inputs[0], one_minus=True)


@register_gradient("Arccos")
def _arccos_grad(op, g):
    """d arccos(x) = -dx / sqrt(1 - x^2)."""
    return m.neg(_over_sqrt(g, op.inputs[0], one_minus=True))


@register_gradient("Arctan")
def _arctan_grad(op, g):
    """d arctan(x) = dx / (1 + x^2)."""
    return m.truediv(g, m.add(m.square(op.inputs[0]), 1))


@register_gradient("Arcsinh")
def _arcsinh_grad(op, g):
    """d arcsinh(x) = dx / sqrt(x^2 + 1)."""
    return _over_sqrt(g, op.inputs[0], one_minus=False)


@register_gradient("Arccosh")
def _arccosh_grad(op, g):
    """d arccosh(x) = dx / sqrt(x^2 - 1)."""
    return m.truediv(g, m.sqrt(m.sub(m.square(op.inputs[0]), 1)))


@register_gradient("Arctanh")
def _arctanh_grad(op, g):
    """d arctanh(x) = dx / (1 - x^2)."""
    return m.truediv(g, m.sub(1, m.square(op.inputs[0])))


@register_gradient("Cbrt")
def _cbrt_grad(op, g):
    """d x^(1/3) = dx / (3 cbrt(x)^2) (reuses the output)."""
    return m.truediv(g, m.mul(m.square(op.outputs[0]), 3))


@register_gradient("Deg2Rad")
def _deg2rad_grad(op, g):
    """A scaling by pi / 180."""
    return m.mul(g, math.pi / 180.0)


@register_gradient("Rad2Deg")
def _rad2deg_grad(op, g):
    """A scaling by 180 / pi."""
    return m.mul(g, 180.0 / math.pi)


@register_gradient("Fabs")
def _fabs_grad(op, g):
    """d |x| = sign(x) dx."""
    return m.mul(g, m.sign(op.inputs[0]))


@register_gradient("Hypot")
def _hypot_grad(op, g):
    """d sqrt(x^2 + y^2) = (x dx + y dy) / h (reuses the output h)."""
    scale = m.truediv(g, op.outputs[0])
    return [unbroadcast(op, 0, m.mul(scale, op.inputs[0])) if op.needs(0) else None,
            unbroadcast(op, 1, m.mul(scale, op.inputs[1])) if op.needs(1) else None]


@register_gradient("Fmod")
def _fmod_grad(op, g):
    """fmod(x, y) = x - trunc(x / y) y: d = dx - trunc(x / y) dy."""
    gy = None
    if op.needs(1):
        gy = unbroadcast(op, 1, m.neg(m.mul(g, _builder("Trunc")(m.truediv(op.inputs[0], op.inputs[1])))))
    return [unbroadcast(op, 0, g) if op.needs(0) else None, gy]


def _logaddexp_weight(x, y, z, exp):
    """e^(x - z), the weight of x in z = log(e^x + e^y); where x and z are the same infinity (x - z is NaN), its
    limit: 1/2 where y is that infinity too (the weights of equal operands), else 1 (x = +inf > y). So a sum
    of probabilities in log space started at -inf (a CTC or HMM forward recursion, log(0) for an unreachable
    state) passes no NaN back from the states that stay at -inf: their gradient is 0 * 1/2."""
    same_infinity = m.logical_and(u.BUILDERS["IsInf"](x), m.equal(x, z))
    zero = zeros_like(z)
    w = exp(m.sub(where(same_infinity, zero, x), where(same_infinity, zero, z)))  # (no inf - inf computed)
    return where(same_infinity, where(m.equal(x, y), m.mul(ones_like(w), 0.5), ones_like(w)), w)


def _logaddexp_grads(op, g, exp):
    """z = log(e^x + e^y): dz = e^(x - z) dx + e^(y - z) dy (base 2 for logaddexp2: exp is exp2)."""
    x, y, z = op.inputs[0], op.inputs[1], op.outputs[0]
    return [unbroadcast(op, 0, m.mul(g, _logaddexp_weight(x, y, z, exp))) if op.needs(0) else None,
            unbroadcast(op, 1, m.mul(g, _logaddexp_weight(y, x, z, exp))) if op.needs(1) else None]


@register_gradient("Logaddexp")
def _logaddexp_grad(op, g):
    """The softmax weights of x and y."""
    return _logaddexp_grads(op, g, m.exp)


@register_gradient("Logaddexp2")
def _logaddexp2_grad(op, g):
    """The base-2 softmax weights of x and y."""
    return _logaddexp_grads(op, g, _builder("Exp2"))


def _select(mask, g):
    return where(mask, g, zeros_like(g))


def _nan_ignoring_grads(op, g, compare):
    """fmax / fmin: the gradient goes to the operand chosen: x where compare(x, y) holds or y is NaN."""
    x, y = op.inputs[0], op.inputs[1]
    to_x = m.logical_or(compare(x, y), m.isnan(y))
    return [unbroadcast(op, 0, _select(to_x, g)) if op.needs(0) else None,
            unbroadcast(op, 1, _select(m.logical_not(to_x), g)) if op.needs(1) else None]


@register_gradient("Fmax")
def _fmax_grad(op, g):
    """As maximum's (to x on ties), NaNs ignored."""
    return _nan_ignoring_grads(op, g, m.greater_equal)


@register_gradient("Fmin")
def _fmin_grad(op, g):
    """As minimum's (to x on ties), NaNs ignored."""
    return _nan_ignoring_grads(op, g, m.less_equal)


@register_gradient("Copysign")
def _copysign_grad(op, g):
    """copysign(x, y) = +-x: dx keeps its sign where x and y have the same sign bit, else flips; no dy."""
    x, y = op.inputs[0], op.inputs[1]
    same = m.equal(_builder("SignBit")(x), _builder("SignBit")(y))
    gx = where(same, g, m.neg(g)) if op.needs(0) else None
    return [unbroadcast(op, 0, gx) if gx is not None else None, None]


@register_gradient("FloatPower")
def _float_power_grad(op, g):
    """As power's, in float64: d x^y = y x^(y-1) dx + x^y log(x) dy (the dy term 0 where x <= 0)."""
    x, y = op.inputs[0], op.inputs[1]
    power = _builder("FloatPower")
    gx = gy = None
    if op.needs(0):
        gx = unbroadcast(op, 0, m.mul(g, m.mul(y, power(x, m.sub(y, 1)))))
    if op.needs(1):
        positive = m.greater(x, 0)
        log_x = where(positive, m.log(where(positive, x, ones_like(x))), zeros_like(x))
        gy = unbroadcast(op, 1, m.mul(g, m.mul(op.outputs[0], log_x)))
    return [gx, gy]


@register_gradient("Ldexp")
def _ldexp_grad(op, g):
    """x 2^n: d = 2^n dx (an exact scaling: ldexp of the gradient); n is an integer."""
    return [unbroadcast(op, 0, _builder("Ldexp")(g, op.inputs[1])) if op.needs(0) else None, None]
