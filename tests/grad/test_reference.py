"""Exact gradients through data-dependent loops: the three programs of peers/grad_while.py.

x0 = [1, 2, 3], w = 1.5, loss = sum(x_final), d loss / d w. The references are
computed with forward-mode dual numbers over exact fractions, so they are the
true values; the graph's float64 results must match to float64 precision, for
every `parallel_iterations`.
"""
from fractions import Fraction

import numpy as np
import pytest

import grad
import graph
from exec import Session

X0 = [1.0, 2.0, 3.0]
W0 = 1.5


class Dual:
    """a + b eps over exact fractions; `v` is a list (the vector x) or a scalar."""

    def __init__(self, v, d):
        self.v, self.d = v, d

    def __mul__(self, other):  # vector * scalar
        return Dual([a * other.v for a in self.v], [a * other.d + da * other.v for a, da in zip(self.v, self.d)])

    def __add__(self, other):  # vector + scalar
        return Dual([a + other.v for a in self.v], [da + other.d for da in self.d])

    def sum(self):
        return sum(self.v), sum(self.d)


def _exact(program):
    x = Dual([Fraction(v) for v in X0], [Fraction(0)] * 3)
    w = Dual(Fraction(W0), Fraction(1))
    return program(x, w)


def ref_while(x, w):
    while x.sum()[0] < 100:
        x = x * w
    return x.sum()


def ref_cond_in_while(x, w):
    while x.sum()[0] < 100:
        x = x * w if x.sum()[0] > 20 else x + w
    return x.sum()


def ref_nested_while(x, w):
    for j in range(3):
        while x.sum()[0] < 40 * (j + 1):
            x = x * w
        x = x + w
    return x.sum()


S = graph.reduce_sum


def g_while(x, w, par):
    (x,) = graph.while_loop(lambda x: S(x) < 100.0, lambda x: (x * w,), (x,), parallel_iterations=par)
    return S(x)


def g_cond_in_while(x, w, par):
    def body(x):
        return (graph.cond(S(x) > 20.0, lambda: x * w, lambda: x + w),)
    (x,) = graph.while_loop(lambda x: S(x) < 100.0, body, (x,), parallel_iterations=par)
    return S(x)


def g_nested_while(x, w, par):
    def outer(j, x):
        limit = 40.0 * graph.cast(j + 1, np.float64)
        (x,) = graph.while_loop(lambda x: S(x) < limit, lambda x: (x * w,), (x,), parallel_iterations=par)
        return j + 1, x + w
    _, x = graph.while_loop(lambda j, x: j < 3, outer, (graph.constant(0), x), parallel_iterations=par)
    return S(x)


CASES = {"while": (ref_while, g_while), "cond_in_while": (ref_cond_in_while, g_cond_in_while),
         "nested_while": (ref_nested_while, g_nested_while)}


def test_reference_values_are_the_published_ones():
    assert _exact(ref_while) == (Fraction(102515625, 1000000), Fraction(47840625, 100000))
    assert float(_exact(ref_cond_in_while)[1]) == 384.75
    assert float(_exact(ref_nested_while)[1]) == 872.625


@pytest.mark.parametrize("par", [1, 2, 32])
@pytest.mark.parametrize("case", list(CASES))
def test_gradient_matches_exact_reference(case, par):
    ref, build = CASES[case]
    ref_loss, ref_grad = _exact(ref)
    g = graph.Graph()
    with g.as_default():
        w = graph.placeholder(np.float64, (), name="w")
        loss = build(graph.constant(np.array(X0)), w, par)
        gw = grad.gradients(loss, w)
    loss_v, gw_v = Session(g).run([loss, gw], {w: W0})
    assert loss_v == pytest.approx(float(ref_loss), rel=1e-15, abs=0)
    assert gw_v == pytest.approx(float(ref_grad), rel=1e-14, abs=0)


@pytest.mark.parametrize("case", list(CASES))
def test_float32_program_passes_the_peer_check(case):
    """The peers' float32 setting: within 1e-3 relative of the exact value."""
    ref, build = CASES[case]
    ref_loss, ref_grad = _exact(ref)
    g = graph.Graph()
    with g.as_default():
        w = graph.placeholder(np.float32, (), name="w")
        loss = build(graph.constant(np.array(X0, np.float32)), w, 32)
        gw = grad.gradients(loss, w)
    loss_v, gw_v = Session(g).run([loss, gw], {w: W0})
    assert gw_v.dtype == np.float32
    assert abs(gw_v - float(ref_grad)) <= 1e-3 * float(ref_grad)
    assert abs(loss_v - float(ref_loss)) <= 1e-3 * float(ref_loss)


def test_graph_has_real_loops_and_stacks():
    """The gradient is in-graph control flow: loops and stacks, not an unrolled copy."""
    g = graph.Graph()
    with g.as_default():
        w = graph.placeholder(np.float64, (), name="w")
        grad.gradients(g_nested_while(graph.constant(np.array(X0)), w, 32), w)
    ops = {n.op for n in g.nodes}
    assert {"Switch", "Merge", "Enter", "Exit", "NextIteration", "StackPush", "StackPop"} <= ops
    frames = {n.frame.frame_name for n in g.nodes if n.frame is not None}
    assert len(frames) == 4  # two forward loops, two gradient loops
    assert sum(n.op == "Mul" for n in g.nodes) < 12
