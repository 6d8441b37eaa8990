"""Distributed loops written by hand: a Variable updated on another device each iteration, and nested
loops whose bodies span three devices with a TensorArray, for parallel_iterations 1, 2 and 32."""
import numpy as np
import pytest

import graph as G
from exec import Session
from tests.dist.helpers import within


@pytest.mark.parametrize("par", [1, 2, 32])
def test_a_variable_updated_on_another_device_each_iteration(par):
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.zeros(3), name="acc")
        n = G.placeholder(np.int64, (), name="n")

        def body(i, s):
            with G.device("/cpu:1"):
                a = v.assign_add(G.ones([3]) * G.cast(i, np.float64))
            with G.device("/cpu:0"):
                return i + 1, s + G.reduce_sum(a)
        with G.device("/cpu:0"):
            i, s = G.while_loop(lambda i, s: i < n, body, [G.constant(np.int64(0)), G.constant(0.0)],
                                parallel_iterations=par)
    sess = Session(g)
    assert within(20, sess.run, [i, s], {n: 5}) == [5, 3.0 * (0 + 1 + 3 + 6 + 10)]
    np.testing.assert_array_equal(v.value, [10.0, 10.0, 10.0])


@pytest.mark.parametrize("par", [1, 2, 32])
def test_nested_loops_across_three_devices(par):
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, (), name="n")

        def outer(k, total, ta):
            def inner(j, acc):
                with G.device("/task:1/cpu:0"):
                    term = G.cast(j * k, np.float64)
                with G.device("/cpu:1"):
                    return j + 1, acc + G.sqrt(term + 1.0)
            with G.device("/cpu:1"):
                _, acc = G.while_loop(lambda j, acc: j < k, inner, [G.constant(np.int64(0)), G.constant(0.0)],
                                      parallel_iterations=par)
            with G.device("/cpu:0"):
                return k + 1, total + acc, ta.write(k, acc)
        with G.device("/cpu:0"):
            ta = G.TensorArray(np.float64, element_shape=[])
            _, total, ta = G.while_loop(lambda k, t, ta: k < n, outer, [G.constant(np.int64(0)), G.constant(0.0), ta],
                                        parallel_iterations=par)
            rows = ta.stack()
    want = [sum(np.sqrt(j * k + 1.0) for j in range(k)) for k in range(6)]
    got_total, got_rows = within(30, Session(g).run, [total, rows], {n: 6})
    np.testing.assert_allclose(got_rows, want)
    np.testing.assert_allclose(got_total, sum(want))
