"""Kernel paths a plan picks from what the graph fixes (a constant zero, an index's dtype and rank, constant
bounds): compiled code and the dataflow executor give numpy's values and dtypes bit for bit, on the path and
beside it, and the errors numpy raises."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graph as G
from exec import Session
from exec.errors import RunError

MODES = ("compiled", "dataflow")
_SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.0, 3e38]
_DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.uint8]


def _array(draw, dtype, shape):
    if np.dtype(dtype).kind == "f":
        with np.errstate(over="ignore"):
            return np.array(draw(st.lists(st.sampled_from(_SPECIAL), min_size=int(np.prod(shape)),
                                          max_size=int(np.prod(shape)))), dtype).reshape(shape)
    return np.array(draw(st.lists(st.integers(0, 100), min_size=int(np.prod(shape)),
                                  max_size=int(np.prod(shape)))), dtype).reshape(shape)


@st.composite
def _selects(draw):
    dtype = draw(st.sampled_from(_DTYPES))
    shape = draw(st.sampled_from([(3,), (2, 3), (4, 1, 2)]))
    c_shape = draw(st.sampled_from([shape, shape[-1:], ()]))
    zero = draw(st.sampled_from([0.0, -0.0, 0, 1, 2.5])) if np.dtype(dtype).kind == "f" else \
        draw(st.sampled_from([0, 3]))
    x = _array(draw, dtype, shape)
    c = np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(c_shape)), max_size=int(np.prod(c_shape)))),
                 bool).reshape(c_shape)
    return dtype, np.dtype(dtype).type(zero), x, c, draw(st.booleans())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_selects())
def test_where_with_a_constant_zero_is_numpys_where(case):
    """where(c, x, 0) (a relu's gradient) takes x's bits or zeros: NaNs and infinities that c drops become +0,
    those it keeps stay; -0.0 and nonzero constants take np.where's own path. `fresh` makes x a product only
    the where reads, so that it is computed into x's buffer."""
    dtype, zero, x, c, fresh = case
    g = G.Graph()
    with g.as_default():
        px, pc = G.placeholder(dtype, x.shape), G.placeholder(np.bool_, c.shape)
        operand = G.mul(px, G.constant(np.dtype(dtype).type(1))) if fresh else px
        out = G.where(pc, operand, G.constant(zero))
    with np.errstate(all="ignore"):
        want = np.where(c, x * np.dtype(dtype).type(1) if fresh else x, zero)
    for mode in MODES:
        with np.errstate(all="ignore"):
            got = Session(g, mode=mode).run(out, {px: x, pc: c})
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes(), mode


@pytest.mark.parametrize("fresh", [False, True])
def test_where_of_a_constant_zero_leaves_its_inputs_alone(fresh):
    x = np.array([[1.0, -2.0], [np.nan, 4.0]], np.float32)
    c = np.array([[True, False], [False, True]])
    g = G.Graph()
    with g.as_default():
        px, pc = G.placeholder(np.float32, (2, 2)), G.placeholder(np.bool_, (2, 2))
        out = G.where(pc, px * np.float32(1) if fresh else px, G.constant(np.float32(0)))
    for mode in MODES:
        before = x.copy()
        got = Session(g, mode=mode).run(out, {px: x, pc: c})
        assert x.tobytes() == before.tobytes() and got.tobytes() == np.where(c, x, np.float32(0)).tobytes()


@st.composite
def _row_picks(draw):
    dtype = draw(st.sampled_from([np.float32, np.int64, np.bool_, np.complex64]))
    shape = draw(st.sampled_from([(5, 3), (4, 2, 2), (6, 1)]))
    index_dtype = draw(st.sampled_from([np.int64, np.int32, np.uint8, np.int8]))
    index_shape = draw(st.sampled_from([(3,), (2, 2), (0,)]))
    low = 0 if np.dtype(index_dtype).kind == "u" else -shape[0]
    index = np.array(draw(st.lists(st.integers(low, shape[0] - 1), min_size=int(np.prod(index_shape)),
                                   max_size=int(np.prod(index_shape)))), index_dtype).reshape(index_shape)
    x = (np.arange(np.prod(shape)) % 7).astype(dtype).reshape(shape)
    return x, index


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_row_picks())
def test_rows_picked_by_an_integer_array_are_numpys(case):
    x, index = case
    g = G.Graph()
    with g.as_default():
        px, pi = G.placeholder(x.dtype, x.shape), G.placeholder(index.dtype, index.shape)
        out = px[pi]
    want = x[index]
    for mode in MODES:
        got = Session(g, mode=mode).run(out, {px: x, pi: index})
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes(), mode
        assert got.flags.c_contiguous and got.flags.writeable


@st.composite
def _element_picks(draw):
    dtype = draw(st.sampled_from([np.float32, np.int64, np.float16]))
    shape = draw(st.sampled_from([(5, 3), (4, 2, 2)]))
    shapes = draw(st.sampled_from([[(3,), (3,)], [(3,), (1,)], [(2, 2), (2,)], [(4,)]]))
    arrays = [np.array(draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(s)), max_size=int(np.prod(s)))),
                       draw(st.sampled_from([np.int64, np.int32, np.int16]))).reshape(s)
              for s, n in zip(shapes, shape)]
    return (np.arange(np.prod(shape)) % 11).astype(dtype).reshape(shape), arrays


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_element_picks())
def test_elements_picked_by_integer_arrays_are_numpys(case):
    x, arrays = case
    g = G.Graph()
    with g.as_default():
        px = G.placeholder(x.dtype, x.shape)
        pa = [G.placeholder(a.dtype, a.shape) for a in arrays]
        out = px[tuple(pa)]
    want = x[tuple(arrays)]
    for mode in MODES:
        got = Session(g, mode=mode).run(out, {px: x, **dict(zip(pa, arrays))})
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes(), mode


@pytest.mark.parametrize("bad", [5, -6])
def test_a_row_out_of_bounds_raises_numpys_index_error(bad):
    g = G.Graph()
    with g.as_default():
        px, pi = G.placeholder(np.float32, (5, 3)), G.placeholder(np.int64, (2,))
        out = px[pi]
    for mode in MODES:
        with pytest.raises(RunError) as info:
            Session(g, mode=mode).run(out, {px: np.zeros((5, 3), np.float32), pi: np.array([0, bad])})
        assert isinstance(info.value.__cause__, IndexError)
        assert f"index {bad} is out of bounds for axis 0 with size 5" in str(info.value.__cause__)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-3.0, 0.5)])
def test_one_uniform_draw_between_constant_bounds_is_the_generators(dtype, bounds):
    """A scalar draw between bounds the graph fixes: low + (high - low) * the generator's next double, in the
    result's dtype, the same stream as bounds fed at run time."""
    g = G.Graph()
    with g.as_default():
        fixed = G.random_uniform((), *bounds, dtype=dtype, seed=4)
        lo, hi = G.placeholder(np.float64, ()), G.placeholder(np.float64, ())
        fed = G.random_uniform((), lo, hi, dtype=dtype, seed=4)
    for mode in MODES:
        sess = Session(g, mode=mode)
        rng = np.random.Generator(np.random.PCG64(4))
        for _ in range(5):
            got, other = sess.run([fixed, fed], {lo: bounds[0], hi: bounds[1]})
            want = np.dtype(dtype).type(bounds[0] + (bounds[1] - bounds[0]) * rng.random())
            assert type(got) is type(want) and got.tobytes() == want.tobytes() == other.tobytes(), mode


def test_the_paths_are_taken_where_the_graph_fixes_their_facts():
    import grad
    from exec.kernels import get_kernel
    from exec.runtime import Runtime
    with G.Graph().as_default():
        x, c = G.placeholder(np.float32, (2, 3)), G.placeholder(np.bool_, (2, 3))
        rows = G.placeholder(np.float32, (5, 3))[G.placeholder(np.int64, (2,))]
        entries = G.placeholder(np.float32, (5,))[G.placeholder(np.int64, (2,))]
        q, j = G.placeholder(np.float32, (4, 2)), G.placeholder(np.int64, (4,))
        picks = q[G.constant(np.arange(4)), j]
        (pick_grad,) = grad.gradients(G.reduce_sum(picks), [q])
        kernels = {t: get_kernel(t.node, Runtime()).__name__ for t in (
            G.where(c, x, G.constant(np.float32(0))), G.where(c, x, G.constant(np.float32(-0.0))), rows, entries,
            G.random_uniform((), 0.0, 1.0, seed=1), G.random_uniform((2,), 0.0, 1.0, seed=1), picks, pick_grad)}
    assert list(kernels.values()) == ["keep_where", "_select", "getitem_rows", "getitem_arrays", "uniform_scalar",
                                      "uniform", "getitem_arrays", "getitem_grad_picks"]
