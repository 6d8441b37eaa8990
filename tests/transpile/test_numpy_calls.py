"""numpy constructors in converted code work on tensor arguments, like numpy on the values:
`np.zeros(n)`, `np.arange(n)`, `np.array([x, y])`, `np.asarray(x)`, `np.float32(x)` with graph tensors."""
import numpy as np
import pytest

from tests.transpile.helpers import assert_converted_equivalent


def zeros_of_a_tensor_length(x, n):
    return np.zeros(n) + x, np.ones((n, 2), dtype=np.int32), np.empty(n) * 0, np.full((2, n), 7)


def arange_with_tensor_bounds(x, n):
    total = 0.0
    for v in np.arange(n):
        total += v * x
    return total, np.arange(1, n, 2), np.arange(0.5, n, dtype=np.float32)


def array_of_tensors(x, n):
    return np.array([x, x * 2, n]), np.asarray(x * 1.0), np.array([[x, 1.0], [2.0, x]]).T


def scalar_types_cast(x, n):
    return np.float32(x) + np.float32(1), np.int64(x * 3), np.float64(n) / 2


def identity_of_a_tensor_size(x, n):
    return np.eye(n) * x


def constructors_inside_graph_loops(x, n):
    acc = np.zeros(3)
    i = 0
    while i < n:
        acc = acc + np.asarray([x, i, 1.0]) * np.float64(i)
        i += 1
    return acc


@pytest.mark.parametrize("fn", [zeros_of_a_tensor_length, arange_with_tensor_bounds, array_of_tensors,
                                scalar_types_cast, identity_of_a_tensor_size, constructors_inside_graph_loops],
                         ids=lambda f: f.__name__)
def test_numpy_constructor_on_tensors_matches_numpy(fn):
    assert_converted_equivalent(fn, (1.5, 3), (-0.25, 0), (2.0, 5))
