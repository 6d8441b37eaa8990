"""numpy's array manipulation and statistics functions on graph tensors (graph/ops/numpy_arrays.py,
numpy_stats.py): numpy's values, dtypes and shapes over generated shapes, dtypes, values (NaN among them) and
arguments, in the compiled and the dataflow mode, and raising where numpy raises; gradients equal to finite
differences; ONNX exports computing the same in onnxruntime."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grad
import graph as G
from exec import Session
from tests.grad.gradcheck import check_gradients
from tests.graph.numpy_checks import SETTINGS, arrays, check_numpy, nonempty_shapes, shapes

_DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.float32, np.float64]
_NUMBERS = [np.int8, np.int32, np.int64, np.float32, np.float64]


def _axis(data, ndim, allow_none=True):
    choices = list(range(-ndim, ndim)) + ([None] if allow_none else [])
    return data.draw(st.sampled_from(choices)) if choices else None


@settings(max_examples=60, **SETTINGS)
@given(st.data(), shapes, st.sampled_from(_DTYPES))
def test_roll_diff_and_repeat_as_numpy(data, shape, dtype):
    x = arrays(data, shape, dtype)
    axis = _axis(data, len(shape))
    shift = data.draw(st.integers(-5, 5))
    check_numpy(lambda t: np.roll(t, shift, axis), x)
    if len(shape) >= 2:
        check_numpy(lambda t: np.roll(t, (shift, 1), (0, -1)), x)
    check_numpy(lambda t, s: np.roll(t, s, 0), x, np.int64(shift), placeholders=("static",))  # a tensor shift
    n = data.draw(st.integers(0, 3))
    check_numpy(lambda t: np.diff(t, n, -1 if axis is None else axis), x)
    check_numpy(lambda t: np.diff(t, axis=0, prepend=0, append=t[:1] if len(shape) else 0), x)
    check_numpy(lambda t: (np.ediff1d(t), np.ediff1d(t, to_begin=[9], to_end=-1)), x)
    repeats = data.draw(st.integers(0, 3))
    check_numpy(lambda t: (np.repeat(t, repeats, axis), np.repeat(t, repeats)), x)
    if len(shape):
        counts = data.draw(st.lists(st.integers(0, 2), min_size=shape[0], max_size=shape[0]))
        check_numpy(lambda t: np.repeat(t, counts, 0), x)


@settings(max_examples=60, **SETTINGS)
@given(st.data(), st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple), st.sampled_from(_DTYPES),
       st.integers(-3, 3))
def test_triangles_and_diagonals_as_numpy(data, shape, dtype, k):
    x = arrays(data, shape, dtype)
    check_numpy(lambda t: (np.tril(t, k), np.triu(t, k)), x)
    check_numpy(lambda t: (np.diag(t, k), np.diagflat(t, k)), x)
    if len(shape) >= 2:
        a1, a2 = data.draw(st.permutations(range(len(shape))))[:2]
        check_numpy(lambda t: (np.diagonal(t, k, a1, a2), np.trace(t, k, a1, a2), np.trace(t, dtype=np.float32)), x)
        check_numpy(lambda t: (np.linalg.diagonal(t, offset=k), np.linalg.trace(t, offset=k)), x)


@settings(max_examples=50, **SETTINGS)
@given(st.data(), shapes, shapes, st.sampled_from(_NUMBERS), st.sampled_from(_NUMBERS))
def test_kron_as_numpy(data, shape_a, shape_b, dtype_a, dtype_b):
    check_numpy(np.kron, arrays(data, shape_a, dtype_a), arrays(data, shape_b, dtype_b))


@settings(max_examples=50, **SETTINGS)
@given(st.data(), shapes, st.sampled_from(_DTYPES))
def test_flips_and_ranks_as_numpy(data, shape, dtype):
    x = arrays(data, shape, dtype)
    check_numpy(lambda t: (np.fliplr(t), np.flipud(t)), x)
    k = data.draw(st.integers(-4, 4))
    if len(shape) >= 2:
        axes = tuple(data.draw(st.permutations(range(len(shape))))[:2])
        check_numpy(lambda t: (np.rot90(t), np.rot90(t, k, axes)), x)
    check_numpy(lambda t: (np.atleast_1d(t), np.atleast_2d(t), np.atleast_3d(t), np.atleast_2d(t, t)), x)
    if len(shape):
        axis, start = _axis(data, len(shape), False), data.draw(st.integers(-len(shape), len(shape)))
        check_numpy(lambda t: (np.rollaxis(t, axis, start), np.permute_dims(t), np.astype(t, np.float32)), x)
        # as many results as the first dimension: it must be known when the graph is built
        check_numpy(lambda t: np.unstack(t), x, placeholders=("static",))
    if len(shape) >= 2:
        check_numpy(lambda t: (np.matrix_transpose(t), np.linalg.matrix_transpose(t)), x)


@settings(max_examples=50, **SETTINGS)
@given(st.data(), nonempty_shapes, st.sampled_from(_DTYPES))
def test_stacks_and_splits_as_numpy(data, shape, dtype):
    x = arrays(data, shape, dtype)
    y = arrays(data, shape, dtype)
    check_numpy(lambda t, u: (np.column_stack([t, u]), np.dstack([t, u]), np.append(t, u), np.append(t, u, 0)), x, y)
    sections = data.draw(st.integers(1, 4))
    axis = _axis(data, len(shape), False)
    check_numpy(lambda t: np.array_split(t, sections, axis), x)
    cuts = sorted(data.draw(st.lists(st.integers(-5, 5), max_size=3)))
    check_numpy(lambda t: np.array_split(t, cuts, axis), x)
    for split in (np.hsplit, np.vsplit, np.dsplit):
        check_numpy(lambda t: split(t, sections), x)  # raises as numpy does where the rank or sizes do not fit
    check_numpy(lambda t: (np.delete(t, 0, 0), np.delete(t, [0, -1]), np.delete(t, slice(None, None, 2), axis)), x)


@settings(max_examples=40, **SETTINGS)
@given(st.data(), st.lists(nonempty_shapes, min_size=1, max_size=3), st.sampled_from(_DTYPES),
       st.sampled_from(["xy", "ij"]), st.booleans())
def test_meshgrid_and_broadcast_arrays_as_numpy(data, shapes_, dtype, indexing, sparse):
    xs = [arrays(data, s, dtype) for s in shapes_]
    check_numpy(lambda *ts: np.meshgrid(*ts, indexing=indexing, sparse=sparse), *xs)
    common = [arrays(data, s[-1:], dtype) for s in shapes_]
    check_numpy(lambda *ts: np.broadcast_arrays(*ts), *common)


@settings(max_examples=50, **SETTINGS)
@given(st.data(), st.sampled_from(_NUMBERS), st.integers(0, 6), st.booleans(), st.booleans())
def test_linspace_and_logspace_as_numpy(data, dtype, num, endpoint, vector):
    start = arrays(data, (2,) if vector else (), dtype)
    stop = arrays(data, (), dtype)
    check_numpy(lambda a, b: np.linspace(a, b, num, endpoint=endpoint), start, stop)
    check_numpy(lambda a, b: np.linspace(a, b, num, endpoint=endpoint, retstep=True, axis=-1), start, stop)
    check_numpy(lambda a, b: (np.linspace(0, b, num), np.linspace(a, 1.5, num, dtype=np.int32)), start, stop)
    check_numpy(lambda a, b: np.logspace(a, b, num, endpoint=endpoint, base=2.0), start, stop)


@settings(max_examples=50, **SETTINGS)
@given(st.data(), nonempty_shapes, st.sampled_from(_DTYPES))
def test_take_along_axis_cumulative_and_add_at_as_numpy(data, shape, dtype):
    x = arrays(data, shape, dtype)
    axis = _axis(data, len(shape), False)
    order = np.argsort(arrays(data, shape, np.float64), axis=axis)
    check_numpy(lambda t, i: np.take_along_axis(t, i, axis), x, order)
    check_numpy(lambda t: (np.cumulative_sum(t, axis=axis), np.cumulative_prod(t, axis=axis, include_initial=True),
                           np.cumulative_sum(t, axis=axis, dtype=np.float64, include_initial=True)), x)
    index = data.draw(st.lists(st.integers(0, shape[0] - 1), max_size=4))
    want = x.copy()
    np.add.at(want, index, 1)
    check_numpy(lambda t: G.add_at(t, index, 1), x, np_fn=lambda t: want)


# --------------------------------------------------------------------------- statistics

@settings(max_examples=60, **SETTINGS)
@given(st.data(), nonempty_shapes, st.sampled_from(_NUMBERS), st.booleans())
def test_median_percentile_and_quantile_as_numpy(data, shape, dtype, keepdims):
    x = arrays(data, shape, dtype, nan=True)
    axis = _axis(data, len(shape))
    q = data.draw(st.one_of(st.integers(0, 100), st.floats(0, 100), st.lists(st.floats(0, 100), max_size=3)))
    check_numpy(lambda t: np.median(t, axis, keepdims=keepdims), x)
    check_numpy(lambda t: np.percentile(t, q, axis), x)
    # numpy gives a float32 slice's NaN as float32 where a float64 q makes every other result float64 (a dtype that
    # depends on the values, which a graph cannot have): such q are checked on values without NaN
    check_numpy(lambda t: np.quantile(t, np.asarray(q) / 100, axis), np.nan_to_num(x))
    check_numpy(lambda t: np.percentile(t, q, axis, keepdims=keepdims, method="nearest"), x)  # numpy's own


@settings(max_examples=60, **SETTINGS)
@given(st.data(), nonempty_shapes, st.sampled_from(_NUMBERS), st.booleans())
def test_nan_reductions_as_numpy(data, shape, dtype, keepdims):
    x = arrays(data, shape, dtype, nan=True)
    axis = _axis(data, len(shape))
    for fn in (np.nansum, np.nanprod, np.nanmean, np.nanmax, np.nanmin, np.nanvar, np.nanstd):
        check_numpy(lambda t: fn(t, axis, keepdims=keepdims), x)
    check_numpy(lambda t: (np.nanvar(t, axis, ddof=1), np.nanstd(t, axis, dtype=np.float64), np.nansum(t, axis,
                                                                                                     np.float64)), x)
    check_numpy(lambda t: (np.nancumsum(t, axis), np.nancumprod(t, axis), np.nanargmax(t, axis),
                           np.nanmedian(t, axis)), x)


@settings(max_examples=60, **SETTINGS)
@given(st.data(), nonempty_shapes, st.sampled_from(_DTYPES), st.booleans())
def test_average_and_ptp_as_numpy(data, shape, dtype, returned):
    x = arrays(data, shape, dtype)
    axis = _axis(data, len(shape), False)
    w = np.abs(arrays(data, (shape[axis],), np.float64)) + 0.5
    check_numpy(lambda t: np.average(t, returned=returned), x)
    check_numpy(lambda t, u: np.average(t, axis, u, returned=returned), x, w)
    check_numpy(lambda t, u: np.average(t, axis, u, returned=returned, keepdims=True), x, w)
    check_numpy(lambda t, u: np.average(t, None, u), x, np.abs(arrays(data, shape, np.float32)) + 0.5)
    check_numpy(lambda t: (np.ptp(t), np.ptp(t, axis, keepdims=True)), x)


@settings(max_examples=50, **SETTINGS)
@given(st.data(), st.lists(st.integers(1, 4), min_size=1, max_size=2).map(tuple), st.sampled_from(_NUMBERS),
       st.booleans(), st.booleans())
def test_cov_corrcoef_and_trapezoid_as_numpy(data, shape, dtype, rowvar, bias):
    x = arrays(data, shape, dtype)
    y = arrays(data, shape, dtype)
    check_numpy(lambda t: (np.cov(t, rowvar=rowvar, bias=bias), np.cov(t, ddof=0)), x)
    check_numpy(lambda t, u: (np.cov(t, u, rowvar=rowvar), np.corrcoef(t, u, rowvar=rowvar)), x, y)
    check_numpy(lambda t: np.corrcoef(t), x)
    check_numpy(lambda t, u: (np.trapezoid(t), np.trapezoid(t, u), np.trapezoid(t, dx=0.5, axis=0)), x, y)
    check_numpy(lambda t, u: np.trapezoid(t, u[..., 0] if u.ndim > 1 else u), x, y)


# --------------------------------------------------------------------------- gradients

_M = np.array([[0.3, -1.2, 2.5, 0.1], [1.0, -0.5, -2.0, 0.7], [0.9, 1.4, -0.3, 0.6]])
_GRADIENTS = {
    "roll": lambda t: np.roll(t, (1, -2), (0, 1)) * np.arange(12.0).reshape(3, 4),
    "roll by a tensor": lambda t: np.roll(t, G.constant(np.int64(2)), 1) * np.arange(4.0),
    "diff": lambda t: np.diff(t, 2, prepend=t[:, :1]) ** 2,
    "tril, triu": lambda t: np.tril(t, 1) ** 2 + np.triu(t, -1) * 3,
    "diagonals": lambda t: np.diag(np.diag(t[:, :3])) + np.trace(t) + np.diagflat(t[0])[:3, :3],
    "kron": lambda t: np.kron(t[:2, :2], t),
    "repeat": lambda t: np.repeat(t, 2, 1) ** 2 + np.repeat(t, [1, 0, 2], 0).sum(),
    "rot90 and flips": lambda t: np.rot90(t) @ np.fliplr(t) + np.flipud(t).sum(),
    "splits and stacks": lambda t: np.column_stack(np.array_split(t, 3, 1)[:2]) ** 2 + np.dstack([t, t]).sum(),
    "meshgrid": lambda t: np.meshgrid(t[0], t[1])[0] * np.meshgrid(t[0], t[1])[1],
    "linspace": lambda t: np.linspace(t[0], t[1], 5) ** 2,
    "take_along_axis": lambda t: np.take_along_axis(t, np.array([[0, 0, 3], [1, 2, 0], [3, 1, 1]]), 1) ** 2,
    "add_at": lambda t: G.add_at(t, [0, 2, 0], t[1] * t[2]) ** 2,
    "median, percentile": lambda t: np.median(t, 1).sum() * np.percentile(t, [30, 70], 0) + np.quantile(t, 0.5),
    "nan reductions": lambda t: np.nanmean(t, 0) * np.nanmax(t, 1, keepdims=True) + np.nanvar(t) + np.nanstd(t, 1,
                                                                                                         keepdims=True),
    "average, ptp": lambda t: np.average(t, 0, np.array([1.0, 2.0, 0.5])) * np.ptp(t, 1, keepdims=True),
    "cov, corrcoef": lambda t: np.cov(t) + np.corrcoef(t, rowvar=False)[:3, :3],
    "trapezoid": lambda t: np.trapezoid(t ** 2, t[0]) + np.cumulative_sum(t, axis=1)[:, :1],
}


@pytest.mark.parametrize("name", sorted(_GRADIENTS))
def test_gradients(name):
    check_gradients(_GRADIENTS[name], _M, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- ONNX

_ONNX = {
    "roll, diff": lambda t: (np.roll(t, 1, 0), np.roll(t, -2), np.diff(t, 2, axis=0), np.ediff1d(t)),
    "triangles, diagonals": lambda t: (np.tril(t), np.triu(t, 1), np.diagonal(t), np.diag(t, 1), np.diag(t[0], -1),
                                       np.trace(t), np.diagonal(np.stack([t, t]), 1, 1, 2)),
    "kron, repeat, rotations": lambda t: (np.kron(t, t[:2, :2]), np.repeat(t, 2, 0), np.rot90(t), np.fliplr(t)),
    "linspace, splits": lambda t: (np.linspace(t[0, 0], t[1, 1], 5), *np.array_split(t, 2, 1), np.dstack([t, t]),
                                   *np.meshgrid(t[0], t[1, :2]), np.cumulative_sum(t, axis=0, include_initial=True)),
    "statistics": lambda t: (np.median(t, 0), np.percentile(t, 30, 1), np.nanmax(t), np.nanmean(t, 0),
                             np.average(t, 1, np.array([1.0, 2.0, 3.0])), np.ptp(t, 0), np.cov(t)),
    "gradients": lambda t: grad.gradients(G.reduce_sum(np.roll(np.tril(t), 1) * np.diag(t) + np.median(t, 0)),
                                          [t])[0],
}


@pytest.mark.parametrize("name", sorted(_ONNX))
def test_onnx_export_computes_the_same(name):
    pytest.importorskip("onnx")
    from graph.onnx import export
    from tests.graph.onnx_checks import check_same, default_runtime
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3, 3), name="x")
        outs = list(G.nest.flatten(_ONNX[name](x)))
    value = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5], [1.5, 1.5, 0.0]])
    want = Session(g).run(outs, {x: value})
    for k, (got, w) in enumerate(zip(default_runtime(export(g, [x], outs)).run(None, {"x": value}), want,
                                     strict=True)):
        check_same(got, w, f"{name} output {k}")
