"""numpy's np.random functions as graph random ops: numpy's distributions, new draws at each run, the
seeds of the ops drawn from numpy's global random state (np.random.seed makes a trace reproducible)."""
import numpy as np
import pytest

import graph as G
from exec import Session
from graph.ops import numpy_random as NR


def draws(build, runs=1, seed=0):
    np.random.seed(seed)
    with G.Graph().as_default() as g:
        out = build()
    session = Session(g)
    return [session.run(out) for _ in range(runs)]


def test_shapes_and_dtypes_as_numpy():
    (got,) = draws(lambda: (NR.rand(2, 3), NR.randn(4), NR.random_sample(), NR.uniform(1, 2, size=(2,)),
                            NR.normal(3.0, 0.1, 5), NR.standard_normal((1, 2)), NR.exponential(2.0, 3),
                            NR.randint(5, size=4), NR.randint(2, 7), NR.choice(10), NR.choice([3, 5, 7], size=2)))
    rand, randn, sample, uniform, normal, std, expo, ints, one_int, index, items = got
    assert rand.shape == (2, 3) and rand.dtype == np.float64 and randn.shape == (4,)
    assert np.ndim(sample) == 0 and 0 <= sample < 1
    assert uniform.shape == (2,) and np.all((1 <= uniform) & (uniform < 2))
    assert normal.shape == (5,) and std.shape == (1, 2) and expo.shape == (3,) and np.all(expo >= 0)
    assert ints.dtype == np.int64 and np.all((0 <= ints) & (ints < 5)) and 2 <= one_int < 7
    assert np.ndim(index) == 0 and 0 <= index < 10 and set(items) <= {3, 5, 7}


def test_numpys_distributions():
    n = 20000
    (got,) = draws(lambda: (NR.normal(1.0, 2.0, n), NR.uniform(-1, 3, n), NR.exponential(0.5, n),
                            NR.choice(4, size=n, p=[0.1, 0.0, 0.6, 0.3]), NR.randint(0, 3, size=n)))
    normal, uniform, expo, chosen, ints = got
    assert abs(normal.mean() - 1.0) < 0.05 and abs(normal.std() - 2.0) < 0.05
    assert abs(uniform.mean() - 1.0) < 0.05 and abs(uniform.var() - 16 / 12) < 0.05
    assert abs(expo.mean() - 0.5) < 0.02
    np.testing.assert_allclose(np.bincount(chosen, minlength=4) / n, [0.1, 0.0, 0.6, 0.3], atol=0.015)
    np.testing.assert_allclose(np.bincount(ints) / n, [1 / 3] * 3, atol=0.015)


def test_each_run_draws_anew_and_a_seed_reproduces_the_runs():
    first = draws(lambda: NR.randn(3), runs=3, seed=7)
    again = draws(lambda: NR.randn(3), runs=3, seed=7)
    other = draws(lambda: NR.randn(3), runs=3, seed=8)
    assert not np.allclose(first[0], first[1])
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(first[0], other[0])


def test_choice_without_replacement_of_several_items_is_refused():
    with G.Graph().as_default():
        with pytest.raises(G.errors.UnsupportedError, match="replace=False"):
            NR.choice(5, size=3, replace=False)
