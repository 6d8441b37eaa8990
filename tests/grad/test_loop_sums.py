"""Weights and biases of a loop get their gradients after the gradient loop, from the rows of all
iterations joined (grad/loop_sums.py): the same gradients as the unrolled loop's, first and second
order, whatever the trip count (zero too) and the rows per iteration."""
import numpy as np
import pytest

import grad
import graph as G
from exec import Session
from exec.memory import memory_manager
from tests.grad.gradcheck import check_gradients

D, H = 3, 4


def _cell(x, h, wx, wh, b):
    return G.tanh(x @ wx + h @ wh + b)


def _build(n, loop, second_order=False):
    """h_t = tanh(x_t @ wx + h_{t-1} @ wh + b) over n steps; loss = sum(h_n^2) (+ second order)."""
    rng = np.random.default_rng(0)
    g = G.Graph()
    with g.as_default():
        xs = G.constant(rng.normal(size=(max(n, 1), 2, D)))
        wx = G.placeholder(np.float64, (D, H), name="wx")
        wh = G.placeholder(np.float64, (H, H), name="wh")
        b = G.placeholder(np.float64, (H,), name="b")
        h0 = G.constant(rng.normal(size=(2, H)))
        if loop:
            _, h = G.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, _cell(xs[i], h, wx, wh, b)),
                                (G.constant(np.int64(0)), h0))
        else:
            h = h0
            for i in range(n):
                h = _cell(xs[i], h, wx, wh, b)
        ws = [wx, wh, b]
        gs = grad.gradients(G.reduce_sum(h * h), ws)
        if second_order:
            gs = grad.gradients(sum(G.reduce_sum(gw * gw) for gw in gs), ws)
    feeds = {wx: rng.normal(size=(D, H)) / 2, wh: rng.normal(size=(H, H)) / 2, b: rng.normal(size=H)}
    return g, gs, feeds


def _run(g, gs, feeds):
    sess = Session(g)
    out = sess.run(gs, feeds)
    assert memory_manager(sess.runtime).bytes_in_use == 0  # every row saved was joined
    return out


@pytest.mark.parametrize("n", [0, 1, 5])
def test_weight_and_bias_gradients_equal_the_unrolled_ones(n):
    for a, b in zip(_run(*_build(n, True)), _run(*_build(n, False))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_gradient_loop_has_no_per_iteration_weight_gradient():
    g, gs, feeds = _build(5, True)
    in_gradient_loop = [n for n in g.nodes if n.frame is not None and n.frame.frame_name.endswith("while_grad")]
    # left: dh_{t-1} = dz_t @ wh^T, the recurrence; the weight gradients are matmuls after the loop
    assert [n.op for n in in_gradient_loop].count("MatMul") == 1
    assert sum(n.op == "StackConcat" for n in g.nodes) == 3  # x rows, h rows, dz rows (shared by all three)


def test_second_order_through_the_joined_rows_equals_the_unrolled_one():
    for a, b in zip(_run(*_build(4, True, True)), _run(*_build(4, False, True))):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_rows_per_iteration_may_vary():
    rng = np.random.default_rng(3)
    xv, wv = rng.normal(size=(5, D)), rng.normal(size=(D, H))
    results = []
    for loop in (True, False):
        g = G.Graph()
        with g.as_default():
            x = G.constant(xv)
            w = G.placeholder(np.float64, (D, H), name="w")
            if loop:
                def body(i, s):
                    return i + 1, s + G.reduce_sum(G.tanh(x[:i + 1] @ w))  # i + 1 rows in iteration i
                _, s = G.while_loop(lambda i, s: i < 5, body, (G.constant(np.int64(0)), G.constant(0.0)))
            else:
                s = sum(G.reduce_sum(G.tanh(x[:i + 1] @ w)) for i in range(5))
            (gw,) = grad.gradients(s, [w])
        if loop:
            assert any(n.op == "StackConcat" for n in g.nodes)
        results.append(Session(g).run(gw, {w: wv}))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def test_weights_used_otherwise_are_accumulated_in_the_loop():
    """W on the left, W also read whole, a bias whose gradient rows nothing else saves: all summed in the
    gradient loop as before (no StackConcat), with the same results as unrolled."""
    rng = np.random.default_rng(4)
    wv, vv, hv = rng.normal(size=(H, H)) / 2, rng.normal(size=(2, H)), rng.normal(size=(2, H))
    results = []
    for loop in (True, False):
        g = G.Graph()
        with g.as_default():
            w = G.placeholder(np.float64, (H, H), name="w")
            v = G.placeholder(np.float64, (2, H), name="v")

            def step(h):
                return G.tanh(G.transpose(w @ G.transpose(h)) + v) * G.reduce_sum(w)
            h0 = G.constant(hv)
            if loop:
                _, h = G.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, step(h)), (G.constant(np.int64(0)), h0))
            else:
                h = h0
                for _ in range(3):
                    h = step(h)
            gs = grad.gradients(G.reduce_sum(h * h), [w, v])
        if loop:
            assert not any(n.op == "StackConcat" for n in g.nodes)
        results.append(Session(g).run(gs, {w: wv, v: vv}))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_nested_loops_inner_accumulates_outer_joins_rows():
    """The inner loop is differentiated inside the outer's gradient loop: it keeps its accumulator;
    the outer loop's own weight u gets its gradient from joined rows."""
    rng = np.random.default_rng(5)
    wv, uv, hv = rng.normal(size=(H, H)) / 2, rng.normal(size=(H, H)) / 2, rng.normal(size=(2, H))
    results = []
    for loop in (True, False):
        g = G.Graph()
        with g.as_default():
            w = G.placeholder(np.float64, (H, H), name="w")
            u = G.placeholder(np.float64, (H, H), name="u")
            h0 = G.constant(hv)
            if loop:
                def outer(i, h):
                    _, h = G.while_loop(lambda j, h: j < 2, lambda j, h: (j + 1, G.tanh(h @ w)),
                                        (G.constant(np.int64(0)), h))
                    return i + 1, h @ u
                _, h = G.while_loop(lambda i, h: i < 3, outer, (G.constant(np.int64(0)), h0))
            else:
                h = h0
                for _ in range(3):
                    for _ in range(2):
                        h = G.tanh(h @ w)
                    h = h @ u
            gs = grad.gradients(G.reduce_sum(h * h), [w, u])
        if loop:
            assert sum(n.op == "StackConcat" for n in g.nodes) == 2  # rows of h and of its gradient, for u
        results.append(Session(g).run(gs, {w: wv, u: uv}))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12)



def _ancestors(t):
    seen, todo = set(), [t.node]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(x.node for x in n.inputs)
            todo.extend(n.control_inputs)
    return seen


@pytest.mark.parametrize("n", [2, 5])
def test_unrolled_weight_gradient_is_one_matmul_of_the_joined_rows(n):
    """An unrolled loop's weight gets one contribution x_tᵀ @ g_t per step: they are summed as one matmul of
    the steps' rows joined (grad.accumulate), with the values of the loop's gradient."""
    g, gs, feeds = _build(n, False)
    outer = [m for m in _ancestors(gs[0]) if m.op == "MatMul" and m.inputs[0].node.op == "Transpose"]
    assert len(outer) == 1 and outer[0].inputs[0].node.inputs[0].node.op == "Concat"
    for a, b in zip(_run(g, gs, feeds), _run(*_build(n, True))):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_unrolled_weight_gradients_equal_finite_differences():
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(4, 2, D))

    def unrolled(wx, wh, b):
        h = G.constant(np.zeros((2, H)))
        for i in range(4):
            h = _cell(G.constant(xs[i]), h, wx, wh, b)
        return h
    check_gradients(unrolled, rng.normal(size=(D, H)) / 2, rng.normal(size=(H, H)) / 2, rng.normal(size=H))
