"""numpy functions in converted code: np.random draws at each run (graph random ops), stacking and outer
products of graph values, and an unsupported function named at the user's line."""
import inspect

import numpy as np
import pytest

import graph
import transpile
from tests.transpile.helpers import assert_converted_equivalent


def sample_next(p, h):
    x = np.zeros((4, 1))
    ix = np.random.choice(range(4), p=p.ravel())     # a draw at each run, not one while tracing
    x[ix] = 1
    noise = np.random.uniform() * 0.0 + np.random.randn(2).sum() * 0.0
    return ix, x, h + noise


def test_np_random_draws_at_each_run_and_a_seed_reproduces_them():
    p = np.array([0.1, 0.0, 0.6, 0.3])
    np.random.seed(3)
    f = transpile.function(sample_next)
    first = [f(p, 1.0) for _ in range(200)]
    picks = np.array([ix for ix, _, _ in first])
    assert set(picks) <= {0, 2, 3} and len(set(picks)) == 3 and f.traces == 1
    for ix, x, h in first[:5]:
        assert x[ix, 0] == 1 and x.sum() == 1 and h == 1.0
    np.random.seed(3)
    again = transpile.function(sample_next)
    assert [int(again(p, 1.0)[0]) for _ in range(200)] == [int(i) for i in picks]


def stacks(x, y):
    return np.vstack([x, y]), np.hstack([x, y]), np.outer(x, y), np.vstack([np.outer(x, y), x])


def test_stacking_and_outer_products():
    assert_converted_equivalent(stacks, (np.arange(3.0), np.ones(3)), (np.array([1.0, -2.0, 0.5]), np.arange(3.0)))


def uses_unsupported(x):
    np.put(x, [0], 1.0)                             # <- error
    return x


def test_an_unsupported_numpy_function_is_named_at_the_users_line():
    with pytest.raises(graph.errors.UnsupportedError) as info:
        transpile.function(uses_unsupported)(np.ones(3))
    lines, first = inspect.getsourcelines(uses_unsupported)
    line = first + next(i for i, t in enumerate(lines) if "# <- error" in t)
    assert f"{__file__}:{line}: np.put writes into its argument in place, and graph tensors are immutable" \
        in str(info.value)
