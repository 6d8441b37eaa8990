"""Random kernels: one generator per node and seed, per session runtime."""
import numpy as np

import graph as G
from exec.kernels import get_kernel
from exec.runtime import Runtime


def test_streams_are_per_runtime_and_per_node():
    with G.Graph().as_default():
        a = G.random_uniform([4], seed=5)
        b = G.random_uniform([4], seed=5)
    shape, lo, hi = np.array([4]), np.float64(0), np.float64(1)
    rt1, rt2 = Runtime(), Runtime()
    fa1, fb1, fa2 = get_kernel(a.node, rt1), get_kernel(b.node, rt1), get_kernel(a.node, rt2)
    x1, x2 = fa1(shape, lo, hi), fa1(shape, lo, hi)
    np.testing.assert_array_equal(fa2(shape, lo, hi), x1)    # a new runtime replays the stream
    np.testing.assert_array_equal(fb1(shape, lo, hi), x1)    # same seed, its own generator
    assert not np.array_equal(x1, x2)
    # the same stream as a plain numpy generator seeded with the op's seed
    np.testing.assert_array_equal(x1, np.random.Generator(np.random.PCG64(5)).uniform(0, 1, 4))


def test_categorical_respects_zero_probabilities():
    with np.errstate(divide="ignore"):
        logits = np.log([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
    with G.Graph().as_default():
        c = G.categorical(logits, 50, seed=1)
    out = get_kernel(c.node, Runtime())(logits, np.int64(50))
    assert out.shape == (2, 50) and out.dtype == np.int64
    assert set(out[0]) == {1} and set(out[1]) == {0, 2}
