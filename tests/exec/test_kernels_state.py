"""Variable kernels: reads see the current value, writes store new read-only arrays."""
import numpy as np
import pytest

import graph as G
from exec.kernels import get_kernel
from exec.runtime import Runtime


def _kernel(tensor):
    return get_kernel(tensor.node, Runtime())


def test_read_assign_and_updates():
    v = G.Variable(np.arange(3.0))
    with G.Graph().as_default():
        read, assign = _kernel(v.read()), _kernel(v.assign(np.zeros(3)))
        add, sub = _kernel(v.assign_add(1.0)), _kernel(v.assign_sub(1.0))
        at = v.assign_at(G.placeholder(np.int64, []), 9.0)
        at_fn = _kernel(at)
    first = read()
    np.testing.assert_array_equal(add(np.float64(2)), [2, 3, 4])
    np.testing.assert_array_equal(first, [0, 1, 2])  # an earlier read keeps its value
    np.testing.assert_array_equal(sub(np.ones(3)), [1, 2, 3])
    np.testing.assert_array_equal(at_fn(np.float64(9), np.int64(-1)), [1, 2, 9])
    fed = np.array([5.0, 6.0, 7.0])
    stored = assign(fed)
    assert stored is v.value and stored is not fed and not stored.flags.writeable
    np.testing.assert_array_equal(read(), fed)


def test_scalar_variables_read_as_numpy_scalars():
    v = G.Variable(np.float32(2.5))
    with G.Graph().as_default():
        got = _kernel(v.read())()
    assert np.ndim(got) == 0 and got.dtype == np.float32


def test_a_run_time_shape_mismatch_names_the_variable():
    v = G.Variable(np.zeros(3), name="bias")
    with G.Graph().as_default():
        assign = _kernel(v.assign(G.placeholder(np.float64, [None])))
    with pytest.raises(ValueError, match="Variable 'bias"):
        assign(np.zeros(4))
