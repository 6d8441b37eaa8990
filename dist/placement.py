"""`place(graph)`: a device for every node, from the user's `graph.device` scopes and colocation rules.

A node the user placed (built inside a `graph.device(...)` scope) keeps that device. The others
(device "", graph/devices.py) are placed by these rules, in this order:

1. Colocation groups, which must be on one device (a user placement of one member places all;
   two members placed on different devices by the user is a `PlacementError` naming both lines):
   - a loop variable's Enter, Merge, Switch, NextIteration and Exit (one loop variable's control
     structure; the executor fires a Merge on its NextIteration's value, so the back edge
     cannot cross devices);
   - a Variable with its reads and assigns;
   - a stack or TensorArray with the ops that use its handle (any edge carrying a `variant`);
   - a gradient node with the forward node it differentiates (`Graph.colocate_with`), unless the
     user placed it or its group elsewhere.
2. A group still unplaced takes the device of its inputs' producers (the first one placed), else
   of its consumers, repeated until nothing changes: values stay where they are made.
3. What is left (a graph with no placement at all) goes to `default_device`.
4. Host memory, as TensorFlow keeps it: a group placed on a GPU whose every node gives only bool
   or integer scalars (a loop counter's Enter/Merge/Switch/NextIteration/Exit, its increment, the
   predicate and its LoopCond, integer constants) runs on the CPU of the same task, so control
   flow reads its predicates and counters in host memory and a loop copies nothing per
   iteration for them (exec/device/transfer.py). A TensorArray's group goes there too: its
   kernels keep their elements in host lists, so values written from a GPU cross by copies.

The result is a dict node -> canonical device name ("/task:0/cpu:1"). The graph is not changed.
"""
from __future__ import annotations

import logging
from collections import Counter

from graph import dtypes as _dt
from graph.core import Graph, Node
from graph.devices import UNPLACED, DeviceSpec, canonical_device, parse_device
from graph.errors import GraphError
from graph.index import GraphIndex
from graph.logs import get_logger
from graph.op_names import ENTER, EXIT, MERGE, NEXT_ITERATION, SWITCH

DEFAULT_DEVICE = "/task:0/cpu:0"
logger = get_logger(__name__)


class PlacementError(GraphError, ValueError):
    """Nodes that must share a device were placed on different ones by the user."""


def place(graph: Graph, nodes: list[Node] | None = None, default_device: str = DEFAULT_DEVICE) -> dict[Node, str]:
    """A canonical device for each of `nodes` (default: every node of `graph`); see the module docstring."""
    nodes = list(graph.nodes) if nodes is None else nodes
    groups = _Groups(nodes)
    first_use: dict = {}  # id(Variable) -> the first of `nodes` that uses it
    for n in nodes:
        v = n.attrs.get("variable")
        if v is not None and getattr(v, "is_variable", False):
            first_use.setdefault(id(v), n)
    for n in nodes:
        for reason, other in _must_share(n, first_use):
            groups.join(n, other, reason, hard=True)
    for n in nodes:
        fwd = graph.colocation.get(n)
        if fwd is not None and n.device == UNPLACED:
            groups.join(n, fwd, "a gradient node and the node it differentiates", hard=False)
    _propagate(nodes, groups)
    default = canonical_device(default_device)
    placed = {n: groups.device(n) or default for n in nodes}
    _host_memory_to_cpu(nodes, groups, placed)
    if logger.isEnabledFor(logging.DEBUG):
        counts = Counter(placed.values())
        logger.debug("placed %d nodes: %s", len(placed), ", ".join(f"{d} {k}" for d, k in sorted(counts.items())))
    return placed


def _host_memory_to_cpu(nodes: list[Node], groups: "_Groups", placed: dict) -> None:
    """Rule 4: groups on a GPU whose nodes all give bool or integer scalars, and TensorArrays, go to that
    task's CPU."""
    members: dict[Node, list[Node]] = {}
    for n in nodes:
        if parse_device(placed[n]).type == "gpu":
            members.setdefault(groups.find(n), []).append(n)
    for group in members.values():
        if all(_host_memory(n) for n in group) or any(n.op.startswith("TensorArray") for n in group):
            spec = parse_device(placed[group[0]])
            host = str(DeviceSpec("cpu", 0, spec.job, spec.task))
            for n in group:
                placed[n] = host


def _host_memory(n: Node) -> bool:
    """Whether every output of `n` is a bool or integer scalar (a node with none is not)."""
    return bool(n.outputs) and all(
        t.dtype is not _dt.variant and t.dtype.kind in "biu" and t.shape == () for t in n.outputs)


def _must_share(n: Node, first_use: dict):
    """(reason, node) pairs: `n` must be on the node's device."""
    op = n.op
    if op == MERGE and any(t.node.op == NEXT_ITERATION for t in n.inputs):
        for t in n.inputs:
            if t.node.op in (ENTER, NEXT_ITERATION):
                yield _loop_variable(n), t.node
    elif op == SWITCH and _is_loop_merge(n.inputs[0].node):
        yield _loop_variable(n.inputs[0].node), n.inputs[0].node
    elif op == EXIT and n.inputs[0].node.op == SWITCH:
        yield _loop_variable(n.inputs[0].node), n.inputs[0].node
    variable = n.attrs.get("variable")
    if variable is not None and getattr(variable, "is_variable", False):
        first = first_use[id(variable)]
        if first is not n:
            yield f"Variable {variable.name!r} and its reads and assigns", first
    for t in n.inputs:
        if t.dtype is _dt.variant:
            yield "a stack or TensorArray and the ops that use its handle", t.node


def _is_loop_merge(n: Node) -> bool:
    return n.op == MERGE and any(t.node.op == NEXT_ITERATION for t in n.inputs)


def _loop_variable(merge: Node) -> str:
    where = merge.frame.describe() if merge.frame is not None else "a loop"
    return f"the control structure (Enter, Merge, Switch, NextIteration, Exit) of a loop variable of {where}"


class _Groups:
    """Union-find over nodes; each root holds the group's device (None: unplaced yet) and the member
    the user placed there (for error messages)."""

    def __init__(self, nodes):
        self.parent: dict[Node, Node] = {}
        self.placed: dict[Node, tuple[str, Node] | None] = {}
        for n in nodes:
            self.parent[n] = n
            self.placed[n] = (canonical_device(n.device), n) if n.device != UNPLACED else None

    def find(self, n: Node) -> Node:
        parent = self.parent
        root = n
        while parent[root] is not root:
            root = parent[root]
        while parent[n] is not root:
            parent[n], n = root, parent[n]
        return root

    def join(self, a: Node, b: Node, reason: str, hard: bool) -> None:
        if b not in self.parent:  # outside the nodes being placed (pruned away)
            return
        ra, rb = self.find(a), self.find(b)
        if ra is rb:
            return
        pa, pb = self.placed[ra], self.placed[rb]
        if pa is not None and pb is not None and pa[0] != pb[0]:
            if not hard:
                return
            raise PlacementError(
                f"{reason} must be on one device, but {_describe(pa[1])} is placed on {pa[0]} and "
                f"{_describe(pb[1])} on {pb[0]}: place them on the same device, or leave one of them unplaced "
                "(outside any graph.device scope) so that it follows the other", pa[1].source or pb[1].source)
        self.parent[rb] = ra
        self.placed[ra] = pa or pb

    def device(self, n: Node) -> str | None:
        p = self.placed[self.find(n)]
        return p[0] if p is not None else None

    def set_device(self, n: Node, device: str) -> None:
        self.placed[self.find(n)] = (device, n)


def _describe(n: Node) -> str:
    built = f" (built at {n.source})" if n.source is not None else ""
    return f"{n.op} {n.name}{built}"


def _propagate(nodes: list[Node], groups: _Groups) -> None:
    """Rule 2: unplaced groups follow their producers, else their consumers, until nothing changes."""
    index = GraphIndex(nodes)
    changed = True
    while changed:
        changed = False
        for n in nodes:
            if groups.device(n) is None:
                for t in n.inputs:
                    d = groups.device(t.node) if t.node in index else None
                    if d is not None:
                        groups.set_device(n, d)
                        changed = True
                        break
        for n in reversed(nodes):
            if groups.device(n) is None:
                for c in index.consumers(n):
                    d = groups.device(c)
                    if d is not None:
                        groups.set_device(n, d)
                        changed = True
                        break
