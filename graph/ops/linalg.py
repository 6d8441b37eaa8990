"""Linear algebra as graph ops: diagonals (np.diagonal, and the matrix with a diagonal given: np.diag of a
vector), np.linalg.inv, solve, det, slogdet and cholesky. Their kernels are numpy's functions
(exec/kernels/linalg.py), their gradients in grad/linalg_grad.py. Output dtypes are numpy's: inferred by
applying the numpy function to a small matrix of the input dtype (np.linalg.inv of integers is float64;
float16 is refused, as numpy refuses it)."""
from __future__ import annotations

import functools

import numpy as np

from graph import shapes as _sh
from graph.core import make_op
from graph.errors import ShapeError, UnsupportedError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.array import transpose
from graph.ops.axes import normalize_axis
from graph.ops.conversion import convert, convert_pair
from graph.ops.shape_ops import shape_dims, shape_tensor, shape_value

# --------------------------------------------------------------------------- diagonals


def diagonal_length(n, m, offset: int):
    """The length of the diagonal `offset` of an n x m matrix (None when a size is unknown)."""
    if n is None or m is None:
        return None
    return max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))


def _diagonal_infer(inputs, attrs):
    x = inputs[0]
    a1, a2, offset = attrs["axis1"], attrs["axis2"], attrs["offset"]
    if x.shape is None:
        return [(x.dtype, None)]
    rest = tuple(d for i, d in enumerate(x.shape) if i not in (a1, a2))
    return [(x.dtype, (*rest, diagonal_length(x.shape[a1], x.shape[a2], offset)))]


def _embed_infer(inputs, attrs):
    values, shape = inputs
    return [(values.dtype, shape_dims(shape_value(shape)))]


register_op("Diagonal", _diagonal_infer)
register_op("DiagonalEmbed", _embed_infer)


def _diagonal_axes(x: Tensor, axis1: int, axis2: int, what: str) -> tuple[int, int]:
    if x.ndim is None or x.ndim < 2:
        raise ShapeError(f"{what} needs a tensor of rank >= 2 (of known rank), got {x.describe()} of shape "
                         f"{_sh.format_shape(x.shape)}")
    a1, a2 = normalize_axis(axis1, x.shape, f"{what} axis1"), normalize_axis(axis2, x.shape, f"{what} axis2")
    if a1 == a2:
        raise ShapeError(f"{what}: axis1 and axis2 cannot be the same")
    return a1, a2


def diagonal(x, offset: int = 0, axis1: int = 0, axis2: int = 1, name: str | None = None) -> Tensor:
    """`np.diagonal(x, offset, axis1, axis2)`: the diagonal as the last axis, the other axes in their order."""
    x = convert(x)
    a1, a2 = _diagonal_axes(x, axis1, axis2, "np.diagonal")
    return make_op("Diagonal", [x], {"offset": int(offset), "axis1": a1, "axis2": a2}, name=name).outputs[0]


def diagonal_embed(values, shape, offset: int = 0, axis1: int = 0, axis2: int = 1,
                   name: str | None = None) -> Tensor:
    """Zeros of `shape` with `values` (shaped as `np.diagonal` of the result) on the diagonal `offset` of axes
    `axis1` and `axis2`: the inverse of `diagonal`, and np.diag of a vector."""
    values = convert(values)
    s = shape_tensor(shape, "diagonal_embed's shape")
    attrs = {"offset": int(offset), "axis1": int(axis1), "axis2": int(axis2)}
    return make_op("DiagonalEmbed", [values, s], attrs, name=name).outputs[0]


# --------------------------------------------------------------------------- np.linalg

@functools.lru_cache(maxsize=None)
def _linalg_dtypes(fn, dtype) -> tuple:
    """The dtypes numpy's `fn` gives for matrices of `dtype` (a TypeError where numpy has none)."""
    try:
        out = fn(np.eye(2, dtype=dtype))
    except TypeError as e:
        raise TypeError(f"np.linalg.{fn.__name__} of {np.dtype(dtype)}: {e}") from None
    return tuple(np.asarray(o).dtype for o in (out if isinstance(out, tuple) else (out,)))


def _square(x, what: str):
    if x.shape is None:
        return None
    if len(x.shape) < 2:
        raise ShapeError(f"{what}: {len(x.shape)}-dimensional array given. Array must be at least two-dimensional")
    n, m = x.shape[-2:]
    if n is not None and m is not None and n != m:
        raise ShapeError(f"{what}: last 2 dimensions of the array must be square, got {_sh.format_shape(x.shape)}")
    return x.shape


def _same_shape_infer(fn, what):
    def infer(inputs, attrs):
        x = inputs[0]
        return [(_linalg_dtypes(fn, x.dtype)[0], _square(x, what))]
    return infer


def _det_infer(fn, what):
    def infer(inputs, attrs):
        x = inputs[0]
        shape = _square(x, what)
        return [(d, None if shape is None else shape[:-2]) for d in _linalg_dtypes(fn, x.dtype)]
    return infer


def _solve_infer(inputs, attrs):
    a, b = inputs
    dtype = np.result_type(_linalg_dtypes(np.linalg.inv, a.dtype)[0], _linalg_dtypes(np.linalg.inv, b.dtype)[0])
    shape = _square(a, "np.linalg.solve")
    if shape is None or b.shape is None:
        return [(dtype, None)]
    if len(b.shape) == 1:  # numpy 2: a 1-D b is one vector, solved against every matrix of a
        return [(dtype, shape[:-1])]
    return [(dtype, _sh.broadcast(shape[:-2], b.shape[:-2]) + (shape[-2], b.shape[-1]))]


register_op("Inv", _same_shape_infer(np.linalg.inv, "np.linalg.inv"))
register_op("Cholesky", _same_shape_infer(np.linalg.cholesky, "np.linalg.cholesky"))
register_op("Det", _det_infer(np.linalg.det, "np.linalg.det"))
register_op("Slogdet", _det_infer(np.linalg.slogdet, "np.linalg.slogdet"))
register_op("Solve", _solve_infer)
# numpy's result type of slogdet (a named tuple since numpy 2)
_SLOGDET_RESULT = type(np.linalg.slogdet(np.eye(1)))


def inv(a, name: str | None = None) -> Tensor:
    """`np.linalg.inv(a)` of a (batch of) square matrices."""
    return make_op("Inv", [convert(a)], name=name).outputs[0]


def cholesky(a, upper: bool = False, name: str | None = None) -> Tensor:
    """`np.linalg.cholesky(a, upper=upper)`: L with a = L L^T (its transpose with upper=True)."""
    low = make_op("Cholesky", [convert(a)], name=name).outputs[0]
    if not upper:
        return low
    perm = list(range(low.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return transpose(low, perm)


def det(a, name: str | None = None) -> Tensor:
    """`np.linalg.det(a)`."""
    return make_op("Det", [convert(a)], name=name).outputs[0]


def slogdet(a, name: str | None = None):
    """`np.linalg.slogdet(a)`: numpy's SlogdetResult (sign, logabsdet)."""
    node = make_op("Slogdet", [convert(a)], name=name)
    return _SLOGDET_RESULT(*node.outputs) if _SLOGDET_RESULT is not tuple else node.outputs


def solve(a, b, name: str | None = None) -> Tensor:
    """`np.linalg.solve(a, b)`: b is one vector when 1-D, else a (batch of) matrices (numpy 2's rule)."""
    a, b = convert_pair(a, b)
    if a.ndim is None or b.ndim is None:
        raise UnsupportedError("np.linalg.solve on graph tensors needs operands of known rank")
    return make_op("Solve", [a, b], name=name).outputs[0]


__all__: list[str] = []
