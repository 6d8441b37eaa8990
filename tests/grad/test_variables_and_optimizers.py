"""Gradients with respect to Variables (reads anywhere, including loop bodies) and the optimizers."""
import numpy as np
import pytest

import grad
import graph
from exec import Session

S = graph.reduce_sum


def _model(W, h0, read):
    """A data-dependent loop: applies h = tanh(h @ W) + b until the activity settles or 6 steps."""
    def body(i, h):
        h_new = graph.tanh(graph.matmul(h, read(W))) + read("b") * 0.1
        return i + 1, graph.cond(S(h_new) > 0.0, lambda: h_new, lambda: h_new * 0.5 + h * 0.5)
    _, h = graph.while_loop(lambda i, h: graph.logical_and(i < 6, S(h * h) > 1e-3), body, (graph.constant(0), h0))
    return S(h * h) + S(read(W) * read(W)) * 0.01


def test_variable_gradient_sums_reads_inside_and_outside_loops():
    rng = np.random.default_rng(2)
    w0, b0, x0 = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(3,)), rng.normal(size=(2, 3))
    W, b = graph.Variable(w0, name="W"), graph.Variable(b0, name="b")
    g = graph.Graph()
    with g.as_default():
        loss = _model("W", graph.constant(x0), lambda name: (W if name == "W" else b).read())
        gW, gb = grad.gradients(loss, [W, b])
    got = Session(g).run([gW, gb])
    # the same function of placeholders
    g2 = graph.Graph()
    with g2.as_default():
        pW, pb = graph.placeholder(np.float64, (3, 3)), graph.placeholder(np.float64, (3,))
        loss2 = _model("W", graph.constant(x0), lambda name: pW if name == "W" else pb)
        want = grad.gradients(loss2, [pW, pb])
    want = Session(g2).run(want, {pW: w0, pb: b0})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_unused_variable_gets_zeros_or_none():
    v = graph.Variable(np.ones(2), name="unused")
    with graph.Graph().as_default() as g:
        x = graph.placeholder(np.float64, ())
        assert grad.gradients(x * 2.0, [v], unconnected="none") == [None]
        (z,) = grad.gradients(x * 2.0, [v])
    np.testing.assert_array_equal(Session(g).run(z, {x: 1.0}), [0.0, 0.0])


def _train(opt, steps=8):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(16, 3))
    Y = np.tanh(X @ np.array([[0.8], [-0.5], [0.3]]))[:, 0]
    W = graph.Variable(np.zeros((3, 1)), name="W")
    c = graph.Variable(0.0, name="c")
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (16, 3), name="x")
        y = graph.placeholder(np.float64, (16,), name="y")
        # refine the prediction a data-dependent number of times (until it moves little)
        w = W.read()

        def body(i, p, delta):
            p_new = graph.tanh(graph.matmul(x, w)[:, 0] + c.read()) * 0.5 + p * 0.5
            return i + 1, p_new, S(graph.abs(p_new - p))
        _, pred, _ = graph.while_loop(lambda i, p, d: graph.logical_and(i < 20, d > 1e-3), body,
                                      (graph.constant(0), graph.zeros((16,)), graph.constant(1.0)))
        loss = graph.reduce_mean(graph.square(pred - y))
        grads = grad.gradients(loss, [W, c])
        grads, _ = grad.clip_by_global_norm(grads, 5.0)
        train = opt.apply(grads, [W, c])
    sess = Session(g)
    return [float(sess.run([loss, train], {x: X, y: Y})[0]) for _ in range(steps)]


@pytest.mark.parametrize("opt", [grad.SGD(0.5), grad.Momentum(0.2, momentum=0.9), grad.Momentum(0.2, nesterov=True),
                                 grad.Adam(0.1)], ids=["sgd", "momentum", "nesterov", "adam"])
def test_training_with_a_data_dependent_loop_reduces_the_loss(opt):
    losses = _train(opt)
    assert losses[-1] < 0.5 * losses[0]
    assert all(np.isfinite(losses))


def test_optimizer_updates_match_numpy():
    g0 = np.array([0.5, -2.0])
    for opt in [grad.SGD(0.1), grad.Momentum(0.1, 0.9), grad.Adam(0.01)]:
        p = graph.Variable(np.array([1.0, 1.0]), name="p")
        gr = graph.Graph()
        with gr.as_default():
            step = opt.apply([graph.constant(g0)], [p])
        sess = Session(gr)
        v, m, s, value = np.zeros(2), np.zeros(2), np.zeros(2), np.array([1.0, 1.0])
        for t in range(1, 4):
            sess.run(step)
            if isinstance(opt, grad.SGD):
                value = value - 0.1 * g0
            elif isinstance(opt, grad.Momentum):
                v = 0.9 * v + g0
                value = value - 0.1 * v
            else:
                m = 0.9 * m + 0.1 * g0
                s = 0.999 * s + 0.001 * g0 * g0
                value = value - 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(s) + 1e-8)
            np.testing.assert_allclose(p.value, value, rtol=1e-12, err_msg=type(opt).__name__)


def test_clip_by_global_norm():
    with graph.Graph().as_default() as g:
        a, b = graph.constant(np.array([3.0, 0.0])), graph.constant(np.array([[4.0]]))
        (ca, cb, cn), norm = grad.clip_by_global_norm([a, b, None], 1.0)
        (ua,), _ = grad.clip_by_global_norm([a], 10.0)
    assert cn is None
    out = Session(g).run([ca, cb, norm, ua])
    assert out[2] == 5.0
    np.testing.assert_allclose(out[0], [0.6, 0.0])
    np.testing.assert_allclose(out[1], [[0.8]])
    np.testing.assert_array_equal(out[3], [3.0, 0.0])
