"""The reprs a user sees in a REPL, a debugger or a log line: a Graph's size, a Session's setup, an optimizer's
arguments."""
import numpy as np
import pytest

import grad
import graph as G
from exec import Session
from exec.device.simulated import SimulatedDevice


def test_a_graph_repr_counts_nodes_loops_and_conds():
    g = G.Graph()
    assert repr(g) == "<Graph 0 nodes>"
    with g.as_default():
        x = G.placeholder(np.float64, [])
        y = G.cond(x > 0, lambda: x * 2, lambda: x - 1)
        G.while_loop(lambda i, a: i < 10, lambda i, a: (i + 1, G.cond(a > 1, lambda: a * 2, lambda: a)), (0, y))
    assert repr(g) == f"<Graph {len(g.nodes)} nodes, 1 loop, 2 conds>"


def test_a_session_repr_names_its_mode_device_and_cached_plans():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [])
        y = x * 2
    s = Session(g)
    assert repr(s) == "<Session mode='auto', device='host', 0 cached plans>"
    s.run(y, {x: 1.0})
    assert repr(s) == "<Session mode='auto', device='host', 1 cached plan>"
    on_device = Session(g, mode="dataflow", device=SimulatedDevice(memory_limit=1000))
    assert repr(on_device) == "<Session mode='dataflow', device='/gpu:0', 0 cached plans>"


@pytest.mark.parametrize("optimizer, text", [
    (grad.Adam(), "Adam(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08)"),
    (grad.SGD(0.1), "SGD(learning_rate=0.1)"),
    (grad.Momentum(nesterov=True), "Momentum(learning_rate=0.01, momentum=0.9, nesterov=True)"),
])
def test_an_optimizer_repr_shows_its_arguments(optimizer, text):
    assert repr(optimizer) == text
    assert repr(eval(text, vars(grad))) == text  # it reads back as the call that makes it
