"""Loops backward over a tensor bound (`reversed(range(n))`, `range(n)[::-1]`, slices of ranges) are graph
loops, and `r.size` of an array of unknown shape (relax_shapes) is a tensor: converted == plain Python."""
import numpy as np

import transpile
from tests.transpile.helpers import assert_converted_equivalent


def countdown(n):
    out = []
    for t in reversed(range(n)):   # n is a graph input: a graph loop, last index first
        out.append(t)
    return np.array(out, dtype=np.int64)


def test_reversed_range_of_a_tensor_bound():
    f = assert_converted_equivalent(countdown, (0,), (1,), (5,))
    assert f.traces == 1


def sliced_ranges(n, i):
    s = 0
    for t in range(0, n - 1)[::-1]:
        s = s * 10 + t
    for t in range(2, n + 5, 3)[1:]:
        s = s + t
    for t in range(n)[-2::-2]:
        s = s * 3 + t
    return s + range(n)[i]


def test_slices_and_items_of_a_range_with_a_tensor_bound():
    assert_converted_equivalent(sliced_ranges, (2, -1), (4, 1), (7, 0), (8, -3))


def discount_rewards(r, gamma):
    discounted = np.zeros_like(r)
    running = 0.0
    for t in reversed(range(0, r.size)):
        if r[t] != 0:
            running = 0.0
        running = running * gamma + r[t]
        discounted[t] = running
    return discounted


def test_size_of_an_array_of_relaxed_shape_bounds_a_backward_loop():
    f = transpile.function(discount_rewards, relax_shapes=True)
    for k in (3, 5, 6, 9):
        r = np.array([0, 1.0, 0, 0, 1, 0, 0, 2.0, 0][:k])
        np.testing.assert_allclose(f(r, 0.9), discount_rewards(r, 0.9))
    assert f.traces == 2           # the first shape, then one trace with the length unknown
