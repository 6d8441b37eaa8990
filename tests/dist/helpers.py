"""Helpers for the device tests: a device for every node of a built graph, runs that cannot hang."""
from __future__ import annotations

import random
import threading

from graph import dtypes as _dt
from graph.control_flow.primitives import CONTROL_FLOW_OPS

DEVICES = ("/cpu:0", "/cpu:1", "/task:1/cpu:0")


def scatter(g, seed: int, devices=DEVICES, nodes=None) -> None:
    """Places each computing node of `g` (or of `nodes`) on a device drawn at random; leaves to
    dist.place what the colocation rules decide (control-flow plumbing, Variable and handle ops)."""
    rng = random.Random(seed)
    for n in g.nodes if nodes is None else nodes:
        if n.op in CONTROL_FLOW_OPS or n.attrs.get("variable") is not None:
            continue
        if any(t.dtype is _dt.variant for t in list(n.inputs) + list(n.outputs)):
            continue
        n.device = rng.choice(devices)


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
