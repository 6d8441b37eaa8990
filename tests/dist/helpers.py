"""Helpers for the device tests: a device for every node of a built graph, runs that cannot hang."""
from __future__ import annotations

import random
import threading

import numpy as np
from hypothesis import strategies as st

import grad
import graph
from exec import Session
from graph import dtypes as _dt
from graph.control_flow.contexts import WhileContext
from graph.control_flow.primitives import CONTROL_FLOW_OPS
from tests.grad import programs as GP

DEVICES = ("/cpu:0", "/cpu:1", "/task:1/cpu:0")


def placeable(n) -> bool:
    """Whether a test may place node `n`: not the control-flow plumbing, Variable ops or handle ops, whose
    device the colocation rules give (dist.place)."""
    if n.op in CONTROL_FLOW_OPS or n.attrs.get("variable") is not None:
        return False
    return not any(t.dtype is _dt.variant for t in list(n.inputs) + list(n.outputs))


def scatter(g, seed: int, devices=DEVICES, nodes=None) -> None:
    """Places each computing node of `g` (or of `nodes`) on a device drawn at random; leaves to
    dist.place what the colocation rules decide (control-flow plumbing, Variable and handle ops).
    Through `Graph.update_node`, so a graph that ran before (a transpile.function's trace) runs
    partitioned from its next run on."""
    rng = random.Random(seed)
    for n in g.nodes if nodes is None else nodes:
        if placeable(n):
            g.update_node(n, device=rng.choice(devices))


def scatter_lines(g, seed: int, devices=DEVICES) -> None:
    """Places the computing nodes of each user line together on a device drawn at random: what a `with
    graph.device(...)` around each statement of a converted function would do."""
    rng = random.Random(seed)
    chosen: dict = {}
    for n in g.nodes:
        if placeable(n):
            g.update_node(n, device=chosen.setdefault(str(n.source), rng.choice(devices)))


def by_construct(g, top: str, loop_body: str, branch: str) -> None:
    """Places each computing node by the construct it is built in: `top` level, the body of a loop, or a
    branch of a cond (innermost wins), so that loop bodies and branches run on other devices than the
    loops and conds around them."""
    for n in g.nodes:
        if placeable(n):
            ctx = n.context
            device = top if ctx is None else loop_body if isinstance(ctx, WhileContext) else branch
            g.update_node(n, device=device)


def alternate(g, devices=DEVICES) -> None:
    """Places the computing nodes on `devices` in turn, in graph order: every device gets some."""
    placed = [n for n in g.nodes if placeable(n)]
    for k, n in enumerate(placed):
        g.update_node(n, device=devices[k % len(devices)])


def within(seconds: float, fn, *args):
    """fn(*args), or an AssertionError if it has not returned after `seconds` (a hung run)."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001  (re-raised below, in the test's thread)
            box["error"] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"the run did not finish within {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


floats = st.floats(-1.5, 1.5, allow_nan=False).map(lambda v: round(v, 3))
vec = st.tuples(floats, floats).map(lambda t: np.array(t, dtype=np.float64))


def loss_and_gradients(prog, x0, w0, par, seed, devices=DEVICES, seconds: float = 30):
    """((loss, gradients wrt x and w), session) of a tests/grad program run on one device (seed None), or with
    its forward nodes scattered over `devices` by `seed` (gradients follow their forward nodes)."""
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (2,), name="x")
        w = graph.placeholder(np.float64, (2,), name="w")
        loss = GP.build_graph(prog, x, w, par)
        if seed is not None:
            scatter(g, seed, devices)
        grads = grad.gradients(loss, [x, w], non_differentiable="ignore")
    sess = Session(g, inter_op_threads=0, mode="dataflow")
    return within(seconds, sess.run, (loss, grads), {x: x0, w: w0}), sess
