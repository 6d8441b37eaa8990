"""Gradients of gradients (of gradients) through cond and while loops, Hessian-vector products."""
from fractions import Fraction

import numpy as np
import pytest

import grad
import graph
import transpile
from exec import Session
from tests.grad.test_reference import CASES, W0, X0


class Taylor:
    """Truncated Taylor series in w around W0 over exact fractions: coefficient k is the k-th
    derivative / k!. `v` is a list of series (the vector x) or one series (the parameter w)."""

    ORDER = 4

    def __init__(self, v):
        self.v = v

    @staticmethod
    def _mul(a, b):
        return [sum(a[i] * b[k - i] for i in range(k + 1)) for k in range(Taylor.ORDER)]

    def __mul__(self, o):  # vector * scalar
        return Taylor([self._mul(a, o.v) for a in self.v])

    def __add__(self, o):  # vector + scalar
        return Taylor([[p + q for p, q in zip(a, o.v)] for a in self.v])

    def sum(self):
        total = [sum(a[k] for a in self.v) for k in range(Taylor.ORDER)]
        return total[0], total


def _exact_derivatives(program):
    """The second and third derivatives of the loss in w, exactly."""
    x = Taylor([[Fraction(v), 0, 0, 0] for v in X0])
    _, series = program(x, Taylor([Fraction(W0), Fraction(1), 0, 0]))
    return 2 * series[2], 6 * series[3]


@pytest.mark.parametrize("par", [1, 32])
@pytest.mark.parametrize("case", list(CASES))
def test_second_and_third_derivatives_through_data_dependent_loops(case, par):
    ref, build = CASES[case]
    second, third = _exact_derivatives(ref)
    g = graph.Graph()
    with g.as_default():
        w = graph.placeholder(np.float64, (), name="w")
        loss = build(graph.constant(np.array(X0)), w, par)
        (gw,) = grad.gradients(loss, [w])
        (hw,) = grad.gradients(gw, [w])
        (tw,) = grad.gradients(hw, [w])
    got2, got3 = Session(g).run([hw, tw], {w: W0})
    assert got2 == pytest.approx(float(second), rel=1e-13)
    assert got3 == pytest.approx(float(third), rel=1e-13)


def test_hessian_vector_product_through_a_loop_with_a_cond():
    rng = np.random.default_rng(5)
    W0_, x0, v0 = rng.normal(size=(3, 3)) * 0.4, rng.normal(size=(3,)), rng.normal(size=(3, 3))
    g = graph.Graph()
    with g.as_default():
        W = graph.placeholder(np.float64, (3, 3), name="W")
        v = graph.placeholder(np.float64, (3, 3), name="v")

        def body(i, h):
            pre = graph.matmul(W, h)
            return i + 1, graph.cond(graph.reduce_sum(pre) > 0.0, lambda: graph.tanh(pre), lambda: pre * 0.5 + h)
        _, h = graph.while_loop(lambda i, h: i < 5, body, (graph.constant(0), graph.constant(x0)))
        loss = graph.reduce_sum(h * h)
        (gW,) = grad.gradients(loss, [W])
        (hvp,) = grad.gradients(graph.reduce_sum(gW * v), [W])
    sess = Session(g)
    got = sess.run(hvp, {W: W0_, v: v0})
    eps = 1e-6
    want = (sess.run(gW, {W: W0_ + eps * v0}) - sess.run(gW, {W: W0_ - eps * v0})) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_second_order_of_a_nested_loop_is_independent_of_parallel_iterations():
    outs = []
    for par in (1, 2, 32):
        g = graph.Graph()
        with g.as_default():
            w = graph.placeholder(np.float64, (2,), name="w")

            def outer(i, x):
                def inner(j, y):
                    return j + 1, graph.sin(y * w) + y
                _, x = graph.while_loop(lambda j, y: j < i + 1, inner, (graph.constant(0), x),
                                        parallel_iterations=par)
                return i + 1, x * 0.8
            _, x = graph.while_loop(lambda i, x: i < 3, outer, (graph.constant(0), graph.constant(np.array([0.3, 0.5]))),
                                    parallel_iterations=par)
            (gw,) = grad.gradients(graph.reduce_sum(x * x), [w])
            (hw,) = grad.gradients(gw[0], [w])
        outs.append(Session(g).run([gw, hw], {w: np.array([0.7, -0.4])}))
    for o in outs[1:]:
        np.testing.assert_array_equal(o[0], outs[0][0])
        np.testing.assert_array_equal(o[1], outs[0][1])


@pytest.mark.parametrize("par", [1, 32])
@pytest.mark.parametrize("taken", [True, False])
def test_second_order_of_a_loop_in_a_cond_whose_body_multiplies_by_an_outer_weight(taken, par):
    # The weight's gradient is summed after the gradient loop from the rows of all iterations
    # (grad.loop_sums); its transpose, computed once outside the gradient loop, reads the weight
    # as the gradient cond captures it, and so belongs in that cond's branch.
    rng = np.random.default_rng(7)
    x0 = rng.normal(size=(1, 2)) * (1.0 if taken else -1.0) + (0.8 if taken else -0.8)
    W0, v0 = rng.normal(size=(2, 2)) * 0.6, rng.normal(size=(2, 2))
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (1, 2), name="x")
        W = graph.placeholder(np.float64, (2, 2), name="W")
        v = graph.placeholder(np.float64, (2, 2), name="v")

        def taken_branch():
            def body(i, h):
                return i + 1, graph.tanh(graph.matmul(h, W) + 0.1)
            return graph.while_loop(lambda i, h: i < 3, body, (graph.constant(0), x), parallel_iterations=par)[1]
        y = graph.cond(graph.reduce_sum(x) > 0.0, taken_branch, lambda: graph.matmul(x, W) * 2.0)
        (gW,) = grad.gradients(graph.reduce_sum(y * y * y), [W])
        (hvp,) = grad.gradients(graph.reduce_sum(gW * v), [W])
        (third,) = grad.gradients(graph.reduce_sum(hvp * v), [W])
    sess = Session(g)
    feeds = {x: x0, v: v0}
    got, got3 = sess.run([hvp, third], {**feeds, W: W0})
    eps = 1e-6
    want = (sess.run(gW, {**feeds, W: W0 + eps * v0}) - sess.run(gW, {**feeds, W: W0 - eps * v0})) / (2 * eps)
    want3 = (sess.run(hvp, {**feeds, W: W0 + eps * v0}) - sess.run(hvp, {**feeds, W: W0 - eps * v0})) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got3, want3, rtol=1e-5, atol=1e-7)


def _loop_in_a_branch_reading_outer_tensors(w, x, n):
    u = np.sin(w)                 # computed outside the cond, read by the loop's body
    if np.sum(x) > 0:
        h = x
        i = 0
        while i < n:
            h = np.tanh(h * u) + x
            for j in range(i):    # a nested loop reading w from two levels out
                h = h * w
            i += 1
        y = h
    else:
        y = x * w
    return np.sum(y * y * y)


def _second_order_of_the_converted_function(w, x, n, v):
    (g,) = grad.gradients(_loop_in_a_branch_reading_outer_tensors(w, x, n), [w])
    (hv,) = grad.gradients(np.sum(g * v), [w])
    return g, hv


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_second_order_of_a_converted_loop_in_a_branch_reading_outer_tensors(sign):
    f = transpile.function(_second_order_of_the_converted_function)
    w0, x0, v0 = np.array([0.7, -0.3]), sign * np.array([0.4, 0.5]), np.array([0.6, -0.8])
    g, hv = f(w0, x0, 3, v0)
    eps = 1e-5
    loss = _loop_in_a_branch_reading_outer_tensors   # plain Python
    np.testing.assert_allclose(g, [(loss(w0 + eps * e, x0, 3) - loss(w0 - eps * e, x0, 3)) / (2 * eps)
                                   for e in np.eye(2)], rtol=1e-6, atol=1e-8)
    want = (f(w0 + eps * v0, x0, 3, v0)[0] - f(w0 - eps * v0, x0, 3, v0)[0]) / (2 * eps)
    np.testing.assert_allclose(hv, want, rtol=1e-6, atol=1e-8)
