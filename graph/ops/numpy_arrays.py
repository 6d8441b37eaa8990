"""numpy's array manipulation functions composed of graph ops, as numpy computes them (so values, dtypes and
gradients follow): np.roll (slices joined; a gather for a tensor shift or an unknown size), np.diff (slice
differences), np.tril / np.triu (a mask from two ranges), np.diag / diagflat / diagonal / trace, np.kron,
np.repeat, np.fliplr / flipud / rot90, np.atleast_1d/2d/3d, column_stack, dstack, hsplit / vsplit / dsplit /
array_split, np.meshgrid, np.broadcast_arrays, np.append, np.delete, np.cumulative_sum / cumulative_prod and
the transposes. A form these do not cover (an argument that is a tensor where numpy needs a Python value, a
rank unknown when the graph is built) runs numpy's own function on the values instead (NumpyCall: exact,
without a gradient).
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from graph import shapes as _sh
from graph.node import Tensor
from graph.ops import along_axis as L
from graph.ops import array as A
from graph.ops import creation as C
from graph.ops import indexing as I
from graph.ops import linalg as LA
from graph.ops import math as M
from graph.ops import reduce as R
from graph.ops import shape_ops as S
from graph.ops.axes import normalize_axis
from graph.ops.conversion import constant, convert, convert_pair, is_tensor_like
from graph.ops.numpy_call import numpy_call

_NO_VALUE = np._NoValue  # numpy's "argument not given" (np.diff's prepend and append)


def numpy_fallback(np_func):
    """Decorator: the function's graph composition, or numpy's `np_func` on the values (NumpyCall) where the
    composition gives None (a form it does not cover)."""
    def wrap(impl):
        @functools.wraps(impl)
        def call(*args, **kwargs):
            out = impl(*args, **kwargs)
            return numpy_call(np_func, *args, **kwargs) if out is None else out
        return call
    return wrap


def dim(t: Tensor, i: int):
    """Dimension i of t: an int when known, else a scalar int64 tensor."""
    d = t.shape[i]
    return d if d is not None else S.shape(t)[i]


def dims(t: Tensor) -> list:
    return [dim(t, i) for i in range(t.ndim)]


def static_ints(value) -> bool:
    """Whether `value` is a Python int or a sequence of them (no tensors)."""
    if isinstance(value, (list, tuple)):
        return all(static_ints(v) for v in value)
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def along(t: Tensor, axis: int, index) -> tuple:
    """An index selecting `index` (an int or a slice) on `axis` of t, everything on the others."""
    return (slice(None),) * axis + (index,)


# --------------------------------------------------------------------------- roll, diff

@numpy_fallback(np.roll)
def roll(a, shift, axis=None):
    t = convert(a)
    if t.ndim is None or not static_ints(axis if axis is not None else 0):
        return None
    if axis is None:
        flat = roll(A.reshape(t, [-1]), shift, 0)
        return A.reshape(flat, S.shape_of(t))
    if is_tensor_like(shift) and isinstance(axis, (int, np.integer)):
        return _roll_gather(t, convert(shift), normalize_axis(axis, t.shape))
    if not static_ints(shift):
        return None
    totals: dict[int, int] = {}
    for s, ax in np.broadcast(shift, axis):  # numpy's pairing: one shift per axis, repeated axes add up
        ax = normalize_axis(ax, t.shape)
        totals[ax] = totals.get(ax, 0) + int(s)
    for ax, s in totals.items():
        t = _roll_axis(t, s, ax)
    return t


def _roll_axis(t: Tensor, s: int, ax: int) -> Tensor:
    n = t.shape[ax]
    if n is None:
        return _roll_gather(t, constant(np.int64(s)), ax)
    if n == 0 or s % n == 0:
        return t
    k = n - s % n  # the last s items come first
    return A.concat([I.getitem(t, along(t, ax, slice(k, None))), I.getitem(t, along(t, ax, slice(None, k)))], ax)


def _roll_gather(t: Tensor, shift: Tensor, ax: int) -> Tensor:
    """np.roll by a tensor shift, or along an axis of unknown size: item i comes from (i - shift) mod n."""
    n = dim(t, ax)
    source = M.mod(M.sub(C.range(n), M.cast(shift, np.int64)), n)
    return A.gather(t, source, ax)


@numpy_fallback(np.diff)
def diff(a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE):
    t = convert(a)
    if t.ndim is None or not static_ints(n) or not static_ints(axis):
        return None
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if n == 0:
        return t
    if t.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, t.shape)
    parts = [_edge(v, t, axis) for v in (prepend,) if v is not _NO_VALUE] + [t] \
        + [_edge(v, t, axis) for v in (append,) if v is not _NO_VALUE]
    t = A.concat(parts, axis) if len(parts) > 1 else t
    op = M.not_equal if t.dtype == np.bool_ else M.sub
    for _ in range(n):
        t = op(I.getitem(t, along(t, axis, slice(1, None))), I.getitem(t, along(t, axis, slice(None, -1))))
    return t


def _edge(value, t: Tensor, axis: int) -> Tensor:
    """np.diff's prepend / append: a scalar is broadcast to t's shape with 1 along the axis."""
    v = convert(value)
    if v.ndim == 0:
        shape = dims(t)
        shape[axis] = 1
        v = A.broadcast_to(v, shape)
    return v


@numpy_fallback(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    t = A.reshape(convert(ary), [-1])
    if t.dtype == np.bool_ or any(v is not None and not is_tensor_like(v) and np.ndim(v) > 1 for v in (to_end, to_begin)):
        return None  # numpy's casting rules for these are its own
    parts = [M.cast(A.reshape(convert(v), [-1]), t.dtype) for v in (to_begin,) if v is not None]
    parts.append(M.sub(I.getitem(t, slice(1, None)), I.getitem(t, slice(None, -1))))
    parts += [M.cast(A.reshape(convert(v), [-1]), t.dtype) for v in (to_end,) if v is not None]
    return A.concat(parts, 0) if len(parts) > 1 else parts[0]


# --------------------------------------------------------------------------- triangles and diagonals

def _triangle_mask(m: Tensor, k: int) -> Tensor:
    """np.tri(*m.shape[-2:], k): True at (i, j) where j <= i + k."""
    rows = A.reshape(C.range(dim(m, -2 % m.ndim)), [-1, 1])
    cols = A.reshape(C.range(dim(m, -1 % m.ndim)), [1, -1])
    return M.greater_equal(M.add(rows, k), cols)


@numpy_fallback(np.tril)
def tril(m, k=0):
    t = convert(m)
    if t.ndim is None or t.ndim < 2 or not static_ints(k):
        return None
    return A.where(_triangle_mask(t, k), t, constant(np.zeros((), t.dtype)))


@numpy_fallback(np.triu)
def triu(m, k=0):
    t = convert(m)
    if t.ndim is None or t.ndim < 2 or not static_ints(k):
        return None
    return A.where(_triangle_mask(t, k - 1), constant(np.zeros((), t.dtype)), t)


@numpy_fallback(np.diag)
def diag(v, k=0):
    t = convert(v)
    if t.ndim is None or not static_ints(k):
        return None
    if t.ndim == 2:
        return LA.diagonal(t, k)
    if t.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = M.add(dim(t, 0), abs(k)) if t.shape[0] is None else t.shape[0] + abs(k)
    return LA.diagonal_embed(t, [n, n], k)


@numpy_fallback(np.diagflat)
def diagflat(v, k=0):
    return diag(A.reshape(convert(v), [-1]), k) if static_ints(k) else None


@numpy_fallback(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    t = convert(a)
    if t.ndim is None or not static_ints((offset, axis1, axis2)):
        return None
    return LA.diagonal(t, offset, axis1, axis2)


@numpy_fallback(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None or convert(a).ndim is None or not static_ints((offset, axis1, axis2)):
        return None
    return R.reduce_sum(LA.diagonal(a, offset, axis1, axis2), -1, dtype=dtype)


# --------------------------------------------------------------------------- kron, repeat

@numpy_fallback(np.kron)
def kron(a, b):
    """numpy's kron: the operands' axes interleaved (a's at even places), multiplied, then merged pairwise."""
    a, b = convert(a), convert(b)
    if a.ndim is None or b.ndim is None:
        return None
    nd = max(a.ndim, b.ndim)
    a_dims = [1] * (nd - a.ndim) + dims(a)
    b_dims = [1] * (nd - b.ndim) + dims(b)
    a = A.reshape(a, [d for x in a_dims for d in (x, 1)])
    b = A.reshape(b, [d for x in b_dims for d in (1, x)])
    merged = [x * y if isinstance(x, int) and isinstance(y, int) else M.mul(x, y) for x, y in zip(a_dims, b_dims,
                                                                                               strict=True)]
    return A.reshape(M.mul(a, b), merged)


@numpy_fallback(np.repeat)
def repeat(a, repeats, axis=None):
    t = convert(a)
    if t.ndim is None or is_tensor_like(repeats) or not static_ints(axis if axis is not None else 0):
        return None  # a tensor of counts: the result's size depends on the values
    if axis is None:
        t, axis = A.reshape(t, [-1]), 0
    axis = normalize_axis(axis, t.shape)
    counts = np.asarray(repeats)
    counts = counts.astype(np.intp) if counts.size == 0 else counts  # [] is numpy's empty list of counts
    if counts.ndim == 0 or counts.size == 1:
        r = int(counts.reshape(()))
        if r < 0:
            raise ValueError("repeats may not contain negative values")
        spread = A.broadcast_to(A.expand_dims(t, axis + 1), dims(t)[:axis + 1] + [r] + dims(t)[axis + 1:])
        out_dims = dims(t)
        out_dims[axis] = M.mul(out_dims[axis], r) if is_tensor_like(out_dims[axis]) else out_dims[axis] * r
        return A.reshape(spread, out_dims)
    # one count per item: the items' indices, repeated as numpy repeats them
    return A.gather(t, constant(np.repeat(np.arange(counts.size), counts)), axis)


# --------------------------------------------------------------------------- flips and rotations

def _flip(t: Tensor, axes) -> Tensor:
    return I.getitem(t, tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(t.ndim)))


@numpy_fallback(np.fliplr)
def fliplr(m):
    t = convert(m)
    if t.ndim is not None and t.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return None if t.ndim is None else _flip(t, (1,))


@numpy_fallback(np.flipud)
def flipud(m):
    t = convert(m)
    if t.ndim is not None and t.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return None if t.ndim is None else _flip(t, (0,))


@numpy_fallback(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    """numpy's rot90: flips and a transpose of the two axes."""
    t = convert(m)
    if t.ndim is None or not static_ints((k, *axes)) or len(axes) != 2:
        return None
    a0, a1 = normalize_axis(axes[0], t.shape), normalize_axis(axes[1], t.shape)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k %= 4
    if k == 0:
        return t
    if k == 2:
        return _flip(t, (a0, a1))
    perm = list(range(t.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return A.transpose(_flip(t, (a1,)), perm) if k == 1 else _flip(A.transpose(t, perm), (a1,))


# --------------------------------------------------------------------------- ranks, stacks and splits

def _at_least(t: Tensor, n: int) -> Tensor | None:
    """numpy's atleast_Nd for one tensor: 0-d -> 1 x ... x 1; 1-D (n) -> (1, n) or (1, n, 1); 2-D (3-D): (m, n, 1)."""
    if t.ndim is None:
        return None
    if t.ndim >= n:
        return t
    if t.ndim == 0:
        return A.reshape(t, [1] * n)
    if t.ndim == 1:
        return A.expand_dims(t, 0) if n == 2 else A.reshape(t, [1, -1, 1] if t.shape[0] is None else [1, t.shape[0], 1])
    return A.expand_dims(t, -1)


def _atleast(n: int, np_func):
    @numpy_fallback(np_func)
    def impl(*arys):
        out = [_at_least(convert(a), n) for a in arys]
        if any(o is None for o in out):
            return None
        return out[0] if len(out) == 1 else tuple(out)
    return impl


@numpy_fallback(np.column_stack)
def column_stack(tup):
    ts = [convert(t) for t in tup]
    if any(t.ndim is None for t in ts):
        return None
    return A.concat([A.reshape(t, [-1, 1]) if t.ndim < 2 else t for t in ts], 1)


@numpy_fallback(np.dstack)
def dstack(tup):
    ts = [_at_least(convert(t), 3) for t in tup]
    return None if any(t is None for t in ts) else A.concat(ts, 2)


@numpy_fallback(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    """numpy's sections: the first (size mod n) parts one item longer (a known size, or cut points)."""
    t = convert(ary)
    if t.ndim is None or not static_ints((indices_or_sections, axis)):
        return None
    axis = normalize_axis(axis, t.shape)
    if isinstance(indices_or_sections, (list, tuple)):
        cuts = [0, *indices_or_sections, None]
    elif t.shape[axis] is None:
        return None
    else:
        n = operator.index(indices_or_sections)
        if n <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extras = divmod(t.shape[axis], n)
        cuts = list(np.cumsum([0] + extras * [each + 1] + (n - extras) * [each]))
    return [I.getitem(t, along(t, axis, slice(int(lo), None if hi is None else int(hi))))
            for lo, hi in zip(cuts[:-1], cuts[1:], strict=True)]


def _split_along(min_rank: int, np_func):
    """hsplit / vsplit / dsplit: np.split along the axis numpy picks (hsplit: 0 for vectors, else 1)."""
    @numpy_fallback(np_func)
    def impl(ary, indices_or_sections):
        t = convert(ary)
        if t.ndim is None or not static_ints(indices_or_sections):
            return None
        if t.ndim < min_rank:
            raise ValueError(f"{np_func.__name__} only works on arrays of {min_rank} or more dimensions")
        axis = {np.hsplit: 0 if t.ndim == 1 else 1, np.vsplit: 0, np.dsplit: 2}[np_func]
        return A.split(t, indices_or_sections, axis)
    return impl


@numpy_fallback(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ts = [A.reshape(convert(x), [-1]) for x in xi]
    n = len(ts)
    shapes = [[1] * n for _ in ts]
    for i in range(n):
        shapes[i][i] = -1
    if indexing == "xy" and n > 1:
        shapes[0][:2], shapes[1][:2] = [1, -1], [-1, 1]
    out = [A.reshape(t, s) for t, s in zip(ts, shapes, strict=True)]
    if not sparse:
        out = list(broadcast_arrays(*out))
    return tuple(out)


@numpy_fallback(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    ts = [convert(a) for a in args]
    if any(t.ndim is None for t in ts):
        return None
    nd = max((t.ndim for t in ts), default=0)
    static = [(1,) * (nd - t.ndim) + tuple(t.shape) for t in ts]
    shape = functools.reduce(_sh.broadcast, static, ())
    if not _sh.is_fully_defined(shape):  # the largest of each dimension (numpy has checked the others are 1)
        padded = [M.cast(A.concat([constant(np.ones(nd - t.ndim, np.int64)), S.shape(t)], 0), np.int64)
                  if t.ndim < nd else S.shape(t) for t in ts]
        shape = functools.reduce(M.maximum, padded)
    return tuple(t if isinstance(shape, tuple) and t.shape == shape else A.broadcast_to(t, shape) for t in ts)


# --------------------------------------------------------------------------- axes

@numpy_fallback(np.rollaxis)
def rollaxis(a, axis, start=0):
    t = convert(a)
    if t.ndim is None or not static_ints((axis, start)):
        return None
    n = t.ndim
    axis = normalize_axis(axis, t.shape)
    if not -n <= start <= n:
        raise ValueError(f"start arg requires {-n} <= start < {n + 1}, but {start} was passed in")
    start = start + n if start < 0 else start
    if axis < start:
        start -= 1
    if axis == start:
        return t
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return A.transpose(t, order)


@numpy_fallback(getattr(np, "matrix_transpose", None))  # numpy 2
def matrix_transpose(x):
    t = convert(x)
    if t.ndim is None:
        return None
    if t.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {t.ndim}")
    perm = list(range(t.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return A.transpose(t, perm)


# --------------------------------------------------------------------------- appending, deleting, cumulating

@numpy_fallback(np.append)
def append(arr, values, axis=None):
    if axis is None:
        return A.concat([A.reshape(convert(arr), [-1]), A.reshape(convert(values), [-1])], 0)
    return A.concat([arr, values], axis) if static_ints(axis) else None


@numpy_fallback(np.delete)
def delete(arr, obj, axis=None):
    """With the deleted items known when the graph is built: a gather of the others."""
    t = convert(arr)
    if is_tensor_like(obj) or t.ndim is None or not static_ints(axis if axis is not None else 0):
        return None
    if axis is None:
        t, axis = A.reshape(t, [-1]), 0
    axis = normalize_axis(axis, t.shape)
    n = t.shape[axis]
    if n is None:
        return None
    kept = np.delete(np.arange(n), obj)
    return A.gather(t, constant(kept.astype(np.int64)), axis)


def _cumulative(builder, identity, np_func):
    @numpy_fallback(np_func)
    def impl(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        t = convert(x)
        if out is not None or t.ndim is None:
            return None
        if axis is None:
            if t.ndim != 1:
                raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
            axis = 0
        axis = normalize_axis(axis, t.shape)
        result = builder(t, axis, dtype)
        if not include_initial:
            return result
        shape = dims(result)
        shape[axis] = 1
        return A.concat([C.fill(shape, constant(np.asarray(identity, result.dtype))), result], axis)
    return impl


# --------------------------------------------------------------------------- linspace, logspace, take_along_axis

@numpy_fallback(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """numpy's linspace: arange(num) times the step (times delta / div where a step underflows to 0), plus start,
    the last row set to stop; the dtype at least float, as numpy's."""
    if not static_ints((num, axis)):
        return None  # a tensor count: how many values, only the value tells
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    s, e = convert_pair(start, stop)  # a Python number beside a tensor is weak, as in numpy
    dt = np.result_type(s.dtype, e.dtype, 1.0) if s.dtype.kind in "biu" and e.dtype.kind in "biu" \
        else np.result_type(s.dtype, e.dtype)
    delta = M.sub(M.cast(e, dt), M.cast(s, dt))
    if delta.ndim is None:
        return None
    y = A.reshape(C.range(0, num, dtype=dt), [-1] + [1] * delta.ndim)
    if div > 0:
        step = M.truediv(delta, div)
        underflow = R.reduce_any(M.equal(step, 0))  # numpy then divides first, for denormal steps
        y = A.where(underflow, M.mul(M.truediv(y, div), delta), M.mul(y, step))
    else:
        step = constant(np.float64(np.nan))
        y = M.mul(y, delta)
    y = M.cast(M.add(y, s), dt)
    if endpoint and num > 1:
        last = A.expand_dims(M.cast(A.broadcast_to(e, S.shape_of(delta)) if e.shape != delta.shape else e, dt), 0)
        y = A.concat([I.getitem(y, slice(None, -1)), last], 0)
    if axis != 0:
        y = A.transpose(y, _moved_first(y.ndim, normalize_axis(axis, y.shape)))
    if dtype is not None and np.issubdtype(dtype, np.integer):
        y = M.floor(y)
    y = y if dtype is None else M.cast(y, dtype)
    return (y, step) if retstep else y


def _moved_first(nd: int, axis: int) -> list[int]:
    """The transpose that moves axis 0 to `axis` (np.moveaxis(y, 0, axis))."""
    order = list(range(1, nd))
    order.insert(axis, 0)
    return order


@numpy_fallback(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    if not isinstance(base, (float, int)):
        return None
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    out = M.pow(base, y)
    return out if dtype is None else M.cast(out, dtype)


@numpy_fallback(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    """numpy's: arr indexed by aranges on the other axes (shaped to broadcast) and `indices` on `axis`."""
    t, idx = convert(arr), convert(indices)
    if axis is None:
        t, axis = A.reshape(t, [-1]), 0
    if t.ndim is None or idx.ndim is None or not static_ints(axis):
        return None
    if t.ndim != idx.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = normalize_axis(axis, t.shape)
    key = tuple(idx if i == axis else A.reshape(C.range(dim(t, i)), [-1 if k == i else 1 for k in range(t.ndim)])
                for i in range(t.ndim))
    return I.getitem(t, key)


def add_at(a, indices, b):
    """`np.add.at(a, indices, b)` as a new tensor: `a` with `b` added at `indices`, repeated indices adding up
    (numpy's unbuffered ufunc.at), in a's dtype. Graph tensors are immutable, so np.add.at cannot write into one."""
    t = convert(a)
    index, dyn = I.parse_index(indices)
    picked = I.getitem(t, indices)
    shape = picked.shape if picked.shape is not None and None not in picked.shape else S.shape(picked)
    values = A.broadcast_to(M.cast(convert(b), t.dtype), shape)
    return M.add(t, I.get_item_grad(values, S.shape_of(t), index, dyn))


def _astype(x, dtype, /, *, copy=True, device=None):
    return M.cast(x, dtype)


def _empty_like(prototype, dtype=None, order="K", subok=True, shape=None, **kwargs):
    """np.empty_like: its values are whatever memory held, so zeros are as good (as np.empty gives)."""
    if shape is None:
        return C.zeros_like(prototype, dtype)
    return C.zeros(shape, dtype if dtype is not None else convert(prototype).dtype)


# by name: some are numpy 2's alone
_BY_NAME = {
    "roll": roll, "diff": diff, "ediff1d": ediff1d, "tril": tril, "triu": triu, "diag": diag,
    "diagflat": diagflat, "diagonal": diagonal, "trace": trace, "kron": kron, "repeat": repeat,
    "fliplr": fliplr, "flipud": flipud, "rot90": rot90,
    "atleast_1d": _atleast(1, np.atleast_1d), "atleast_2d": _atleast(2, np.atleast_2d),
    "atleast_3d": _atleast(3, np.atleast_3d), "column_stack": column_stack, "dstack": dstack,
    "array_split": array_split, "hsplit": _split_along(1, np.hsplit), "vsplit": _split_along(2, np.vsplit),
    "dsplit": _split_along(3, np.dsplit), "meshgrid": meshgrid, "broadcast_arrays": broadcast_arrays,
    "rollaxis": rollaxis, "matrix_transpose": matrix_transpose, "permute_dims": lambda a, axes=None: A.transpose(a, axes),
    "astype": _astype, "append": append, "delete": delete, "empty_like": _empty_like,
    "unstack": lambda x, /, *, axis=0: tuple(A.unstack(x, axis=axis)),
    "linspace": linspace, "logspace": logspace, "take_along_axis": take_along_axis,
}
if hasattr(np, "cumulative_sum"):
    _BY_NAME["cumulative_sum"] = _cumulative(L.cumsum, 0, np.cumulative_sum)
    _BY_NAME["cumulative_prod"] = _cumulative(L.cumprod, 1, np.cumulative_prod)
FUNCTIONS = {getattr(np, name): impl for name, impl in _BY_NAME.items() if hasattr(np, name)}
if hasattr(np.linalg, "matrix_transpose"):
    FUNCTIONS[np.linalg.matrix_transpose] = matrix_transpose

__all__ = ["add_at"]
