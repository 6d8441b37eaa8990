"""Elementwise math, comparisons, cast and matmul: numpy ufuncs, called directly."""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import inplace, kernel, simple
from graph import shapes as _sh

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


@inplace(*_UFUNCS)
def _ufunc_into(node, rt, slot):
    uf = _UFUNCS[node.op]
    if uf.nin == 1:
        return lambda x: uf(x, out=x)
    if slot == 0:
        return lambda a, b: uf(a, b, out=a)
    return lambda a, b: uf(a, b, out=b)


def _reciprocal(x):
    # np.reciprocal truncates integers (1/2 -> 0); true division matches the graph dtype
    return np.true_divide(1, x) if np.asarray(x).dtype.kind in "iub" else np.reciprocal(x)


simple("Reciprocal", _reciprocal)


def _sigmoid(x):
    """1 / (1 + exp(-x)) in one buffer: four passes, where the textbook form makes four arrays.

    exp(-x) overflows to inf for very negative x; 1 / (1 + inf) = 0 is the right limit, so the
    overflow is not an error here (results below the smallest normal float come out as 0).
    """
    x = np.asarray(x)
    if x.dtype.kind in "iub":
        x = x.astype(np.float64)
    if x.ndim == 0:
        with np.errstate(over="ignore"):
            return x.dtype.type(1 / (1 + np.exp(-x)))
    out = np.negative(x)
    with np.errstate(over="ignore"):
        np.exp(out, out=out)
    out += 1
    np.reciprocal(out, out=out)
    return out


simple("Sigmoid", _sigmoid)


def _sigmoid_into(x):
    np.negative(x, out=x)
    with np.errstate(over="ignore"):
        np.exp(x, out=x)
    x += 1
    return np.reciprocal(x, out=x)


inplace("Sigmoid")(lambda node, rt, slot: _sigmoid_into)
inplace("Reciprocal")(lambda node, rt, slot: lambda x: np.reciprocal(x, out=x))  # floats: same dtype in and out
inplace("Relu")(lambda node, rt, slot: lambda x: np.maximum(x, 0, out=x))


def _fusable(y, dy) -> bool:
    """Whether y and dy can share one output buffer: same shape and dtype, not scalars."""
    return isinstance(y, np.ndarray) and isinstance(dy, np.ndarray) and y.ndim and y.shape == dy.shape \
        and y.dtype == dy.dtype and y.dtype.kind == "f"


def _tanh_grad(y, dy):
    if not _fusable(y, dy):
        return dy * (1 - y * y)
    out = np.multiply(y, y)
    np.subtract(1, out, out=out)
    out *= dy
    return out


def _sigmoid_grad(y, dy):
    if not _fusable(y, dy):
        return dy * y * (1 - y)
    out = np.subtract(1, y)
    out *= y
    out *= dy
    return out


def _same_static_arrays(node) -> bool:
    """Whether the graph fixes y and dy as float arrays of one shape and dtype: `_fusable` holds for every run."""
    y, dy = node.inputs
    return _sh.is_fully_defined(y.shape) and y.shape != () and y.shape == dy.shape and y.dtype == dy.dtype \
        and getattr(y.dtype, "kind", None) == "f"


@kernel("TanhGrad")
def _tanh_grad_kernel(node, rt):
    if not _same_static_arrays(node):
        return _tanh_grad
    one = node.inputs[0].dtype.type(1)  # the 1 that np.subtract(1, out) converts on every call, converted once

    def tanh_grad(y, dy):
        # `_tanh_grad` with its checks decided when the plan is built (a grad loop calls it every iteration)
        if y.shape != dy.shape:
            return _tanh_grad(y, dy)
        out = np.multiply(y, y)
        np.subtract(one, out, out=out)
        out *= dy
        return out
    return tanh_grad


@kernel("SigmoidGrad")
def _sigmoid_grad_kernel(node, rt):
    if not _same_static_arrays(node):
        return _sigmoid_grad
    one = node.inputs[0].dtype.type(1)

    def sigmoid_grad(y, dy):
        if y.shape != dy.shape:
            return _sigmoid_grad(y, dy)
        out = np.subtract(one, y)
        out *= y
        out *= dy
        return out
    return sigmoid_grad


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
