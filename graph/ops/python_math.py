"""Python's math functions of graph scalars: `math.exp(t)`, `math.log(t, 2)`, `math.floor(t)`, `math.hypot(t, u)`...

A math function converts its argument with float(), which a graph tensor cannot give (its value exists only
when the graph runs). These build numpy's function of the scalar in float64, the Python float math computes
with, and give what math gives: a float, an int (floor, ceil, trunc) or a bool (isnan, isinf, isfinite,
isclose). Converted code (transpile) calls them through `constructor_call`; `RESULT_TYPES` says which Python
number each result stands for. One difference is left: a value outside a function's domain gives NaN, as
numpy's functions give, where math raises ValueError.
"""
from __future__ import annotations

import math

import numpy as np

from graph.core import make_op
from graph.errors import ShapeError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops import array as A
from graph.ops import math as M
from graph.ops import ufuncs as U
from graph.ops.conversion import convert, is_tensor_like

_UNARY = {
    math.exp: M.exp, math.expm1: M.expm1, math.log1p: M.log1p, math.log2: U.BUILDERS["Log2"],
    math.log10: U.BUILDERS["Log10"], math.sqrt: M.sqrt, math.sin: M.sin, math.cos: M.cos, math.tan: U.BUILDERS["Tan"],
    math.asin: U.BUILDERS["Arcsin"], math.acos: U.BUILDERS["Arccos"], math.atan: U.BUILDERS["Arctan"],
    math.sinh: U.BUILDERS["Sinh"], math.cosh: U.BUILDERS["Cosh"], math.tanh: M.tanh,
    math.asinh: U.BUILDERS["Arcsinh"], math.acosh: U.BUILDERS["Arccosh"], math.atanh: U.BUILDERS["Arctanh"],
    math.fabs: U.BUILDERS["Fabs"], math.degrees: U.BUILDERS["Rad2Deg"], math.radians: U.BUILDERS["Deg2Rad"],
}
for _name, _op in (("exp2", "Exp2"), ("cbrt", "Cbrt")):  # Python 3.11's
    if hasattr(math, _name):
        _UNARY[getattr(math, _name)] = U.BUILDERS[_op]
_BINARY = {math.atan2: M.atan2, math.hypot: U.BUILDERS["Hypot"], math.copysign: U.BUILDERS["Copysign"],
           math.fmod: U.BUILDERS["Fmod"], math.pow: M.pow}
_TO_INT = {math.floor: M.floor, math.ceil: M.ceil, math.trunc: U.BUILDERS["Trunc"]}
_TESTS = {math.isnan: M.isnan, math.isinf: U.BUILDERS["IsInf"], math.isfinite: M.isfinite}

RESULT_TYPES = {f: float for f in (*_UNARY, *_BINARY, math.log)} | {f: int for f in _TO_INT} \
    | {f: bool for f in (*_TESTS, math.isclose)}


def _scalar(x, name: str):
    """x as math takes it: a float64 scalar (a tensor of one element, as float() takes one)."""
    if not is_tensor_like(x):
        return convert(np.float64(x))
    t = convert(x)
    if t.shape is not None and any(d is not None and d != 1 for d in t.shape):
        raise ShapeError(f"math.{name}() of {t.describe()}, a graph tensor of shape {list(t.shape)}: math takes "
                         f"one number (as float() does); use np.{name} for arrays")
    if t.shape != ():
        t = A.reshape(t, [])
    return M.cast(t, np.float64)


def math_call(func, args, kwargs):
    """`func(*args, **kwargs)` for a math function given a graph tensor, as graph ops; NotImplemented otherwise."""
    if func not in RESULT_TYPES or not any(is_tensor_like(a) for a in (*args, *kwargs.values())):
        return NotImplemented
    name = func.__name__
    if func is math.log:
        return _log(*args, **kwargs)
    if func is math.isclose:
        return _isclose(*args, **kwargs)
    xs = [_scalar(a, name) for a in args]
    if func in _TO_INT:
        return M.cast(_TO_INT[func](*xs), np.int64)
    table = _TESTS if func in _TESTS else _BINARY if func in _BINARY else _UNARY
    return table[func](*xs)


def _log(x, base=math.e):
    """math.log(x, base): log(x) / log(base), as Python computes it."""
    num = M.log(_scalar(x, "log"))
    return num if base is math.e else M.truediv(num, M.log(_scalar(base, "log")))


def _isclose(a, b, *, rel_tol=1e-09, abs_tol=0.0):
    """math.isclose: |a - b| <= max(rel_tol * max(|a|, |b|), abs_tol), or a == b (infinities)."""
    a, b = _scalar(a, "isclose"), _scalar(b, "isclose")
    diff = M.abs(M.sub(a, b))
    bound = M.maximum(M.mul(rel_tol, M.maximum(M.abs(a), M.abs(b))), abs_tol)
    return M.logical_or(M.equal(a, b), M.logical_and(M.less_equal(diff, bound), M.isfinite(diff)))


# --------------------------------------------------------------------------- round(x, n) of a Python float

# Python rounds a float to n decimals correctly (round(1.85, 1) is 1.9: 1.85 is a little above 1.85 in binary);
# numpy scales, rounds and scales back (np.round(1.85, 1) is 1.8). A graph scalar standing for a Python float
# rounds as Python does: its kernel is Python's round.
register_op("PythonRound", lambda inputs, attrs: [(np.dtype(np.float64), ())], differentiable=False)


def python_round(x, ndigits: int) -> Tensor:
    """`round(x, ndigits)` of a graph scalar that stands for a Python float, as Python rounds it."""
    return make_op("PythonRound", [M.cast(_scalar(x, "round"), np.float64)], {"ndigits": int(ndigits)}).outputs[0]


__all__: list[str] = []
