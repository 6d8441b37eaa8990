"""Elementwise math, comparisons, cast and matmul: numpy ufuncs, called directly."""
from __future__ import annotations

import numpy as np

from exec.kernels import kernel, simple

_UFUNCS = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "TrueDiv": np.true_divide,
    "FloorDiv": np.floor_divide, "Mod": np.remainder, "Pow": np.power,
    "Maximum": np.maximum, "Minimum": np.minimum, "Atan2": np.arctan2,
    "Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less, "LessEqual": np.less_equal,
    "Greater": np.greater, "GreaterEqual": np.greater_equal,
    "LogicalAnd": np.logical_and, "LogicalOr": np.logical_or, "LogicalXor": np.logical_xor,
    "BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor,
    "Neg": np.negative, "Abs": np.absolute, "Exp": np.exp, "Log": np.log, "Sqrt": np.sqrt,
    "Square": np.square, "Tanh": np.tanh, "Sign": np.sign, "Floor": np.floor, "Ceil": np.ceil,
    "Round": np.rint, "Sin": np.sin, "Cos": np.cos, "Log1p": np.log1p, "Expm1": np.expm1,
    "LogicalNot": np.logical_not, "Invert": np.invert, "IsNan": np.isnan, "IsFinite": np.isfinite,
}
for _op, _fn in _UFUNCS.items():
    simple(_op, _fn)


def _reciprocal(x):
    # np.reciprocal truncates integers (1/2 -> 0); true division matches the graph dtype
    return np.true_divide(1, x) if np.asarray(x).dtype.kind in "iub" else np.reciprocal(x)


simple("Reciprocal", _reciprocal)


def _sigmoid(x):
    # numerically stable: never exponentiates a large positive number
    x = np.asarray(x)
    if x.dtype.kind in "iub":
        x = x.astype(np.float64)
    e = np.exp(-np.abs(x))
    out = np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)
    return out[()] if out.ndim == 0 else out


simple("Sigmoid", _sigmoid)


def _relu(x):
    return np.maximum(x, 0).astype(np.asarray(x).dtype, copy=False)


simple("Relu", _relu)


@kernel("Cast")
def _cast(node, rt):
    dtype = node.attrs["dtype"]

    def cast(x):
        out = np.asarray(x).astype(dtype)
        return out[()] if out.ndim == 0 else out
    return cast


simple("MatMul", np.matmul, heavy=True)
