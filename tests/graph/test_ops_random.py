"""Random ops: reproducible per seed in a fresh Session, new numbers on successive runs."""
import numpy as np
import pytest

import graph as G
from exec import Session


def _graph(seed=None, graph_seed=None):
    g = G.Graph()
    g.seed = graph_seed
    with g.as_default():
        ops = (G.random_uniform([3], seed=seed), G.random_normal([2, 2], seed=seed),
               G.categorical(np.log([[0.2, 0.8], [0.5, 0.5]]), 4, seed=seed))
    return g, ops


@pytest.mark.parametrize("seed", [None, 7])
def test_fresh_session_reproduces_and_successive_runs_differ(seed):
    g, ops = _graph(seed)
    s1 = Session(g)
    first, second = s1.run(ops), s1.run(ops)
    again = Session(g).run(ops)
    for a, b, c in zip(first, second, again):
        np.testing.assert_array_equal(a, c)
    assert not np.array_equal(first[0], second[0]) and not np.array_equal(first[1], second[1])
    # an identical graph built again draws the same numbers (seeds follow build order)
    g2, ops2 = _graph(seed)
    for a, b in zip(first, Session(g2).run(ops2)):
        np.testing.assert_array_equal(a, b)


def test_graph_seed_and_op_seed_change_the_stream():
    g1, o1 = _graph(graph_seed=1)
    g2, o2 = _graph(graph_seed=2)
    g3, o3 = _graph(seed=3)
    a, b, c = Session(g1).run(o1[0]), Session(g2).run(o2[0]), Session(g3).run(o3[0])
    assert not np.array_equal(a, b) and not np.array_equal(a, c)


def test_dtypes_shapes_and_ranges():
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [])
        u = G.random_uniform([n, 1000], -2.0, 3.0, dtype=np.float32, seed=1)
        k = G.random_uniform([1000], 0, n, dtype=np.int32, seed=2)
        z = G.random_normal([n, 5000], mean=1.0, stddev=G.constant(2.0), seed=3)
        c = G.categorical(np.log([0.1, 0.2, 0.7]), n * 1000, seed=4)
        scalar = G.random_uniform([], seed=5)
        assert u.shape == (None, 1000) and u.dtype == np.float32
        assert k.dtype == np.int32 and c.dtype == np.int64 and c.shape == (None,)
    uv, kv, zv, cv, sv = Session(g).run([u, k, z, c, scalar], {n: 3})
    assert uv.shape == (3, 1000) and uv.dtype == np.float32 and uv.min() >= -2 and uv.max() < 3
    assert kv.dtype == np.int32 and set(np.unique(kv)) == {0, 1, 2}
    assert abs(zv.mean() - 1.0) < 0.1 and abs(zv.std() - 2.0) < 0.1
    freq = np.bincount(cv, minlength=3) / cv.size
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.03)
    assert np.ndim(sv) == 0 and 0 <= sv < 1


def test_draws_in_a_loop_are_deterministic_with_parallel_iterations():
    def build(par):
        g = G.Graph()
        with g.as_default():
            def body(i, acc):
                return i + 1, acc + G.random_uniform([], seed=11) * (i + 1)
            out = G.while_loop(lambda i, acc: i < 20, body, (G.constant(0), G.constant(0.0)),
                               parallel_iterations=par)
        return g, out[1]
    results = {par: Session(g).run(t) for par, (g, t) in ((p, build(p)) for p in (1, 32))}
    assert results[1] == results[32]


def test_errors():
    with G.Graph().as_default():
        with pytest.raises(ValueError, match="needs maxval"):
            G.random_uniform([2], dtype=np.int64)
        with pytest.raises(TypeError, match="floating"):
            G.random_normal([2], dtype=np.int32)
        with pytest.raises(ValueError, match="minval must be a scalar"):
            G.random_uniform([2], minval=np.zeros(2))
