"""TensorArray and scan / map_fn / foldl / foldr: results equal numpy, errors are clear."""
import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph as G
from exec import RunError, Session
from exec.reference import run_reference
from graph.errors import GraphError


def _run(build, feeds_np, reference=True):
    g = G.Graph()
    with g.as_default():
        phs = [G.placeholder(a.dtype, a.shape) for a in feeds_np]
        out = build(*phs)
    fd = dict(zip(phs, feeds_np))
    got = Session(g).run(out, fd)
    if reference:
        ref = run_reference(out, fd)
        for a, b in zip(G.nest.flatten(got), G.nest.flatten(ref)):
            np.testing.assert_array_equal(a, b)
    return got


def test_write_read_stack_in_a_loop_with_dynamic_size():
    def build(n):
        ta = G.TensorArray(np.float32)
        _, ta = G.while_loop(lambda i, ta: G.less(i, n),
                             lambda i, ta: (G.add(i, 1), ta.write(i, G.cast(G.mul(i, i), np.float32))),
                             (G.constant(0), ta))
        return ta.stack(), ta.size(), ta.read(G.sub(n, 1))
    stacked, size, last = _run(build, [np.int64(6)])
    np.testing.assert_array_equal(stacked, np.arange(6.0, dtype=np.float32) ** 2)
    assert stacked.dtype == np.float32 and size == 6 and last == 25.0


def test_unstack_gather_scatter():
    x = np.arange(12.0).reshape(4, 3)

    def build(x):
        ta = G.TensorArray(np.float64, size=4).unstack(x)
        g2 = G.TensorArray(np.float64, size=4).scatter(G.constant(np.array([3, 0, 1, 2])), x)
        return ta.gather(G.constant(np.array([2, 0]))), g2.stack(), ta.read(1)
    gathered, scattered, row = _run(build, [x])
    np.testing.assert_array_equal(gathered, x[[2, 0]])
    np.testing.assert_array_equal(scattered, x[[1, 2, 3, 0]])
    np.testing.assert_array_equal(row, x[1])


def test_tensor_array_through_cond_branches():
    def build(p):
        ta = G.TensorArray(np.int64, size=2).write(0, 7)
        ta = G.cond(p, lambda: ta.write(1, 1), lambda: ta.write(1, 2))
        return ta.stack()
    np.testing.assert_array_equal(_run(build, [np.bool_(True)]), [7, 1])
    np.testing.assert_array_equal(_run(build, [np.bool_(False)]), [7, 2])


def test_element_type_learned_from_first_write():
    g = G.Graph()
    with g.as_default():
        ta = G.TensorArray()
        assert ta.dtype is None
        ta2 = ta.write(0, G.constant(np.ones((2, 3), np.float32)))
        assert ta2.dtype == np.float32 and ta.element_shape == (2, 3)
        assert ta2.stack().shape == (None, 2, 3)
        with pytest.raises(GraphError, match="holds float32 elements"):
            ta2.write(1, G.constant(np.ones(3)))


def test_runtime_errors_are_clear():
    g = G.Graph()
    with g.as_default():
        ta = G.TensorArray(np.float64, size=2)
        twice = ta.write(0, 1.0).write(0, 2.0).stack()
        unwritten = ta.write(0, 1.0).stack()
        empty = G.TensorArray(np.float64).stack()
        ok_empty = G.TensorArray(np.float64, element_shape=[3]).stack()
    sess = Session(g)
    with pytest.raises(RunError, match="already written"):
        sess.run(twice)
    with pytest.raises(RunError, match=r"elements \[1\] were never written"):
        sess.run(unwritten)
    with pytest.raises(RunError, match="element shape is unknown"):
        sess.run(empty)
    assert sess.run(ok_empty).shape == (0, 3)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.booleans())
def test_scan_matches_numpy(n, m, reverse):
    x = np.random.default_rng(n * 10 + m).standard_normal((n, m))

    def build(x):
        with_init = G.scan(lambda a, r: G.add(G.mul(a, 0.5), r), x, initializer=G.constant(np.zeros(m)),
                           reverse=reverse)
        without = G.scan(lambda a, r: G.maximum(a, r), x, reverse=reverse)
        return with_init, without
    a, b = _run(build, [x])
    seq = x[::-1] if reverse else x
    want_a, acc = [], np.zeros(m)
    for r in seq:
        acc = acc * 0.5 + r
        want_a.append(acc)
    want_b = np.maximum.accumulate(seq)
    if reverse:
        want_a, want_b = want_a[::-1], want_b[::-1]
    np.testing.assert_allclose(a, np.array(want_a))
    np.testing.assert_allclose(b, want_b)


def test_map_fn_with_nested_structures_and_folds():
    x = np.arange(6.0).reshape(3, 2)

    def build(x):
        mapped = G.map_fn(lambda r: {"twice": G.mul(r, 2.0), "pos": G.greater(r, 2.0)}, x)
        pairs = G.map_fn(lambda pair: G.add(pair[0], pair[1]), (x, x))
        fl = G.foldl(lambda a, r: G.sub(G.mul(a, 10.0), r), x, initializer=G.constant(np.zeros(2)))
        fr = G.foldr(lambda a, r: G.sub(G.mul(a, 10.0), r), x, initializer=G.constant(np.zeros(2)))
        return mapped, pairs, fl, fr
    mapped, pairs, fl, fr = _run(build, [x])
    np.testing.assert_array_equal(mapped["twice"], x * 2)
    np.testing.assert_array_equal(mapped["pos"], x > 2)
    np.testing.assert_array_equal(pairs, x + x)
    np.testing.assert_array_equal(fl, functools.reduce(lambda a, r: a * 10 - r, x, np.zeros(2)))
    np.testing.assert_array_equal(fr, functools.reduce(lambda a, r: a * 10 - r, x[::-1], np.zeros(2)))


def test_map_fn_inside_a_loop_gets_a_fresh_array_per_iteration():
    x = np.arange(4.0).reshape(2, 2)

    def build(x):
        def body(i, acc):
            return G.add(i, 1), G.add(acc, G.map_fn(lambda r: G.mul(r, G.cast(i, np.float64)), x))
        return G.while_loop(lambda i, acc: G.less(i, 4), body, (G.constant(0), G.constant(np.zeros((2, 2)))))[1]
    np.testing.assert_array_equal(_run(build, [x]), x * (0 + 1 + 2 + 3))
