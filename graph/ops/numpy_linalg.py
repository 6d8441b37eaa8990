"""numpy's products and np.linalg on graph tensors: np.tensordot, inner, vdot, cross, np.linalg.norm (and
vector_norm, matrix_norm), matrix_power, multi_dot and the array-API aliases, composed of graph ops as numpy
composes them (tensordot: a transpose, a reshape and a matrix product), so gradients follow; inv, solve,
det, slogdet and cholesky are ops of their own (graph/ops/linalg.py). Complex operands, the norms of
singular values (ord 2, -2 and 'nuc' of matrices) and the other np.linalg functions (eigh, svd, qr, pinv,
lstsq, ...) run numpy's own function on the values (NumpyCall: exact, without a gradient)."""
from __future__ import annotations

import math

import numpy as np

from graph.ops import array as A
from graph.ops import linalg as LA
from graph.ops import math as M
from graph.ops import reduce as R
from graph.ops.axes import normalize_axis
from graph.ops.conversion import convert, convert_pair
from graph.ops.numpy_arrays import dim, dims, numpy_fallback, static_ints
from graph.ops.numpy_call import numpy_call


def _real(*ts) -> bool:
    return all(t.dtype.kind in "biuf" for t in ts)


def _prod(values):
    """The product of dims (ints, or scalar tensors where unknown)."""
    out = 1
    for v in values:
        out = out * v if isinstance(out, int) and isinstance(v, int) else M.mul(out, v)
    return out


# --------------------------------------------------------------------------- products

def _tensordot_axes(axes, nda: int, ndb: int):
    if isinstance(axes, (int, np.integer)):
        return list(range(nda - axes, nda)), list(range(0, axes))
    axes_a, axes_b = axes
    axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
    axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError("shape-mismatch for sum")
    return [a % nda if nda else a for a in axes_a], [b % ndb if ndb else b for b in axes_b]


@numpy_fallback(np.tensordot)
def tensordot(a, b, axes=2):
    """numpy's tensordot: the summed axes moved last in a and first in b, both made matrices, multiplied."""
    a, b = convert(a), convert(b)
    if a.ndim is None or b.ndim is None or not static_ints(axes):
        return None
    axes_a, axes_b = _tensordot_axes(axes, a.ndim, b.ndim)
    for i, j in zip(axes_a, axes_b, strict=True):
        if a.shape[i] is not None and b.shape[j] is not None and a.shape[i] != b.shape[j]:
            raise ValueError("shape-mismatch for sum")
    rest_a = [k for k in range(a.ndim) if k not in axes_a]
    rest_b = [k for k in range(b.ndim) if k not in axes_b]
    # each operand's own summed size: the matrix product checks they agree where the sizes are known only then
    at = A.reshape(A.transpose(a, rest_a + axes_a), [_prod(dim(a, i) for i in rest_a), _prod(dim(a, i) for i in axes_a)])
    bt = A.reshape(A.transpose(b, axes_b + rest_b), [_prod(dim(b, i) for i in axes_b), _prod(dim(b, i) for i in rest_b)])
    return A.reshape(M.matmul(at, bt), [dim(a, i) for i in rest_a] + [dim(b, i) for i in rest_b])


@numpy_fallback(np.inner)
def inner(a, b):
    a, b = convert_pair(a, b)
    if a.ndim is None or b.ndim is None or not _real(a, b):
        return None
    if a.ndim == 0 or b.ndim == 0:
        return M.mul(a, b)
    return tensordot(a, b, ([-1], [-1]))


@numpy_fallback(np.vdot)
def vdot(a, b):
    a, b = convert_pair(a, b)
    if not _real(a, b):
        return None  # numpy conjugates a
    return M.matmul(A.reshape(a, [-1]), A.reshape(b, [-1]))


@numpy_fallback(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """3-vectors as numpy computes them (one product minus another per component); 2-vectors (deprecated in
    numpy 2) and what needs a rank unknown here go to numpy."""
    a, b = convert(a), convert(b)
    if axis is not None:
        axisa = axisb = axisc = axis
    if a.ndim is None or b.ndim is None or not static_ints((axisa, axisb, axisc)):
        return None
    if a.ndim < 1 or b.ndim < 1:
        raise ValueError("At least one array has zero dimension")
    a = _move_last(a, normalize_axis(axisa, a.shape, "axisa"))
    b = _move_last(b, normalize_axis(axisb, b.shape, "axisb"))
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        return None
    dtype = np.promote_types(a.dtype, b.dtype)
    a, b = M.cast(a, dtype), M.cast(b, dtype)
    x = [a[..., k] for k in range(3)]
    y = [b[..., k] for k in range(3)]
    cp = A.stack([M.sub(M.mul(x[1], y[2]), M.mul(x[2], y[1])), M.sub(M.mul(x[2], y[0]), M.mul(x[0], y[2])),
                  M.sub(M.mul(x[0], y[1]), M.mul(x[1], y[0]))], -1)
    c = normalize_axis(axisc, cp.shape, "axisc")
    return cp if c == cp.ndim - 1 else A.transpose(cp, [*range(c), cp.ndim - 1, *range(c, cp.ndim - 1)])


def _move_last(t, axis: int):
    if axis == t.ndim - 1:
        return t
    return A.transpose(t, [k for k in range(t.ndim) if k != axis] + [axis])


# --------------------------------------------------------------------------- norms

@numpy_fallback(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    """numpy's norm, step by step: integers in float64, the 2-norm of all elements as sqrt(x . x)."""
    x = convert(x)
    if x.ndim is None or not _real(x) or not static_ints(axis if axis is not None else 0):
        return None
    if x.dtype.kind != "f":
        x = M.cast(x, np.float64)
    if axis is None and (ord is None or (ord in ("f", "fro") and x.ndim == 2) or (ord == 2 and x.ndim == 1)):
        flat = A.reshape(x, [-1])
        ret = M.sqrt(M.matmul(flat, flat))
        return A.reshape(ret, [1] * x.ndim) if keepdims else ret
    axes = tuple(range(x.ndim)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _vector_norm(x, ord, axis, keepdims):
    absx = M.abs(x)
    if ord == math.inf:
        return R.reduce_max(absx, axis, keepdims)
    if ord == -math.inf:
        return R.reduce_min(absx, axis, keepdims)
    if ord == 0:
        return R.reduce_sum(M.cast(M.not_equal(x, 0), x.dtype), axis, keepdims)
    if ord == 1:
        return R.reduce_sum(absx, axis, keepdims)
    if ord is None or ord == 2:
        return M.sqrt(R.reduce_sum(M.mul(x, x), axis, keepdims))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    total = R.reduce_sum(M.pow(absx, ord), axis, keepdims)
    return M.pow(total, np.reciprocal(np.asarray(ord, dtype=total.dtype)))


def _matrix_norm(x, ord, axes, keepdims):
    row, col = (normalize_axis(a, x.shape) for a in axes)
    if row == col:
        raise ValueError("Duplicate axes given.")
    if ord in (None, "fro", "f"):
        ret = M.sqrt(R.reduce_sum(M.mul(x, x), (row, col)))
    elif ord in (1, -1, math.inf, -math.inf):
        summed, other = (row, col) if ord in (1, -1) else (col, row)
        other -= other > summed  # the summed axis is gone
        sums = R.reduce_sum(M.abs(x), summed)
        ret = R.reduce_max(sums, other) if ord > 0 else R.reduce_min(sums, other)
    else:
        return None  # 2, -2 and 'nuc' are norms of the singular values
    if keepdims:
        shape = dims(x)
        shape[row] = shape[col] = 1
        ret = A.reshape(ret, shape)
    return ret


@numpy_fallback(getattr(np.linalg, "vector_norm", None))  # numpy 2
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = convert(x)
    if x.ndim is None or (axis is not None and not isinstance(axis, (int, np.integer))):
        return None
    out = norm(A.reshape(x, [-1]) if axis is None else x, ord, 0 if axis is None else axis)
    if keepdims:
        shape = dims(x)
        for i in range(x.ndim) if axis is None else (normalize_axis(axis, x.shape),):
            shape[i] = 1
        out = A.reshape(out, shape)
    return out


@numpy_fallback(getattr(np.linalg, "matrix_norm", None))  # numpy 2
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return norm(x, ord, (-2, -1), keepdims)


# --------------------------------------------------------------------------- matrix_power, multi_dot

@numpy_fallback(np.linalg.matrix_power)
def matrix_power(a, n):
    """numpy's: an identity, one or two products, or repeated squaring by the bits of n (inv first if n < 0)."""
    a = convert(a)
    if not static_ints(n) or a.ndim is None:
        return None
    if n == 0:
        return A.broadcast_to(LA.diagonal_embed(A.broadcast_to(np.ones((), a.dtype), [dim(a, -1)]),
                                                [dim(a, -1), dim(a, -1)]), dims(a))
    if n < 0:
        a, n = LA.inv(a), -n
    if n <= 3:
        return a if n == 1 else M.matmul(a, a) if n == 2 else M.matmul(M.matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else M.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else M.matmul(result, z)
    return result


@numpy_fallback(np.linalg.multi_dot)
def multi_dot(arrays, *, out=None):
    """numpy's order for three matrices (the cheaper parenthesization by their sizes); left to right beyond."""
    ts = [convert(a) for a in arrays]
    if out is not None or any(t.ndim is None for t in ts) or len(ts) < 2:
        return None
    if len(ts) == 2:
        return M.matmul(ts[0], ts[1])
    first, last = ts[0].ndim, ts[-1].ndim
    ts[0] = A.reshape(ts[0], [1, -1]) if first == 1 else ts[0]
    ts[-1] = A.reshape(ts[-1], [-1, 1]) if last == 1 else ts[-1]
    if len(ts) == 3 and all(d is not None for t in ts for d in t.shape):
        (p0, p1), (_, p2), (_, p3) = (t.shape for t in ts)
        left_first = p0 * p1 * p2 + p0 * p2 * p3 <= p1 * p2 * p3 + p0 * p1 * p3
        result = M.matmul(M.matmul(ts[0], ts[1]), ts[2]) if left_first else M.matmul(ts[0], M.matmul(ts[1], ts[2]))
    else:
        result = ts[0]
        for t in ts[1:]:
            result = M.matmul(result, t)
    if first == 1 and last == 1:
        return result[0, 0]
    return A.reshape(result, [-1]) if first == 1 or last == 1 else result


# --------------------------------------------------------------------------- the array API's aliases

def _vecdot(x1, x2, /, *, axis=-1, **kwargs):
    a, b = convert_pair(x1, x2)
    if not _real(a, b) or kwargs:
        return numpy_call(np.vecdot, x1, x2, axis=axis, **kwargs)
    # numpy sums in the operands' dtype (int8 wraps, bools are `any`): the wider sum cast back is the same
    return M.cast(R.reduce_sum(M.mul(a, b), axis), M._ufunc_dtype(np.vecdot, a.dtype, b.dtype))


def _linalg_trace(x, /, *, offset=0, dtype=None):
    return R.reduce_sum(LA.diagonal(x, offset, -2, -1), -1, dtype=dtype)


_BY_NAME = {
    "tensordot": tensordot, "inner": inner, "vdot": vdot, "cross": cross,
}
_LINALG = {
    "norm": norm, "vector_norm": vector_norm, "matrix_norm": matrix_norm, "matrix_power": matrix_power,
    "multi_dot": multi_dot, "inv": LA.inv, "det": LA.det, "slogdet": LA.slogdet, "solve": LA.solve,
    "cholesky": LA.cholesky, "matmul": lambda x1, x2, /: M.matmul(x1, x2),
    "tensordot": lambda x1, x2, /, *, axes=2: tensordot(x1, x2, axes),
    "outer": lambda x1, x2, /: M.mul(A.expand_dims(x1, -1), x2), "trace": _linalg_trace,
    "diagonal": lambda x, /, *, offset=0: LA.diagonal(x, offset, -2, -1),
    "cross": lambda x1, x2, /, *, axis=-1: cross(x1, x2, axis=axis), "vecdot": _vecdot,
}
FUNCTIONS = {getattr(np, name): f for name, f in _BY_NAME.items()}
FUNCTIONS.update({getattr(np.linalg, name): f for name, f in _LINALG.items() if hasattr(np.linalg, name)})
# numpy 2's gufuncs of vectors
UFUNCS = {}
if hasattr(np, "vecdot"):
    UFUNCS[np.vecdot] = lambda x1, x2: _vecdot(x1, x2)
    UFUNCS[np.matvec] = lambda x1, x2: A.squeeze(M.matmul(x1, A.expand_dims(x2, -1)), -1)
    UFUNCS[np.vecmat] = lambda x1, x2: A.squeeze(M.matmul(A.expand_dims(x1, -2), x2), -2)

__all__: list[str] = []
