"""memory_policy="recompute": gradients equal those of "keep" on random loop programs (checkpoint every 1, 2,
3, 7 iterations; trip counts not divisible by k, zero-trip loops; nested loops, recomputed too; TensorArray writes;
parallel_iterations 1 and 10; both execution modes), and the saved state is all that the forward loop keeps."""
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import grad
import graph
from exec import Session
from exec.memory import memory_manager
from tests.grad import programs as P

floats = st.floats(-1.5, 1.5, allow_nan=False).map(lambda v: round(v, 3))
vec = st.tuples(floats, floats).map(lambda t: np.array(t, dtype=np.float64))


def _fit(block, in_loop: bool = False):
    """The program without TensorArray writes in nested loops (a recomputed body may write arrays in its
    own context only, not in the loops inside it)."""
    out = []
    for s in block:
        if s[0] == "if":
            s = (*s[:3], _fit(s[3], in_loop), _fit(s[4], in_loop))
        elif s[0] == "while":
            s = (*s[:4], s[4] and not in_loop, _fit(s[5], True))
        out.append(s)
    return out


def _with_policy(policy, k):
    """programs._graph_while building every loop with `policy`."""
    plain = P._graph_while

    def build(s, v, p, par):
        if policy == "keep":
            return plain(s, v, p, par)
        with graph.loop_memory_policy(policy, k):
            return plain(s, v, p, par)
    return build


def _gradients(prog, x0, w0, policy, k, par, mode, monkeypatch):
    g = graph.Graph()
    with g.as_default(), monkeypatch.context() as m:
        m.setattr(P, "_graph_while", _with_policy(policy, k))
        x = graph.placeholder(np.float64, (2,), name="x")
        w = graph.placeholder(np.float64, (2,), name="w")
        loss = P.build_graph(prog, x, w, par)
        gs = grad.gradients(loss, [x, w], non_differentiable="ignore")
    return Session(g, mode=mode).run((loss, gs), {x: x0, w: w0})


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


LOOP = [("while", "a", 4.0, 4, False, [("assign", "a", ("tanh_prod", "a", "b")),
                                          ("if", "b", 0.0, [("assign", "b", ("mul_w", "a"))],
                                           [("assign", "b", ("sin", "b"))])])]
NESTED = [("while", "b", 4.0, 3, True, [("while", "a", 2.0, 4, False, [("assign", "a", ("square_w", "b")),
                                                                       ("assign", "b", ("add", "a", "b"))])])]
ZERO_TRIPS = [("while", "a", -9.0, 4, False, [("assign", "a", ("tanh", "a"))])]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prog=P.programs(depth=2), x0=vec, w0=vec, k=st.sampled_from([1, 2, 3, 7]), par=st.sampled_from([1, 10]),
       mode=st.sampled_from(["compiled", "dataflow"]))
@example(prog=LOOP, x0=np.array([0.3, -0.2]), w0=np.array([0.5, 1.1]), k=3, par=10, mode="dataflow")
@example(prog=NESTED, x0=np.array([0.3, -0.2]), w0=np.array([0.5, 1.1]), k=2, par=10, mode="compiled")
@example(prog=ZERO_TRIPS, x0=np.array([0.3, -0.2]), w0=np.array([0.5, 1.1]), k=7, par=1, mode="dataflow")
def test_recomputed_gradients_equal_kept_ones(prog, x0, w0, k, par, mode, monkeypatch):
    prog = _fit(prog)
    loss, (gx, gw) = _gradients(prog, x0, w0, "recompute", k, par, mode, monkeypatch)
    kloss, (kx, kw) = _gradients(prog, x0, w0, "keep", None, par, mode, monkeypatch)
    assert loss == kloss
    _close(gx, kx)
    _close(gw, kw)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prog=P.programs(depth=2, features=("matmul", "gradients")), x0=vec, w0=vec, k=st.sampled_from([1, 2, 3]),
       mode=st.sampled_from(["compiled", "dataflow"]))
@example(prog=[("while", "a", 2.0, 3, False, [("grad", "b", "a", "cond_sq", True)])], x0=np.array([0.3, -0.2]),
         w0=np.array([0.5, 1.1]), k=1, mode="dataflow")
def test_recomputed_bodies_with_matmuls_and_gradients_taken_inside(prog, x0, w0, k, mode, monkeypatch):
    """Weight matmuls (loop sums under keep, not under recompute), and gradients taken in the body, in a
    branch, from a loss computed before the branch (its gradient cond reads the loss cond's branch values)."""
    prog = _fit(prog)
    loss, (gx, gw) = _gradients(prog, x0, w0, "recompute", k, 10, mode, monkeypatch)
    kloss, (kx, kw) = _gradients(prog, x0, w0, "keep", None, 10, mode, monkeypatch)
    assert loss == kloss
    _close(gx, kx)
    _close(gw, kw)


def _rnn(policy, k, trips, par=10):
    """An LSTM-like cell over `trips` steps: four gates from one matmul, a cell state, a hidden state."""
    g = graph.Graph()
    rng = np.random.default_rng(1)
    with g.as_default():
        xs = graph.placeholder(np.float64, (trips, 4, 8), name="xs")
        W = graph.placeholder(np.float64, (16, 32), name="W")
        opts = {} if policy == "keep" else {"memory_policy": policy, "checkpoint_every": k}

        def step(t, h, c):
            z = graph.matmul(graph.concat([graph.gather(xs, t), h], axis=1), W)
            i, f, o, u = (z[:, 8 * j:8 * (j + 1)] for j in range(4))
            c = graph.sigmoid(f) * c + graph.sigmoid(i) * graph.tanh(u)
            return t + 1, graph.sigmoid(o) * graph.tanh(c), c
        zero = graph.constant(np.zeros((4, 8)))
        _, h, _ = graph.while_loop(lambda t, h, c: t < trips, step, (graph.constant(0), zero, zero),
                                   parallel_iterations=par, **opts)
        loss = graph.reduce_sum(h * h)
        gw = grad.gradients(loss, [W])[0]
    feeds = {xs: rng.normal(size=(trips, 4, 8)), W: rng.normal(size=(16, 32)) * 0.3}
    return g, gw, feeds


@pytest.mark.parametrize("mode", ["compiled", "dataflow"])
def test_recompute_saves_less_for_an_lstm_like_loop(mode):
    trips = 40
    peaks, values = {}, {}
    for policy, k in (("keep", None), ("recompute", 1), ("recompute", 8)):
        g, gw, feeds = _rnn(policy, k, trips)
        sess = Session(g, mode=mode)
        mem = memory_manager(sess.runtime)
        mem.reset_peak()
        values[policy, k] = sess.run(gw, feeds)
        peaks[policy, k] = mem.stats()["peak_bytes"]
        assert mem.stats()["bytes_in_use"] == 0   # every checkpoint and segment state was popped
    state = 2 * 4 * 8 * 8 + 8   # h, c and the step counter
    assert peaks["recompute", 1] == trips * state
    assert peaks["keep", None] > 3 * peaks["recompute", 1]   # keep: six gate values and the matmul's rows
    # 5 checkpoints, and one segment: 8 iterations' values that the gradient reads (keep's, without the rows)
    per_iteration = peaks["keep", None] / trips
    assert peaks["recompute", 8] <= (trips // 8) * state + 8 * per_iteration
    assert peaks["recompute", 8] < peaks["keep", None] / 3
    for key in (("recompute", 1), ("recompute", 8)):
        _close(values[key], values["keep", None])
