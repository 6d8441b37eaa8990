"""ONNX lowerings of numpy's other elementwise functions (graph/ops/ufuncs.py) and of the linear algebra ops
(graph/ops/linalg.py), in the table `UFUNC_LOWERINGS`.

Each computes numpy's function in the node's result dtype. onnxruntime has float32 kernels alone for
ONNX's Sinh, Cosh, Tan, Asin, Acos, Atan, Asinh, Acosh, Atanh and Det: in float64 they are written with
operators it has (sinh through an accurate expm1, tan as sin / cos, asinh, acosh and atanh through an
accurate log1p), and what has no such form (arcsin, arccos, arctan, det in float64) fails the export with
the reason, as do gcd, lcm, the shifts of signed integers and np.linalg.inv, solve, slogdet and cholesky,
which ONNX has no operator for.
"""
from __future__ import annotations

import math

import numpy as np

from graph.node import Node
from graph.onnx.lowering import Emitter

UFUNC_LOWERINGS: dict = {}

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_LN2 = math.log(2.0)


def _lowering(*ops: str):
    def register(fn):
        for op in ops:
            UFUNC_LOWERINGS[op] = fn
        return fn
    return register


def _float_input(em: Emitter, ins: list, k: int = 0) -> str:
    """Input k in the result dtype, which must be one onnxruntime computes these functions in."""
    dtype = em.out_dtype
    if dtype not in (_F32, _F64):
        raise em.fail(f"onnxruntime computes {em.node.op} in float32 and float64 only, not {dtype}")
    return em.input_as(ins, k, dtype)


def log1p(em: Emitter, x: str) -> str:
    """log(1 + x) without losing x's digits (Goldberg's: x log(u) / (u - 1), u = 1 + x), in the result dtype."""
    dtype = em.out_dtype
    u = em("Add", x, em.const(1, dtype))
    d = em("Sub", u, em.const(1, dtype))
    exact = em("Where", em("IsInf", x, detect_negative=0), x, em("Div", em("Mul", x, em("Log", u)), d))  # inf/inf
    return em("Where", em("Equal", d, em.const(0, dtype)), x, exact)


def expm1(em: Emitter, x: str) -> str:
    """exp(x) - 1 without losing x's digits ((u - 1) x / log(u), u = exp(x))."""
    dtype = em.out_dtype
    u = em("Exp", x)
    d = em("Sub", u, em.const(1, dtype))
    exact = em("Div", em("Mul", d, x), em("Log", u))
    return em("Where", em("Equal", d, em.const(0, dtype)), x,
              em("Where", em("Equal", d, em.const(-1, dtype)), d, exact))


# --------------------------------------------------------------------------- unary

_SCALED = {"Log2": ("Log", 1 / _LN2), "Log10": ("Log", 1 / math.log(10.0)), "Deg2Rad": (None, math.pi / 180.0),
           "Rad2Deg": (None, 180.0 / math.pi)}


@_lowering(*_SCALED)
def _scaled(em: Emitter, node: Node, ins: list) -> list:
    """log2 and log10 as scaled logs; deg2rad and rad2deg as numpy computes them (x times a constant)."""
    op, scale = _SCALED[node.op]
    x = _float_input(em, ins)
    return [em("Mul", em(op, x) if op else x, em.const(scale, em.out_dtype))]


@_lowering("Exp2")
def _exp2(em: Emitter, node: Node, ins: list) -> list:
    return [em("Pow", em.const(2, em.out_dtype), _float_input(em, ins))]


@_lowering("Cbrt")
def _cbrt(em: Emitter, node: Node, ins: list) -> list:
    x = _float_input(em, ins)
    return [em("Mul", em("Sign", x), em("Pow", em("Abs", x), em.const(1 / 3, em.out_dtype)))]


_FLOAT32_ONLY = {"Sinh": "Sinh", "Cosh": "Cosh", "Tan": "Tan", "Arcsin": "Asin", "Arccos": "Acos", "Arctan": "Atan",
                 "Arcsinh": "Asinh", "Arccosh": "Acosh", "Arctanh": "Atanh"}


@_lowering(*_FLOAT32_ONLY)
def _trigonometric(em: Emitter, node: Node, ins: list) -> list:
    x = _float_input(em, ins)
    if em.out_dtype == _F32:
        return [em(_FLOAT32_ONLY[node.op], x)]
    composed = _FLOAT64_FORMS.get(node.op)
    if composed is None:
        raise em.fail(f"onnxruntime's {_FLOAT32_ONLY[node.op]} computes in float32 alone, and ONNX has no other form "
                      "of it: cast the values to float32 to export it")
    return [composed(em, x)]


def _sinh(em: Emitter, x: str) -> str:
    """sinh(x) = (u + u / (u + 1)) / 2 with u = expm1(x); sign(x) exp(|x|) / 2 where u would overflow."""
    dtype = em.out_dtype
    half = em.const(0.5, dtype)
    u = expm1(em, x)
    small = em("Mul", em("Add", u, em("Div", u, em("Add", u, em.const(1, dtype)))), half)
    large = em("Mul", em("Sign", x), em("Mul", em("Exp", em("Abs", x)), half))
    return em("Where", em("Greater", em("Abs", x), em.const(20, dtype)), large, small)


def _cosh(em: Emitter, x: str) -> str:
    return em("Mul", em("Add", em("Exp", x), em("Exp", em("Neg", x))), em.const(0.5, em.out_dtype))


def _asinh(em: Emitter, x: str) -> str:
    """sign(x) log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x| (log(a) + log 2 where a^2 would overflow)."""
    dtype = em.out_dtype
    a = em("Abs", x)
    one = em.const(1, dtype)
    sq = em("Mul", a, a)
    r = log1p(em, em("Add", a, em("Div", sq, em("Add", one, em("Sqrt", em("Add", one, sq))))))
    r = em("Where", em("Greater", a, em.const(1e8, dtype)), em("Add", em("Log", a), em.const(_LN2, dtype)), r)
    return em("Mul", em("Sign", x), r)


def _acosh(em: Emitter, x: str) -> str:
    """log1p(t + sqrt(2t + t^2)), t = x - 1 (log(x) + log 2 for large x); NaN below 1, as numpy."""
    dtype = em.out_dtype
    t = em("Sub", x, em.const(1, dtype))
    r = log1p(em, em("Add", t, em("Sqrt", em("Add", em("Mul", t, em.const(2, dtype)), em("Mul", t, t)))))
    return em("Where", em("Greater", x, em.const(1e8, dtype)), em("Add", em("Log", x), em.const(_LN2, dtype)), r)


def _atanh(em: Emitter, x: str) -> str:
    """log1p(2x / (1 - x)) / 2."""
    dtype = em.out_dtype
    ratio = em("Div", em("Mul", x, em.const(2, dtype)), em("Sub", em.const(1, dtype), x))
    return em("Mul", log1p(em, ratio), em.const(0.5, dtype))


_FLOAT64_FORMS = {"Sinh": _sinh, "Cosh": _cosh, "Tan": lambda em, x: em("Div", em("Sin", x), em("Cos", x)),
                  "Arcsinh": _asinh, "Arccosh": _acosh, "Arctanh": _atanh}


@_lowering("Fabs")
def _fabs(em: Emitter, node: Node, ins: list) -> list:
    return [em("Abs", em.input_as(ins, 0, em.out_dtype))]


def _is_float(em: Emitter, k: int = 0) -> bool:
    return em.node.inputs[k].dtype.kind == "f"


def _false_like(em: Emitter, x: str) -> str:
    return em("Expand", em.const(False), em("Shape", x))


@_lowering("IsInf")
def _isinf(em: Emitter, node: Node, ins: list) -> list:
    return [em("IsInf", ins[0]) if _is_float(em) else _false_like(em, ins[0])]


def signbit(em: Emitter, x: str, dtype) -> str:
    """x < 0, or x is -0.0 (1 / x is -inf)."""
    zero = em.const(0, dtype)
    negative_zero = em("And", em("Equal", x, zero), em("Less", em("Div", em.const(1, dtype), x), zero))
    return em("Or", em("Less", x, zero), negative_zero)


@_lowering("SignBit")
def _signbit(em: Emitter, node: Node, ins: list) -> list:
    dtype = node.inputs[0].dtype
    if dtype.kind == "b":
        return [_false_like(em, ins[0])]
    if dtype.kind != "f":
        return [em("Less", ins[0], em.const(0, dtype))]
    return [signbit(em, ins[0], dtype)]


@_lowering("Trunc")
def _trunc(em: Emitter, node: Node, ins: list) -> list:
    out = em.out_dtype
    x = em.input_as(ins, 0, out)
    if out.kind != "f":
        return [em("Identity", x)]
    return [em("Where", em("Less", x, em.const(0, out)), em("Ceil", x), em("Floor", x))]


# --------------------------------------------------------------------------- binary

def _operands(em: Emitter, ins: list) -> tuple[str, str]:
    return em.input_as(ins, 0, em.out_dtype), em.input_as(ins, 1, em.out_dtype)


@_lowering("Hypot")
def _hypot(em: Emitter, node: Node, ins: list) -> list:
    a, b = _float_input(em, ins, 0), _float_input(em, ins, 1)
    return [em("Sqrt", em("Add", em("Mul", a, a), em("Mul", b, b)))]


@_lowering("Fmod")
def _fmod(em: Emitter, node: Node, ins: list) -> list:
    a, b = _operands(em, ins)
    return [em("Mod", a, b, fmod=1)]  # C's fmod: the dividend's sign, for integers too


def _logaddexp(em: Emitter, ins: list, base2: bool) -> str:
    """numpy's npy_logaddexp(2): x + log1p(exp(-(x - y))) from the larger; x + log(2) (or 1) where x == y."""
    dtype = em.out_dtype
    x, y = _float_input(em, ins, 0), _float_input(em, ins, 1)
    tmp = em("Sub", x, y)
    larger = em("Where", em("Greater", tmp, em.const(0, dtype)), x, y)
    neg = em("Neg", em("Abs", tmp))
    term = log1p(em, em("Pow", em.const(2, dtype), neg) if base2 else em("Exp", neg))
    if base2:
        term = em("Mul", term, em.const(1 / _LN2, dtype))
    r = em("Where", em("IsNaN", tmp), tmp, em("Add", larger, term))
    return em("Where", em("Equal", x, y), em("Add", x, em.const(1 if base2 else _LN2, dtype)), r)


@_lowering("Logaddexp")
def _logaddexp_e(em: Emitter, node: Node, ins: list) -> list:
    return [_logaddexp(em, ins, base2=False)]


@_lowering("Logaddexp2")
def _logaddexp_2(em: Emitter, node: Node, ins: list) -> list:
    return [_logaddexp(em, ins, base2=True)]


@_lowering("Fmax", "Fmin")
def _fmax_fmin(em: Emitter, node: Node, ins: list) -> list:
    a, b = _operands(em, ins)
    if em.out_dtype.kind == "b":
        return [em("Or" if node.op == "Fmax" else "And", a, b)]
    both = em("Max" if node.op == "Fmax" else "Min", a, b)
    if em.out_dtype.kind != "f":
        return [both]
    return [em("Where", em("IsNaN", b), a, em("Where", em("IsNaN", a), b, both))]  # NaNs ignored


@_lowering("Copysign")
def _copysign(em: Emitter, node: Node, ins: list) -> list:
    a, b = _float_input(em, ins, 0), _float_input(em, ins, 1)
    magnitude = em("Abs", a)
    return [em("Where", signbit(em, b, em.out_dtype), em("Neg", magnitude), magnitude)]


@_lowering("FloatPower")
def _float_power(em: Emitter, node: Node, ins: list) -> list:
    a, b = _operands(em, ins)
    return [em("Pow", a, b)]


@_lowering("Ldexp")
def _ldexp(em: Emitter, node: Node, ins: list) -> list:
    x = _float_input(em, ins, 0)
    return [em("Mul", x, em("Pow", em.const(2, em.out_dtype), em.input_as(ins, 1, em.out_dtype)))]


@_lowering("Heaviside")
def _heaviside(em: Emitter, node: Node, ins: list) -> list:
    dtype = em.out_dtype
    x, h = _float_input(em, ins, 0), _float_input(em, ins, 1)
    zero, one = em.const(0, dtype), em.const(1, dtype)
    step = em("Where", em("Less", x, zero), zero, em("Where", em("Greater", x, zero), one, h))
    return [em("Where", em("IsNaN", x), x, step)]


@_lowering("PythonRound")
def _python_round(em: Emitter, node: Node, ins: list) -> list:
    raise em.fail("round(x, n) of a Python float rounds the decimal value correctly, as Python does; ONNX's Round "
                  "rounds to integers alone: use np.round(x, n) (numpy's scaled rounding) to export it")


@_lowering("Gcd", "Lcm", "LeftShift", "RightShift")
def _no_operator(em: Emitter, node: Node, ins: list) -> list:
    raise em.fail(f"ONNX has no operator for numpy's {node.op.lower()} of {em.out_dtype} (BitShift shifts unsigned "
                  "integers alone, and there is no gcd or lcm)")


# --------------------------------------------------------------------------- linear algebra

@_lowering("Det")
def _det(em: Emitter, node: Node, ins: list) -> list:
    if em.out_dtype != _F32:
        raise em.fail(f"onnxruntime's Det computes in float32 alone, not {em.out_dtype}: cast the matrix to float32 "
                      "to export np.linalg.det")
    return [em("Det", em.input_as(ins, 0, _F32))]


@_lowering("Inv", "Solve", "Slogdet", "Cholesky")
def _no_linalg_operator(em: Emitter, node: Node, ins: list) -> list:
    raise em.fail(f"ONNX has no operator for np.linalg.{node.op.lower()}")


def _diagonal_layout(em: Emitter, node: Node, shape) -> tuple[list[int], int, int]:
    """(the transpose putting the diagonal's axes last, rows, columns) of a matrix shape known when exported."""
    a1, a2 = node.attrs["axis1"], node.attrs["axis2"]
    if shape is None or shape[a1] is None or shape[a2] is None:
        raise em.fail("a diagonal of matrices whose size is unknown has no ONNX form here: give them a static size")
    perm = [i for i in range(len(shape)) if i not in (a1, a2)] + [a1, a2]
    return perm, shape[a1], shape[a2]


def _flat_positions(offset: int, n: int, m: int) -> np.ndarray:
    """Where the items of diagonal `offset` of an n x m matrix are in its rows laid end to end."""
    k = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    return (np.arange(k) + max(-offset, 0)) * m + np.arange(k) + max(offset, 0)


@_lowering("Diagonal")
def _diagonal(em: Emitter, node: Node, ins: list) -> list:
    perm, n, m = _diagonal_layout(em, node, node.inputs[0].shape)
    batch = len(perm) - 2
    x = em("Transpose", ins[0], perm=perm)
    flat = em("Reshape", x, em.i64(*([0] * batch), n * m))
    return [em("Gather", flat, em.i64(*_flat_positions(node.attrs["offset"], n, m)), axis=batch)]


@_lowering("DiagonalEmbed")
def _diagonal_embed(em: Emitter, node: Node, ins: list) -> list:
    out_shape = node.outputs[0].shape
    perm, n, m = _diagonal_layout(em, node, out_shape)
    batch = len(perm) - 2
    values = ins[0]
    values_shape = em("Shape", values)
    batch_shape = em("Slice", values_shape, em.i64(0), em.i64(batch))
    zeros = em("Expand", em.const(0, em.out_dtype), em("Concat", batch_shape, em.i64(n * m), axis=0))
    positions = em("Expand", em.i64(*_flat_positions(node.attrs["offset"], n, m)), values_shape)
    flat = em("ScatterElements", zeros, positions, values, axis=batch)
    matrices = em("Reshape", flat, em("Concat", batch_shape, em.i64(n, m), axis=0))
    return [em("Transpose", matrices, perm=list(np.argsort(perm)))]
