"""Logging: every logger of the packages is under "flowgraph", which has a NullHandler; one-off work is logged
(conversion, traces, plans, modes, compilation, gradients, partitions), and a warm call logs nothing."""
import logging
import re

import numpy as np
import pytest

import dist
import exec
import grad
import graph as G
import transpile
from exec import Session

PACKAGES = ("graph", "exec", "grad", "dist", "transpile")


@pytest.fixture
def debug_records(caplog):
    caplog.set_level(logging.DEBUG, logger="flowgraph")
    return caplog


def _messages(caplog, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


def test_the_packages_log_under_one_namespace_with_a_null_handler():
    assert all(m.__name__ in PACKAGES for m in (dist, exec, grad, G, transpile))
    ours = [name for name in logging.root.manager.loggerDict if name.split(".")[0] in PACKAGES]
    assert ours == []  # a logger named after a module directly would sit outside "flowgraph"
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("flowgraph").handlers)
    assert logging.getLogger("flowgraph.transpile.api").parent.name.startswith("flowgraph")


def test_conversion_trace_plan_mode_compilation_and_gradients_are_logged_once(debug_records):
    w = G.Variable(np.float64(0.5))

    @transpile.function
    def step(x, n):
        h = x
        for _ in range(n):  # n is a tensor: a graph loop
            h = np.tanh(h * w)
        loss = np.sum(h)
        return loss, grad.gradients(loss, [w])[0]

    step(np.ones(3), 4)
    converted = _messages(debug_records, "flowgraph.transpile.operators.calls")
    assert any(re.match(r"converted \S*step \(.*test_logging.py:\d+\) in ", m) for m in converted)
    traced = _messages(debug_records, "flowgraph.transpile.api")
    assert len(traced) == 1 and re.match(r"traced \S*step in .* ms: <Graph \d+ nodes, 2 loops>", traced[0])
    assert any(" nodes added (1 gradient loops) in " in m for m in _messages(debug_records, "flowgraph.grad.gradients"))
    assert any(m.startswith("plan for ") for m in _messages(debug_records, "flowgraph.exec.session"))
    assert any(m.startswith("plan runs ") for m in _messages(debug_records, "flowgraph.exec.compiled.auto"))

    debug_records.clear()
    step(np.ones(3), 5)  # a warm call: the same trace, nothing to log
    assert debug_records.records == []

    step(np.ones(4), 5)  # a new shape: a retrace, at INFO with its reason
    retraces = [r for r in debug_records.records if r.levelno == logging.INFO]
    assert len(retraces) == 1 and retraces[0].name == "flowgraph.transpile.api"
    assert re.match(r"retracing \S*step", retraces[0].getMessage())


def test_a_compilation_is_logged_with_its_time(debug_records):
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [])
        y = x * 2 + 1
    Session(g, mode="compiled").run(y, {x: 1.0})
    compiled = _messages(debug_records, "flowgraph.exec.session")
    assert any(m.startswith("plan of ") and " compiled in " in m for m in compiled)
    assert "plan runs as compiled code: mode='compiled'" in _messages(debug_records, "flowgraph.exec.compiled.auto")


def test_placement_and_partition_are_logged(debug_records):
    g = G.Graph()
    with g.as_default():
        with G.device("/cpu:0"):
            x = G.placeholder(np.float64, [])
        with G.device("/cpu:1"):
            y = x * 2
        with G.device("/cpu:0"):
            z = y + 1
    assert Session(g).run(z, {x: 1.0}) == 3.0
    placed = _messages(debug_records, "flowgraph.dist.placement")
    assert placed and placed[0].startswith("placed ")
    parted = _messages(debug_records, "flowgraph.dist.partition")
    assert len(parted) == 1 and "onto 2 devices" in parted[0] and "Sends" in parted[0]
