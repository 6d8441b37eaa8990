"""A loop's main recurrence: found in the plan, run inline on a quiet machine and first in the pool on a busy one."""
import numpy as np

import graph as G
from exec import Session
from exec.node_kinds import ASYNC
from exec.recurrence import _components


def test_recurrent_matmul_is_on_the_recurrence_and_the_input_projection_is_not():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(5, 32, 256)) * 0.1
    wx, wh = rng.normal(size=(256, 256)) * 0.05, rng.normal(size=(256, 256)) * 0.05
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, xs.shape)

        def body(i, h):
            return i + 1, G.tanh(G.add(G.matmul(x[i], G.constant(wx), name="input_proj"),
                                       G.matmul(h, G.constant(wh), name="recurrent")))
        _, h = G.while_loop(lambda i, h: i < 5, body, (G.constant(0), G.zeros([32, 256], np.float64)))
    sess = Session(g, inter_op_threads=2)
    got = sess.run(h, {x: xs})
    want = np.zeros((32, 256))
    for t in range(5):
        want = np.tanh(xs[t] @ wx + want @ wh)
    np.testing.assert_allclose(got, want)
    plan = next(iter(sess._plans.values()))
    plan.other_cores = 2.0  # as if other processes had taken the cores: the recurrence goes to the pool
    np.testing.assert_array_equal(sess.run(h, {x: xs}), got)
    names = {plan.nodes[i].name.rsplit("/", 1)[-1]: i for i in range(len(plan.nodes))}
    assert names["recurrent"] in plan.recurrence and names["input_proj"] not in plan.recurrence
    assert plan.kind[names["recurrent"]] == plan.kind[names["input_proj"]] == ASYNC


def test_strongly_connected_components():
    #  0 -> 1 -> 2 -> 0 is a cycle, 2 -> 3 -> 4 -> 3 another, 5 alone
    succ = [[1], [2], [0, 3], [4], [3], []]
    comps = sorted(sorted(c) for c in _components(6, succ))
    assert comps == [[0, 1, 2], [3, 4], [5]]


def test_other_cores_from_two_snapshots():
    from exec import load
    a = (0.0, 10.0, 1.0)
    assert load.other_cores(a, (1.0, 11.5, 1.5)) == 1.0   # 1.5 s busy, 0.5 s of it ours, in 1 s
    assert load.other_cores(a, (0.01, 10.0, 1.0)) is None  # too short to tell
    assert load.other_cores(None, a) is None
