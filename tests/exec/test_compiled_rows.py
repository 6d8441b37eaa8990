"""Compiled code's loops over arrays without a TensorArray (exec/compiled/rows.py) and its scalar casts
(exec/compiled/casts.py): the values, dtypes and Python types of iterating the array in Python, the
same errors as the dataflow executor for reads the specialisation cannot prove safe, and no change
where a gradient or a write uses the TensorArray."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grad
import graph as G
import transpile
from exec import RunError, Session

DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int8, np.uint8, np.uint64, np.bool_]


def _assert_exact(got, want):
    """Same structure, Python or numpy type, dtype, shape and bits."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_exact(g, w)
        return
    assert type(got) is type(want), (got, want)
    if isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype and np.shape(got) == np.shape(want), (got, want)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (got, want)
    else:
        assert got == want, (got, want)


def last_row(xs, init):
    r = init
    for x in xs:
        r = x
    return r


def rows_and_count(xs, zero):
    total, n = zero, 0
    for x in xs:
        total = total + x
        n += 1
    return total, n


def first_at_least(xs, t):
    k = 0
    for x in xs:
        if x >= t:
            break
        k += 1
    return k


def index_of_first_at_least(xs, t):
    found = -1
    for i, x in enumerate(xs):
        if x >= t:
            found = i
            break
    return found


@st.composite
def arrays(draw, max_ndim=3):
    """Small arrays of every dtype of DTYPES, of 1 to `max_ndim` dimensions, the first possibly empty."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    ndim = draw(st.integers(1, max_ndim))
    shape = (draw(st.integers(0, 5)), *(draw(st.integers(1, 3)) for _ in range(ndim - 1)))
    values = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).integers(-3, 100, shape)
    return (values % 2 == 0 if dtype.kind == "b" else values).astype(dtype)


def _compiled(fn, *args):
    f = transpile.function(fn, mode="compiled")
    return f, f(*args), f.compiled_code(*args)


@settings(max_examples=40, deadline=None)
@given(arrays())
def test_a_loop_over_an_array_gets_its_rows_as_python_does(xs):
    init = np.zeros(xs.shape[1:], xs.dtype)[()]
    _, got, source = _compiled(last_row, xs, init)
    _assert_exact(got if xs.ndim == 1 else np.asarray(got), last_row(xs, init) if xs.ndim == 1 else
                  np.asarray(last_row(xs, init)))
    assert "TensorArray" not in source and "Rows(" in source


@settings(max_examples=40, deadline=None)
@given(arrays())
def test_sums_and_counts_over_rows_of_every_dtype(xs):
    zero = np.zeros(xs.shape[1:], xs.dtype)[()]
    with np.errstate(all="ignore"):
        _, got, _ = _compiled(rows_and_count, xs, zero)
        want = rows_and_count(xs, zero)
    _assert_exact(got, want)


@settings(max_examples=40, deadline=None)
@given(arrays(max_ndim=1), st.integers(-5, 105))
def test_early_breaks_read_only_the_rows_before_them(xs, t):
    xs = xs.astype(np.int64)
    for fn in (first_at_least, index_of_first_at_least):
        _, got, source = _compiled(fn, xs, np.int64(t))
        _assert_exact(got, fn(xs, np.int64(t)))
        assert "TensorArrayRead" not in source


def test_relaxed_shapes_read_the_number_of_rows_from_the_array():
    f = transpile.function(rows_and_count, mode="compiled", relax_shapes=True)
    for n in (3, 0, 5):
        xs = np.arange(n * 2.0).reshape(n, 2)
        _assert_exact(f(xs, np.zeros(2)), rows_and_count(xs, np.zeros(2)))


# ----------------------------------------------------------------------------- hand-built reads

def _read_graph(index_dtype, size=None):
    """A TensorArray unstacked from a fed vector and read at a fed index (no loop: nothing proves the index
    non-negative), and at the constant 1."""
    g = G.Graph()
    with g.as_default():
        xs = G.placeholder(np.float64, [4], name="xs")
        i = G.placeholder(index_dtype, [], name="i")
        ta = G.TensorArray(np.float64, size=size).unstack(xs)
        at_i, at_1 = ta.read(i), ta.read(G.constant(np.int64(1)))
    return g, xs, i, at_i, at_1


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32, np.uint64])
def test_reads_at_a_fed_index_are_the_executors_reads(index_dtype):
    g, xs, i, at_i, at_1 = _read_graph(index_dtype)
    source = Session(g, mode="compiled").compiled_source([at_i, at_1], [xs, i])
    assert "TensorArray" not in source
    assert ("RowAt(" in source) == (index_dtype != np.uint64)  # an unsigned index is never negative
    values = np.array([1.5, 2.5, 3.5, 4.5])
    for k in range(4):
        feed = {xs: values, i: index_dtype(k)}
        got = Session(g, mode="compiled").run([at_i, at_1], feed)
        want = Session(g, mode="dataflow").run([at_i, at_1], feed)
        _assert_exact(tuple(got), tuple(want))
        assert type(got[0]) is np.float64


@pytest.mark.parametrize("index", [-1, -4, 4, 9])
def test_reads_out_of_range_fail_naming_the_read_in_both_modes(index):
    g, xs, i, at_i, _ = _read_graph(np.int64)
    feed = {xs: np.zeros(4), i: np.int64(index)}
    for mode in ("compiled", "dataflow"):
        with pytest.raises(RunError) as info:
            Session(g, mode=mode).run(at_i, feed)
        assert info.value.node is at_i.node and "test_compiled_rows.py" in str(info.value)
        assert isinstance(info.value.cause, (IndexError, ValueError))


def test_a_fixed_size_that_the_rows_do_not_match_fails_in_both_modes():
    g, xs, i, at_i, _ = _read_graph(np.int64, size=3)
    assert "Rows(" in Session(g, mode="compiled").compiled_source(at_i, [xs, i])
    for mode in ("compiled", "dataflow"):
        with pytest.raises(RunError, match="cannot unstack 4 elements into TensorArray"):
            Session(g, mode=mode).run(at_i, {xs: np.zeros(4), i: np.int64(0)})


def test_a_loop_counter_that_can_go_down_reads_through_the_check():
    g = G.Graph()
    with g.as_default():
        xs = G.placeholder(np.float64, [5], name="xs")
        ta = G.TensorArray(np.float64).unstack(xs)
        _, total = G.while_loop(lambda k, s: G.greater_equal(k, -1), lambda k, s: (G.sub(k, 1), s + ta.read(k)),
                                (G.constant(np.int64(4)), G.constant(0.0)))
    assert "RowAt(" in Session(g, mode="compiled").compiled_source(total, [xs])
    for mode in ("compiled", "dataflow"):  # k = -1 is read: a TensorArray never wraps around
        with pytest.raises(RunError) as info:
            Session(g, mode=mode).run(total, {xs: np.arange(5.0)})
        assert "in iteration 5 of" in str(info.value)


# ----------------------------------------------------------------------------- where it does not apply

def test_a_gradient_through_a_loop_over_an_array_keeps_the_tensor_array():
    g = G.Graph()
    with g.as_default():
        xs = G.placeholder(np.float64, [6], name="xs")
        w = G.placeholder(np.float64, [], name="w")
        ta = G.TensorArray(np.float64).unstack(xs)
        _, h = G.while_loop(lambda k, h: G.less(k, 6), lambda k, h: (G.add(k, 1), G.tanh(h * w + ta.read(k))),
                            (G.constant(np.int64(0)), G.constant(0.0)))
        gxs, gw = grad.gradients(h, [xs, w])
    feeds = {xs: np.linspace(-1, 1, 6), w: 0.5}
    compiled = Session(g, mode="compiled")
    assert "TensorArrayUnstack(" in compiled.compiled_source([h, gxs, gw], feeds)
    assert "Rows(" in compiled.compiled_source([h], feeds)  # the forward plan alone has no gradient
    got, want = compiled.run([h, gxs, gw], feeds), Session(g, mode="dataflow").run([h, gxs, gw], feeds)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_a_tensor_array_also_stacked_or_written_keeps_its_kernels():
    g = G.Graph()
    with g.as_default():
        xs = G.placeholder(np.float64, [3], name="xs")
        ta = G.TensorArray(np.float64).unstack(xs)
        stacked = ta.stack()
        written = ta.write(3, G.constant(7.0))
        first, fourth = written.read(G.constant(np.int64(0))), written.read(G.constant(np.int64(3)))
    compiled = Session(g, mode="compiled")
    for fetches, op in (([stacked], "TensorArrayStack("), ([first, fourth], "TensorArrayWrite(")):
        assert op in compiled.compiled_source(fetches, [xs]) and "Rows(" not in compiled.compiled_source(fetches, [xs])
    got = compiled.run([stacked, first, fourth], {xs: np.arange(3.0)})
    np.testing.assert_array_equal(got[0], np.arange(3.0))
    assert got[1:] == [0.0, 7.0]


# ----------------------------------------------------------------------------- scalar casts

def _limits(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return [True, False]
    if dtype.kind == "f":
        info = np.finfo(dtype)
        return [0.0, -0.0, 1.5, -2.5, np.nan, np.inf, -np.inf, info.max, info.min, info.tiny, info.eps]
    info = np.iinfo(dtype)
    return [info.min, info.max, 0, 1, info.max - 1, info.min + 1]


@pytest.mark.parametrize("src", DTYPES)
def test_safe_scalar_casts_are_constructor_calls_with_the_kernels_bits(src):
    for dst in DTYPES:
        if dst == src:
            continue
        g = G.Graph()
        with g.as_default():
            x = G.placeholder(src, [], name="x")
            out = G.cast(x, dst)
        compiled, dataflow = Session(g, mode="compiled"), Session(g, mode="dataflow")
        source = compiled.compiled_source(out, [x])
        assert ("Cast(" not in source) == np.can_cast(src, dst, "safe"), (src, dst, source)
        with np.errstate(all="ignore"):
            for v in _limits(src):
                feed = {x: np.array(v, src)[()]}
                _assert_exact(compiled.run(out, feed), dataflow.run(out, feed))
