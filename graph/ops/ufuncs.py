"""numpy's other elementwise functions as graph ops (np.log2, np.sinh, np.arcsin, np.hypot, np.logaddexp, ...),
and the ufunc methods reduce, accumulate and outer on graph tensors.

Each op's kernel is the numpy ufunc itself (exec/kernels/math.py), so values are numpy's to the last bit
(log2 is not log / log(2) there); dtypes are inferred by applying the ufunc to empty arrays of the input
dtypes, as graph/ops/math.py does. Gradients are in grad/ufunc_grad.py, ONNX forms in graph/onnx/ufunc_ops.py.
"""
from __future__ import annotations

import numpy as np

from graph.op_registry import register_op
from graph.ops import along_axis as _along
from graph.ops import array as _array
from graph.ops import math as _math
from graph.ops import reduce as _reduce
from graph.ops.conversion import constant, convert

# op name -> numpy ufunc (its kernel, and its dtype inference)
UNARY = {
    "Log2": np.log2, "Log10": np.log10, "Exp2": np.exp2, "Sinh": np.sinh, "Cosh": np.cosh, "Tan": np.tan,
    "Arcsin": np.arcsin, "Arccos": np.arccos, "Arctan": np.arctan, "Arcsinh": np.arcsinh,
    "Arccosh": np.arccosh, "Arctanh": np.arctanh, "Cbrt": np.cbrt, "Deg2Rad": np.deg2rad,
    "Rad2Deg": np.rad2deg, "Fabs": np.fabs, "IsInf": np.isinf, "SignBit": np.signbit, "Trunc": np.trunc,
}
BINARY = {
    "Hypot": np.hypot, "Fmod": np.fmod, "Logaddexp": np.logaddexp, "Logaddexp2": np.logaddexp2,
    "Fmax": np.fmax, "Fmin": np.fmin, "Copysign": np.copysign, "FloatPower": np.float_power,
    "Ldexp": np.ldexp, "Heaviside": np.heaviside, "Gcd": np.gcd, "Lcm": np.lcm,
    "LeftShift": np.left_shift, "RightShift": np.right_shift,
}
# steps, tests and integer functions: no gradient flows through them (as Floor and comparisons)
NON_DIFFERENTIABLE = frozenset({"IsInf", "SignBit", "Trunc", "Heaviside", "Gcd", "Lcm", "LeftShift", "RightShift"})

for _name, _uf in UNARY.items():
    register_op(_name, _math._unary_infer(_uf), differentiable=_name not in NON_DIFFERENTIABLE)
for _name, _uf in BINARY.items():
    register_op(_name, _math._binary_infer(_uf), differentiable=_name not in NON_DIFFERENTIABLE)

_build_ldexp = _math._binary("Ldexp")


def _ldexp(x, n, name: str | None = None):
    """`np.ldexp(x, n)`: a Python int exponent stays an integer (numpy's loops take float and int), not x's dtype."""
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
        n = constant(np.int64(n))
    return _build_ldexp(x, n, name=name)


# op name -> its builder
BUILDERS = {op: _math._unary(op) for op in UNARY} | {op: _math._binary(op) for op in BINARY} | {"Ldexp": _ldexp}
# numpy ufunc -> its graph builder (np.degrees and np.radians are rad2deg and deg2rad under other names)
UFUNCS = {uf: BUILDERS[op] for op, uf in (UNARY | BINARY).items()}
UFUNCS.update({np.degrees: BUILDERS["Rad2Deg"], np.radians: BUILDERS["Deg2Rad"]})


# --------------------------------------------------------------------------- ufunc methods

def ufunc_accumulate(ufunc, inputs, kwargs):
    """`np.add.accumulate` and `np.multiply.accumulate` as cumsum / cumprod (numpy widens small integers and bools
    there as in np.cumsum); None for what NumpyCall computes instead."""
    builder = {np.add: _along.cumsum, np.multiply: _along.cumprod}.get(ufunc)
    if builder is None or len(inputs) != 1 or not set(kwargs) <= {"axis", "dtype"}:
        return None
    axis = kwargs.get("axis", 0)
    if axis is None:
        return None
    return builder(convert(inputs[0]), axis, kwargs.get("dtype"))


def ufunc_outer(builder, inputs, kwargs):
    """`ufunc.outer(a, b)`: `ufunc(a[..., None, ...], b)` with b's axes appended to a's; None for what NumpyCall
    computes instead (keyword arguments, an operand of unknown rank)."""
    if len(inputs) != 2 or kwargs:
        return None
    a, b = convert(inputs[0]), convert(inputs[1])
    if a.ndim is None or b.ndim is None:
        return None
    for _ in range(b.ndim):
        a = _array.expand_dims(a, -1)
    return builder(a, b)


def ufunc_reduce(reduction, inputs, kwargs):
    """`ufunc.reduce(x, axis=0, dtype=None, keepdims=False)` as the graph's reduction; None for what NumpyCall
    computes instead (initial=, where=)."""
    if reduction is None or len(inputs) != 1 or not set(kwargs) <= {"axis", "dtype", "keepdims"}:
        return None
    dtype = kwargs.get("dtype")
    x = convert(inputs[0]) if dtype is None else _math.cast(convert(inputs[0]), dtype)
    return reduction(x, kwargs.get("axis", 0), kwargs.get("keepdims", False))


REDUCTIONS = {np.add: _reduce.reduce_sum, np.multiply: _reduce.reduce_prod, np.maximum: _reduce.reduce_max,
              np.minimum: _reduce.reduce_min, np.logical_and: _reduce.reduce_all, np.logical_or: _reduce.reduce_any}


__all__: list[str] = []
