"""numpy's statistics and elementwise helpers composed of graph ops, step by step as numpy computes them (so
values and dtypes are numpy's, and gradients follow): np.median, np.percentile and np.quantile (the "linear"
method: a sort, two gathers and numpy's interpolation), the NaN-ignoring reductions (np.nansum, nanmean,
nanmax, ... : NaNs replaced, then counted), np.average (weights), np.ptp, np.cov and np.corrcoef,
np.trapezoid, np.isclose / allclose / array_equal / array_equiv, np.nan_to_num, np.isposinf / isneginf,
np.sinc, and np.real / imag / angle / conj of real tensors. What they do not cover (other quantile methods,
complex values, a size unknown where numpy's indices depend on it) runs numpy's own function (NumpyCall).
"""
from __future__ import annotations

import math

import numpy as np

from graph.ops import along_axis as L
from graph.ops import array as A
from graph.ops import creation as C
from graph.ops import indexing as I
from graph.ops import math as M
from graph.ops import reduce as R
from graph.ops import shape_ops as S
from graph.ops import ufuncs as U
from graph.ops.axes import normalize_axis
from graph.ops.conversion import constant, convert, convert_pair, is_tensor_like
from graph.ops.linalg import diagonal
from graph.ops.numpy_arrays import along, diff, dims, numpy_fallback, static_ints

_NO_VALUE = np._NoValue


def _given(v) -> bool:
    return v is not _NO_VALUE and v is not None


def _keep(keepdims) -> bool:
    return bool(keepdims) if keepdims is not _NO_VALUE else False


def _zero(dtype):
    return constant(np.zeros((), dtype))


# --------------------------------------------------------------------------- median, percentile, quantile

@numpy_fallback(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The mean of the middle one or two of the sorted values; NaN where a slice holds one (as numpy)."""
    t = convert(a)
    if out is not None or t.ndim is None or not static_ints(axis if axis is not None else 0) or t.dtype.kind == "c":
        return None
    flat = axis is None
    x = A.reshape(t, [-1]) if flat else t
    ax = 0 if flat else normalize_axis(axis, t.shape)
    n = x.shape[ax]
    if n is None or n == 0:
        return None
    part = L.sort(x, ax)
    middle = slice(n // 2, n // 2 + 1) if n % 2 else slice(n // 2 - 1, n // 2 + 1)
    result = R.reduce_mean(I.getitem(part, along(part, ax, middle)), ax)
    if t.dtype.kind == "f":
        last = I.getitem(part, along(part, ax, -1))
        result = A.where(M.isnan(last), M.cast(last, result.dtype), result)
    return _kept(result, t, axis) if keepdims else result


def _kept(result, t, axis):
    """A reduction's result with the reduced axes kept as 1s (keepdims)."""
    shape = dims(t)
    for i in range(t.ndim) if axis is None else (normalize_axis(axis, t.shape),):
        shape[i] = 1
    return A.reshape(result, shape)


# numpy's own index and weight computations of quantiles (numpy 2; private, so checked for, not relied on)
_IMPL = getattr(np.lib, "_function_base_impl", None)
_HELPERS = _IMPL is not None and all(hasattr(_IMPL, n) for n in ("_QuantileMethods", "_get_indexes", "_get_gamma"))


def _quantile(a, q, axis, method, keepdims, weights, weak_q: bool):
    """numpy's _quantile for method "linear", with q known when the graph is built: numpy's own virtual
    indexes, neighbours and weights, applied to the sorted tensor; None where numpy does otherwise."""
    impl = _IMPL
    t = convert(a)
    if not _HELPERS or method != "linear" or weights is not None or keepdims or is_tensor_like(q) \
            or t.ndim is None or not static_ints(axis if axis is not None else 0) or t.dtype.kind not in "iuf":
        return None
    q = np.asanyarray(q)
    x = A.reshape(t, [-1]) if axis is None else t
    ax = 0 if axis is None else normalize_axis(axis, t.shape)
    n = x.shape[ax]
    virtual = np.asanyarray(impl._QuantileMethods["linear"]["get_virtual_index"](n, q)) if n else None
    if n is None or n == 0 or q.ndim > 1 or virtual.dtype.kind != "f":
        return None
    prev, nxt = impl._get_indexes(np.empty(0, t.dtype), virtual, n)
    gamma = impl._get_gamma(virtual, prev, impl._QuantileMethods["linear"])
    rest = x.ndim - 1
    part = L.sort(x, ax)
    if ax:
        part = A.transpose(part, [ax] + [i for i in range(x.ndim) if i != ax])
    below = A.gather(part, constant(prev.astype(np.int64)), 0)
    above = A.gather(part, constant(nxt.astype(np.int64)), 0)
    gamma = float(gamma) if weak_q else constant(gamma.reshape(gamma.shape + (1,) * rest))
    result = _lerp(below, above, gamma)
    if t.dtype.kind == "f":
        last = I.getitem(part, -1)
        result = A.where(M.isnan(last), M.cast(last, result.dtype), result)
    return result


def _lerp(a, b, t):
    """numpy's _lerp: a + (b - a) t, computed from b's side where t >= 0.5 (in the result's dtype); a Python
    float t is weak, as numpy's gamma of a Python number q is."""
    diff_b_a = M.sub(b, a)
    lerp = M.add(a, M.mul(diff_b_a, t))
    one_minus = 1 - t if isinstance(t, float) else M.sub(1, t)
    from_b = M.cast(M.sub(b, M.mul(diff_b_a, one_minus)), lerp.dtype)
    if isinstance(t, float):
        return from_b if t >= 0.5 else lerp
    return A.where(M.greater_equal(t, 0.5), from_b, lerp)


@numpy_fallback(np.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
               interpolation=None):
    if out is not None or interpolation is not None or is_tensor_like(q):
        return None
    weak = type(q) in (int, float)
    return _quantile(a, np.true_divide(q, 100), axis, method, keepdims, weights, weak)


@numpy_fallback(np.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None,
             interpolation=None):
    if out is not None or interpolation is not None or is_tensor_like(q):
        return None
    return _quantile(a, q, axis, method, keepdims, weights, type(q) in (int, float))


# --------------------------------------------------------------------------- NaN-ignoring reductions

def _replaced(a, value):
    """numpy's _replace_nan: (a with NaNs replaced by `value`, the NaN mask) for floats, (a, None) otherwise."""
    t = convert(a)
    if t.dtype.kind != "f":
        return t, None
    mask = M.isnan(t)
    return A.where(mask, constant(np.asarray(value, t.dtype)), t), mask


def _nan_reduction(reduction, fill, np_func):
    @numpy_fallback(np_func)
    def impl(a, axis=None, dtype=None, out=None, keepdims=_NO_VALUE, initial=_NO_VALUE, where=_NO_VALUE):
        if out is not None or _given(initial) or _given(where) or convert(a).dtype.kind == "c":
            return None
        arr, _ = _replaced(a, fill)
        return reduction(arr, axis, _keep(keepdims), dtype)
    return impl


def _nan_extremum(reduction, fill, np_func):
    """nanmax / nanmin: NaNs replaced by -inf / inf, and NaN again where a slice held nothing else."""
    @numpy_fallback(np_func)
    def impl(a, axis=None, out=None, keepdims=_NO_VALUE, initial=_NO_VALUE, where=_NO_VALUE):
        if out is not None or _given(initial) or _given(where) or convert(a).dtype.kind == "c":
            return None
        arr, mask = _replaced(a, fill)
        result = reduction(arr, axis, _keep(keepdims))
        if mask is None:
            return result
        all_nan = R.reduce_all(mask, axis, _keep(keepdims))
        return A.where(all_nan, constant(np.asarray(np.nan, result.dtype)), result)
    return impl


def _count(mask, axis, keepdims):
    return R.reduce_sum(M.logical_not(mask), axis, keepdims, dtype=np.intp)


def _divide_by_count(total, count):
    """numpy's _divide_by_count: the quotient cast back to the total's dtype."""
    return M.cast(M.truediv(total, count), total.dtype)


@numpy_fallback(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=_NO_VALUE, *, where=_NO_VALUE):
    arr, mask = _replaced(a, 0)
    if out is not None or _given(where) or arr.dtype.kind == "c":
        return None
    if mask is None:
        return R.reduce_mean(arr, axis, _keep(keepdims), dtype)
    total = R.reduce_sum(arr, axis, _keep(keepdims), dtype)
    return _divide_by_count(total, _count(mask, axis, _keep(keepdims)))


def _nan_var(a, axis, dtype, ddof, keepdims):
    """numpy's nanvar: deviations from the NaN-ignoring mean, squared, zeroed at the NaNs, summed, divided."""
    arr, mask = _replaced(a, 0)
    if mask is None:
        return R.var(arr if dtype is None else M.cast(arr, dtype), axis, keepdims, ddof)
    count = _count(mask, axis, True)
    avg = _divide_by_count(R.reduce_sum(arr, axis, True, dtype), count)
    dev = M.cast(M.sub(arr, avg), arr.dtype)
    dev = A.where(mask, _zero(dev.dtype), dev)
    var = R.reduce_sum(M.mul(dev, dev), axis, keepdims, dtype)
    dof = M.sub(count if keepdims else A.reshape(count, S.shape_of(var)), ddof)
    var = _divide_by_count(var, dof)
    return A.where(M.less_equal(dof, 0), constant(np.asarray(np.nan, var.dtype)), var)


def _nan_moment(take_root: bool, np_func):
    @numpy_fallback(np_func)
    def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NO_VALUE, *, where=_NO_VALUE, mean=_NO_VALUE,
             correction=_NO_VALUE):
        if out is not None or _given(where) or _given(mean) or _given(correction) or convert(a).dtype.kind == "c" \
                or not static_ints(ddof):
            return None
        var = _nan_var(a, axis, dtype, ddof, _keep(keepdims))
        return M.sqrt(var) if take_root else var
    return impl


def _nan_cumulative(builder, fill, np_func):
    @numpy_fallback(np_func)
    def impl(a, axis=None, dtype=None, out=None):
        if out is not None:
            return None
        return builder(_replaced(a, fill)[0], axis, dtype)
    return impl


# --------------------------------------------------------------------------- average, ptp, cov, corrcoef, trapezoid

@numpy_fallback(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=_NO_VALUE):
    t = convert(a)
    if t.ndim is None or not static_ints(axis if axis is not None else 0) or t.dtype.kind == "c":
        return None
    keep = _keep(keepdims)
    if weights is None:
        avg = R.reduce_mean(t, axis, keep)
        if not returned:
            return avg
        return avg, M.cast(M.truediv(M.cast(S.size(t), np.float64), M.cast(S.size(avg), np.float64)), avg.dtype)
    w = _weights(t, convert(weights), axis)
    if w is None:
        return None
    kind = np.result_type(t.dtype, w.dtype, "f8") if t.dtype.kind in "biu" else np.result_type(t.dtype, w.dtype)
    scl = R.reduce_sum(w, axis, keep, dtype=kind)
    avg = M.truediv(R.reduce_sum(M.mul(M.cast(t, kind), M.cast(w, kind)), axis, keep), scl)
    if not returned:
        return avg
    return avg, (scl if scl.shape == avg.shape else A.broadcast_to(scl, S.shape_of(avg)))


def _weights(t, w, axis):
    """np.average's weights: t's shape, or 1-D along an int axis (reshaped to broadcast there)."""
    if w.ndim == t.ndim:
        return w
    if w.ndim != 1 or axis is None or isinstance(axis, (tuple, list)):
        return None
    ax = normalize_axis(axis, t.shape)
    return A.reshape(w, [-1 if i == ax else 1 for i in range(t.ndim)])


@numpy_fallback(np.ptp)
def ptp(a, axis=None, out=None, keepdims=_NO_VALUE):
    if out is not None:
        return None
    return M.sub(R.reduce_max(a, axis, _keep(keepdims)), R.reduce_min(a, axis, _keep(keepdims)))


@numpy_fallback(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """numpy's cov without weights: variables as rows, centred, X X^T scaled by 1 / (N - ddof)."""
    ts = [convert(v) for v in (m, y) if v is not None]
    if fweights is not None or aweights is not None or any(t.ndim is None or t.ndim > 2 or t.dtype.kind == "c"
                                                           for t in ts) or not static_ints(ddof or 0):
        return None
    dtype = np.result_type(*(t.dtype for t in ts), np.float64) if dtype is None else np.dtype(dtype)
    rows = [_rows(t, not rowvar and (k == 0 and t.ndim != 1 or k == 1 and t.ndim == 2 and t.shape[0] != 1), dtype)
            for k, t in enumerate(ts)]
    x = A.concat(rows, 0) if len(rows) > 1 else rows[0]
    n = x.shape[1]
    if not x.shape[0] or n is None or (y is not None and ts[1].ndim == 2 and ts[1].shape[0] is None and not rowvar):
        return None  # no variables (numpy's empty result), or a transpose that depends on an unknown size
    ddof = (0 if bias else 1) if ddof is None else ddof
    fact = max(n - ddof, 0.0)
    centred = M.sub(x, A.expand_dims(R.reduce_mean(x, 1), 1))
    c = M.matmul(centred, A.transpose(centred))
    with np.errstate(divide="ignore"):
        c = M.cast(M.mul(c, constant(np.true_divide(1, fact))), c.dtype)  # c *= 1/fact: a float64 scalar
    return A.reshape(c, []) if x.shape[0] == 1 else c


def _rows(x, transpose: bool, dtype):
    """np.cov's X: at least 2-D (a vector is one row), transposed where numpy transposes it, in `dtype`."""
    x = M.cast(A.reshape(x, [1, -1]) if x.ndim < 2 else x, dtype)
    return A.transpose(x) if transpose else x


@numpy_fallback(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim not in (0, 2):
        return None  # numpy's cov ran (a size unknown): its rank is numpy's to decide
    if c.ndim == 0:
        return M.truediv(c, c)
    stddev = M.sqrt(diagonal(c))
    c = M.truediv(M.truediv(c, A.expand_dims(stddev, 1)), A.expand_dims(stddev, 0))
    return M.minimum(M.maximum(c, -1), 1)


@numpy_fallback(getattr(np, "trapezoid", None))  # numpy 2
def trapezoid(y, x=None, dx=1.0, axis=-1):
    t = convert(y)
    if t.ndim is None or not static_ints(axis):
        return None
    axis = normalize_axis(axis, t.shape)
    if x is None:
        d = dx
    else:
        xs = convert(x)
        if xs.ndim is None:
            return None
        d = diff(xs) if xs.ndim == 1 else diff(xs, axis=axis)
        if xs.ndim == 1:
            d = A.reshape(d, [-1 if i == axis else 1 for i in range(t.ndim)])
    upper = I.getitem(t, along(t, axis, slice(1, None)))
    lower = I.getitem(t, along(t, axis, slice(None, -1)))
    return R.reduce_sum(M.truediv(M.mul(d, M.add(upper, lower)), 2.0), axis)


# --------------------------------------------------------------------------- comparisons of arrays

@numpy_fallback(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if is_tensor_like(rtol) or is_tensor_like(atol):
        return None
    x, y = convert(a) if is_tensor_like(a) else a, convert(b) if is_tensor_like(b) else b
    if is_tensor_like(y):  # numpy's: y in at least float
        y = M.cast(y, np.result_type(y.dtype, 1.0))
    elif isinstance(y, (np.ndarray, np.generic)):
        y = np.asarray(y, dtype=np.result_type(y, 1.0))
    elif isinstance(y, int):
        y = float(y)
    x, y = convert_pair(x, y)
    close = M.logical_and(M.less_equal(M.abs(M.sub(x, y)), M.add(atol, M.mul(rtol, M.abs(y)))), M.isfinite(y))
    result = M.logical_or(close, M.equal(x, y))
    if equal_nan:
        result = M.logical_or(result, M.logical_and(M.isnan(x), M.isnan(y)))
    return result


@numpy_fallback(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return R.reduce_all(isclose(a, b, rtol, atol, equal_nan))


@numpy_fallback(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    """With shapes known when the graph is built: False at once where they differ, else all(a1 == a2)."""
    x, y = convert(a1), convert(a2)
    if x.shape is None or y.shape is None or None in x.shape or None in y.shape:
        return None
    if x.shape != y.shape:
        return constant(np.bool_(False))
    same = M.equal(x, y)
    if equal_nan and x.dtype.kind in "fc" and y.dtype.kind in "fc":
        same = M.logical_or(same, M.logical_and(M.isnan(x), M.isnan(y)))
    return R.reduce_all(same)


@numpy_fallback(np.array_equiv)
def array_equiv(a1, a2):
    x, y = convert(a1), convert(a2)
    if x.shape is None or y.shape is None or None in x.shape or None in y.shape:
        return None
    if not _broadcastable(x.shape, y.shape):
        return constant(np.bool_(False))
    return R.reduce_all(M.equal(x, y))


def _broadcastable(s1, s2) -> bool:
    return all(a == b or a == 1 or b == 1 for a, b in zip(reversed(s1), reversed(s2), strict=False))


# --------------------------------------------------------------------------- elementwise

@numpy_fallback(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    t = convert(x)
    if t.dtype.kind in "biu":
        return t
    if t.dtype.kind != "f" or any(is_tensor_like(v) for v in (nan, posinf, neginf)):
        return None
    info = np.finfo(t.dtype)
    for mask, value in ((M.isnan(t), nan), (isposinf(t), info.max if posinf is None else posinf),
                        (isneginf(t), info.min if neginf is None else neginf)):
        t = A.where(mask, constant(np.asarray(value).astype(t.dtype)), t)
    return t


@numpy_fallback(np.isposinf)
def isposinf(x, out=None):
    t = convert(x)
    if out is not None or t.dtype.kind == "c":
        return None
    return M.logical_and(U.BUILDERS["IsInf"](t), M.logical_not(U.BUILDERS["SignBit"](t)))


@numpy_fallback(np.isneginf)
def isneginf(x, out=None):
    t = convert(x)
    if out is not None or t.dtype.kind == "c":
        return None
    return M.logical_and(U.BUILDERS["IsInf"](t), U.BUILDERS["SignBit"](t))


@numpy_fallback(np.sinc)
def sinc(x):
    """numpy's: y = pi x, with the zeros replaced by eps, then sin(y) / y."""
    t = M.mul(math.pi, convert(x))
    if t.dtype.kind != "f":
        return None
    y = A.where(M.not_equal(t, 0), t, constant(np.asarray(np.finfo(t.dtype).eps, t.dtype)))
    return M.truediv(M.sin(y), y)


def _of_real(fn, np_func):
    """np.real, np.imag, np.angle, np.conj of a real tensor; complex ones go to numpy."""
    @numpy_fallback(np_func)
    def impl(val, *args, **kwargs):
        t = convert(val)
        return None if t.dtype.kind == "c" else fn(t, *args, **kwargs)
    return impl


def _angle(t, deg=False):
    a = M.atan2(0, t)  # numpy: arctan2(0, z), a weak Python 0
    return M.mul(a, 180 / math.pi) if deg else a


FUNCTIONS = {
    np.median: median, np.percentile: percentile, np.quantile: quantile,
    np.nansum: _nan_reduction(R.reduce_sum, 0, np.nansum), np.nanprod: _nan_reduction(R.reduce_prod, 1, np.nanprod),
    np.nanmax: _nan_extremum(R.reduce_max, -np.inf, np.nanmax),
    np.nanmin: _nan_extremum(R.reduce_min, np.inf, np.nanmin), np.nanmean: nanmean,
    np.nanvar: _nan_moment(False, np.nanvar), np.nanstd: _nan_moment(True, np.nanstd),
    np.nancumsum: _nan_cumulative(L.cumsum, 0, np.nancumsum),
    np.nancumprod: _nan_cumulative(L.cumprod, 1, np.nancumprod),
    np.average: average, np.ptp: ptp, np.cov: cov, np.corrcoef: corrcoef,
    np.isclose: isclose, np.allclose: allclose, np.array_equal: array_equal, np.array_equiv: array_equiv,
    np.nan_to_num: nan_to_num, np.isposinf: isposinf, np.isneginf: isneginf, np.sinc: sinc,
    np.real: _of_real(lambda t: t, np.real), np.imag: _of_real(C.zeros_like, np.imag),
    np.angle: _of_real(_angle, np.angle),
}
if hasattr(np, "trapezoid"):
    FUNCTIONS[np.trapezoid] = trapezoid

__all__: list[str] = []
