"""Elementwise math, comparisons, logical ops, cast and matmul.

Output dtypes are numpy's: inference applies the numpy ufunc to empty arrays of
the input dtypes, so the graph agrees with numpy by construction.
"""
from __future__ import annotations

import functools

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import make_op
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.conversion import convert, convert_pair

# op name -> numpy ufunc used for dtype inference (kernels live in exec/kernels).
BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "TrueDiv": np.true_divide,
    "FloorDiv": np.floor_divide, "Mod": np.remainder, "Pow": np.power,
    "Maximum": np.maximum, "Minimum": np.minimum, "Atan2": np.arctan2,
    "Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less, "LessEqual": np.less_equal,
    "Greater": np.greater, "GreaterEqual": np.greater_equal,
    "LogicalAnd": np.logical_and, "LogicalOr": np.logical_or, "LogicalXor": np.logical_xor,
    "BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor,
}
UNARY = {
    "Neg": np.negative, "Abs": np.absolute, "Exp": np.exp, "Log": np.log, "Sqrt": np.sqrt,
    "Square": np.square, "Tanh": np.tanh, "Sigmoid": np.exp, "Relu": np.positive,
    "Sign": np.sign, "Floor": np.floor, "Ceil": np.ceil, "Round": np.rint, "Sin": np.sin,
    "Cos": np.cos, "Log1p": np.log1p, "Expm1": np.expm1, "Reciprocal": np.reciprocal,
    "LogicalNot": np.logical_not, "Invert": np.invert, "IsNan": np.isnan, "IsFinite": np.isfinite,
}
COMPARISONS = {"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"}
NON_DIFFERENTIABLE = COMPARISONS | {"LogicalAnd", "LogicalOr", "LogicalXor", "LogicalNot", "Invert",
                                    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "IsNan", "IsFinite",
                                    "Sign", "Floor", "Ceil", "Round", "FloorDiv"}


@functools.lru_cache(maxsize=None)
def _ufunc_dtype(ufunc, *dtypes):
    try:
        return ufunc(*(np.empty(0, d) for d in dtypes)).dtype
    except TypeError:
        names = ", ".join(str(d) for d in dtypes)
        raise TypeError(f"numpy's {ufunc.__name__} does not support ({names})") from None


def _binary_infer(ufunc):
    def infer(inputs, attrs):
        a, b = inputs
        return [(_ufunc_dtype(ufunc, a.dtype, b.dtype), _sh.broadcast(a.shape, b.shape))]
    return infer


def _unary_infer(ufunc):
    def infer(inputs, attrs):
        x = inputs[0]
        if x.dtype is _dt.variant:
            raise TypeError("not a numeric tensor")
        return [(_ufunc_dtype(ufunc, x.dtype), x.shape)]
    return infer


def _float_result_infer(inputs, attrs):
    """Sigmoid and Reciprocal keep float dtypes and compute integers and bools in float64
    (their kernels divide: np.reciprocal's integer truncation is not what they mean)."""
    x = inputs[0]
    if x.dtype is _dt.variant:
        raise TypeError("not a numeric tensor")
    return [(np.dtype(np.float64) if x.dtype.kind in "iub" else x.dtype, x.shape)]


for _name, _uf in BINARY.items():
    register_op(_name, _binary_infer(_uf), differentiable=_name not in NON_DIFFERENTIABLE)
for _name, _uf in UNARY.items():
    infer = _float_result_infer if _name in ("Sigmoid", "Reciprocal") else _unary_infer(_uf)
    register_op(_name, infer, differentiable=_name not in NON_DIFFERENTIABLE)


def _binary(op):
    def build(x, y, name: str | None = None) -> Tensor:
        a, b = convert_pair(x, y)
        return make_op(op, [a, b], name=name).outputs[0]
    build.__name__ = op
    build.__doc__ = f"Elementwise {op} with numpy broadcasting and dtype rules."
    return build


def _unary(op):
    def build(x, name: str | None = None) -> Tensor:
        return make_op(op, [convert(x)], name=name).outputs[0]
    build.__name__ = op
    build.__doc__ = f"Elementwise {op}."
    return build


add, sub, mul, truediv = _binary("Add"), _binary("Sub"), _binary("Mul"), _binary("TrueDiv")
floordiv, mod, pow, atan2 = _binary("FloorDiv"), _binary("Mod"), _binary("Pow"), _binary("Atan2")
maximum, minimum = _binary("Maximum"), _binary("Minimum")
equal, not_equal = _binary("Equal"), _binary("NotEqual")
less, less_equal, greater, greater_equal = (_binary("Less"), _binary("LessEqual"),
                                            _binary("Greater"), _binary("GreaterEqual"))
logical_and, logical_or, logical_xor = _binary("LogicalAnd"), _binary("LogicalOr"), _binary("LogicalXor")
bitwise_and, bitwise_or, bitwise_xor = _binary("BitwiseAnd"), _binary("BitwiseOr"), _binary("BitwiseXor")
neg, abs, exp, log, sqrt = _unary("Neg"), _unary("Abs"), _unary("Exp"), _unary("Log"), _unary("Sqrt")
square, tanh, sigmoid, relu = _unary("Square"), _unary("Tanh"), _unary("Sigmoid"), _unary("Relu")
sign, floor, ceil, round = _unary("Sign"), _unary("Floor"), _unary("Ceil"), _unary("Round")
sin, cos, log1p, expm1 = _unary("Sin"), _unary("Cos"), _unary("Log1p"), _unary("Expm1")
reciprocal, logical_not, invert = _unary("Reciprocal"), _unary("LogicalNot"), _unary("Invert")
isnan, isfinite = _unary("IsNan"), _unary("IsFinite")


# --------------------------------------------------------------------------- activation gradients

# The backward steps of tanh and sigmoid from their outputs y and the incoming gradient dy, as
# single ops (TF's TanhGrad/SigmoidGrad): one node and one output buffer instead of three of each,
# which matters in gradient loops, where they run once per iteration per gate.
register_op("TanhGrad", _binary_infer(np.multiply))
register_op("SigmoidGrad", _binary_infer(np.multiply))


def tanh_grad(y, dy, name: str | None = None) -> Tensor:
    """`dy * (1 - y * y)`: the gradient of tanh through its output `y = tanh(x)`."""
    a, b = convert_pair(y, dy)
    return make_op("TanhGrad", [a, b], name=name).outputs[0]


def sigmoid_grad(y, dy, name: str | None = None) -> Tensor:
    """`dy * y * (1 - y)`: the gradient of sigmoid through its output `y = sigmoid(x)`."""
    a, b = convert_pair(y, dy)
    return make_op("SigmoidGrad", [a, b], name=name).outputs[0]


# --------------------------------------------------------------------------- cast

register_op("Cast", lambda i, a: [(a["dtype"], i[0].shape)])


def cast(x, dtype, name: str | None = None) -> Tensor:
    """`x.astype(dtype)`; a no-op when the dtype already matches."""
    x = convert(x)
    dtype = _dt.as_dtype(dtype)
    if x.dtype == dtype:
        return x
    return make_op("Cast", [x], {"dtype": dtype}, name=name).outputs[0]


# --------------------------------------------------------------------------- matmul

def _matmul_infer(inputs, attrs):
    a, b = inputs
    dtype = _ufunc_dtype(np.matmul, a.dtype, b.dtype)
    if a.shape is None or b.shape is None:
        return [(dtype, None)]
    if len(a.shape) == 0 or len(b.shape) == 0:
        raise ValueError("matmul does not accept scalars (use *)")
    sa, sb = list(a.shape), list(b.shape)
    a_vec, b_vec = len(sa) == 1, len(sb) == 1
    if a_vec:
        sa = [1] + sa
    if b_vec:
        sb = sb + [1]
    k1, k2 = sa[-1], sb[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ValueError(f"matmul inner dimensions differ: {_sh.format_shape(a.shape)} @ "
                         f"{_sh.format_shape(b.shape)} ({k1} != {k2})")
    batch = _sh.broadcast(tuple(sa[:-2]), tuple(sb[:-2]))
    out = list(batch) + ([] if a_vec else [sa[-2]]) + ([] if b_vec else [sb[-1]])
    return [(dtype, tuple(out))]


register_op("MatMul", _matmul_infer)


def matmul(a, b, name: str | None = None) -> Tensor:
    """`a @ b` with numpy's rules (1-D operands, broadcast batch dims)."""
    a, b = convert_pair(a, b)
    return make_op("MatMul", [a, b], name=name).outputs[0]

# the op builders (a star import must not pass on `convert`: graph.convert is the public one)
__all__ = ["infer", "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "atan2", "maximum", "minimum",
           "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
           "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "neg", "abs", "exp",
           "log", "sqrt", "square", "tanh", "sigmoid", "relu", "sign", "floor", "ceil", "round", "sin",
           "cos", "log1p", "expm1", "reciprocal", "logical_not", "invert", "isnan", "isfinite", "tanh_grad",
           "sigmoid_grad", "cast", "matmul"]
