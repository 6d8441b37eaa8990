"""`partition(graph)`: one graph whose nodes each run on one device, cross-device edges cut into Send/Recv.

Every node is copied into a new graph with the device `dist.place` gave it. An edge whose two
ends are on different devices becomes a Send on the producer's device and a Recv on the
consumer's (graph/ops/communication.py), one pair per (tensor, destination device) however many
consumers it has there; a control edge becomes a Send of a dummy value (a Const that waits for
the source node) and a Recv that the consumer waits for. The Send and the Recv live in the frame
of the value they carry, so their rendezvous keys, built at run time from the iteration's tag,
match (exec/rendezvous.py).

Distributed loops (the paper's Figure 10, TensorFlow's graph_partition AddControlLoops): a Recv
inside a loop has no data inputs, so something must fire it once per iteration, and a device
holding part of a loop body must run as many iterations as the loop does. For each (loop frame,
device) that has a Recv, the Recv gets a control input from a node that fires in every iteration
of that frame on that device: a Merge of one of the loop's variables when the device holds one
(its control structure is colocated, dist/placement.py), else a control loop built for that device:

    Enter(parent trigger or a Const) -> Merge -> Switch(pred) -> NextIteration -> Merge

whose predicate is the loop's LoopCond where that is on the device, else a Recv of it (keyed by
iteration, fired by this Merge). Each device's copy of the loop thus runs the iterations the
predicate's device decides, and nested loops get theirs inside their parent's. Conds need nothing
more: a dead value travels through a Send as a dead token (a branch holding a Send or a Recv is
never skipped by the executor, exec/branches.py).

The result is pure graph: running it is exec's job (exec/multi_device.py).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from graph.core import Graph, Node
from graph.frames import parent_frame
from graph.logs import get_logger
from graph.node import Tensor
from graph.op_names import CONST, ENTER, LOOP_COND, MERGE, NEXT_ITERATION, RECV, SEND, SWITCH
from graph.ops.communication import CONTROL_DUMMY
from graph.printing import format_node

_BOOL = np.dtype(bool)
logger = get_logger(__name__)


@dataclass
class Partitioned:
    """The partitioned graph: every device's nodes in one Graph, each node's `device` set."""

    graph: Graph
    devices: list[str]                      # canonical names, sorted
    copies: dict[Node, Node]                # original node -> its copy
    placement: dict[Node, str]              # original node -> its device
    sends: dict[str, list[Node]] = field(default_factory=dict)  # device -> its Send nodes

    def nodes_on(self, device: str) -> list[Node]:
        return [n for n in self.graph.nodes if n.device == device]

    def tensor(self, t: Tensor) -> Tensor:
        """The copy of original tensor `t`."""
        return self.copies[t.node].outputs[t.index]

    def __str__(self) -> str:
        """Each device's nodes, one per line as `Graph.__str__` prints them (Send and Recv included)."""
        out = []
        for device in self.devices:
            nodes = self.nodes_on(device)
            cut = sum(n.op in (SEND, RECV) for n in nodes)
            out.append(f"# {device}: {len(nodes)} nodes, {cut} Send/Recv")
            out.extend(format_node(n) for n in nodes)
        return "\n".join(out)


def partition(graph: Graph, placement: dict[Node, str], nodes: list[Node] | None = None,
              fed: frozenset | set = frozenset()) -> Partitioned:
    """Partitions `nodes` (default: all of `graph`, in graph order) by `placement` (`dist.place`).
    Nodes in `fed` are copied without their inputs: their values are fed at run time."""
    nodes = list(graph.nodes) if nodes is None else sorted(nodes, key=lambda n: n.id)
    parted = _Partitioner(graph, placement, nodes, fed).run()
    if logger.isEnabledFor(logging.DEBUG):
        _log_cut(parted, len(nodes))
    return parted


def _log_cut(parted: Partitioned, num_nodes: int) -> None:
    sends = sum(len(s) for s in parted.sends.values())
    recvs = sum(n.op == RECV for n in parted.graph.nodes)
    logger.debug("partitioned %d nodes onto %d devices (%s): %d Sends, %d Recvs; %d nodes after (control loops "
                 "included)", num_nodes, len(parted.devices), ", ".join(parted.devices), sends, recvs,
                 len(parted.graph.nodes))


class _Partitioner:
    def __init__(self, graph: Graph, placement: dict, nodes: list[Node], fed):
        self.source_graph = graph
        self.placement = placement
        self.nodes = nodes
        self.fed = fed
        self.out = Graph()
        self.out.seed = graph.seed
        self.copies: dict[Node, Node] = {}
        self.recvs: dict[tuple, Tensor] = {}       # (tensor, device) -> its Recv's output there
        self.control_recvs: dict[tuple, Node] = {}  # (node, device) -> the Recv standing for it
        self.untriggered: list[tuple] = []          # (Recv, frame, device) still without a trigger
        self.triggers: dict[tuple, Node] = {}       # (frame, device) -> fires once per iteration there
        self.root_consts: dict[str, Node] = {}
        self.sends: dict[str, list[Node]] = {}
        self.loop_conds: dict = {}                  # frame -> its LoopCond node
        self.loop_merges: dict = {}                 # (frame, device) -> a loop variable's Merge there
        self.enter_attrs: dict = {}                 # frame -> the attrs of one of its Enters

    def run(self) -> Partitioned:
        for n in self.nodes:
            self._copy(n)
            if n.op == LOOP_COND:
                self.loop_conds.setdefault(n.frame, n)
            elif n.op == MERGE and any(t.node.op == NEXT_ITERATION for t in n.inputs):
                self.loop_merges.setdefault((n.frame, self.placement[n]), self.copies[n])
            elif n.op == ENTER:
                self.enter_attrs.setdefault(n.context.frame, n.attrs)
        for n in self.nodes:
            self._wire(n)
        while self.untriggered:
            r, frame, device = self.untriggered.pop()
            r.add_control_input(self._trigger(frame, device))
        devices = sorted(set(self.placement[n] for n in self.nodes))
        return Partitioned(self.out, devices, self.copies, self.placement, self.sends)

    # -- nodes ---------------------------------------------------------------------------------
    def _new(self, op: str, inputs: list, attrs: dict, device: str, context, source, name: str,
             outputs: list, controls=()) -> Node:
        node = Node(self.out, -1, self.out.unique_name(name), op, list(inputs), list(controls), attrs, device,
                    source, context)
        node.outputs = tuple(Tensor(node, i, dt, sh) for i, (dt, sh) in enumerate(outputs))
        return self.out.insert_node(node)

    def _copy(self, n: Node) -> None:
        node = Node(self.out, -1, n.name, n.op, [], [], dict(n.attrs), self.placement[n], n.source, n.context)
        node.outputs = tuple(Tensor(node, t.index, t.dtype, t.shape) for t in n.outputs)
        self.copies[n] = self.out.insert_node(node)

    def _wire(self, n: Node) -> None:
        if n in self.fed:
            return
        copy, device = self.copies[n], self.placement[n]
        inputs = [self.copies[t.node].outputs[t.index] if self._placed(t.node, n) == device else self._recv(t, device)
                  for t in n.inputs]
        controls = [self.copies[c] if self._placed(c, n) == device else self._control_recv(c, device)
                    for c in n.control_inputs]
        self.out.update_node(copy, inputs=inputs, control_inputs=controls)

    def _placed(self, producer: Node, consumer: Node) -> str:
        device = self.placement.get(producer)
        if device is None or producer not in self.copies:
            raise ValueError(f"partition: {consumer.name} reads {producer.name}, which is not among the nodes being "
                             "partitioned (pass every node the others need)")
        return device

    # -- cut edges -----------------------------------------------------------------------------
    def _recv(self, t: Tensor, device: str) -> Tensor:
        """The Recv on `device` of original tensor `t` (made with its Send the first time)."""
        got = self.recvs.get((t, device))
        if got is not None:
            return got
        n = t.node
        if n.op == ENTER and n.attrs["is_constant"]:
            # A loop constant is entered again on `device` from its value in the parent frame: sent once
            # per instance of the loop, not once per iteration (and by a partition that may run no
            # iterations of its own).
            outer = n.inputs[0]
            value = self.copies[outer.node].outputs[outer.index] if self.placement[outer.node] == device \
                else self._recv(outer, device)
            enter = self._new(ENTER, [value], dict(n.attrs), device, n.context, n.source, n.name, [(t.dtype, t.shape)])
            got = self.recvs[(t, device)] = enter.outputs[0]
            return got
        src_device = self.placement[t.node]
        value = self.copies[t.node].outputs[t.index]
        got = self._pair(value, t.name, src_device, device, t.node.context, t.node.source)
        if n.op == LOOP_COND:
            # received, the predicate is marked a loop's again: the executor treats Switches on a LoopCond
            # as the loop's (never as a cond's skippable branches), and forwards the LoopCond for free
            got = self._new(LOOP_COND, [got], {}, device, n.context, n.source, n.name, [(t.dtype, t.shape)]).outputs[0]
        self.recvs[(t, device)] = got
        return got

    def _control_recv(self, c: Node, device: str) -> Node:
        got = self.control_recvs.get((c, device))
        if got is None:
            src_device = self.placement[c]
            dummy = self._new(CONST, [], {"value": np.array(True), "dtype": _BOOL}, src_device, c.context, c.source,
                              f"{c.name}/control_dummy", [(_BOOL, ())], controls=[self.copies[c]])
            got = self._pair(dummy.outputs[0], CONTROL_DUMMY + c.name, src_device, device, c.context,
                             c.source).node
            self.control_recvs[(c, device)] = got
        return got

    def _pair(self, value: Tensor, tensor_name: str, src: str, dst: str, context, source) -> Tensor:
        attrs = {"tensor_name": tensor_name, "send_device": src, "recv_device": dst}
        base = value.node.name
        send = self._new(SEND, [value], dict(attrs), src, context, source, f"{base}/send", [])
        self.sends.setdefault(src, []).append(send)
        recv = self._new(RECV, [], dict(attrs, dtype=value.dtype, shape=value.shape), dst, context, source,
                         f"{base}/recv", [(value.dtype, value.shape)])
        frame = context.frame if context is not None else None
        if frame is not None:
            self.untriggered.append((recv, frame, dst))
        return recv.outputs[0]

    # -- distributed loops -----------------------------------------------------------------------
    def _trigger(self, frame, device: str) -> Node:
        """A node of `frame` on `device` that fires in every iteration of the frame (see the module docstring)."""
        got = self.triggers.get((frame, device)) or self.loop_merges.get((frame, device))
        if got is not None:
            return got
        loop_cond = self.loop_conds.get(frame)
        if loop_cond is None or frame not in self.enter_attrs:
            raise ValueError(f"partition: {frame.describe()} has nodes on {device} but its LoopCond or Enters "
                             "are not among the nodes being partitioned")
        parent = parent_frame(frame)
        source = getattr(frame, "source", None)  # the user's line of the loop
        if parent is None:
            start = self._root_const(device)
        else:
            start = self._trigger(parent, device)
        value = start.outputs[0]
        spec = [(value.dtype, value.shape)]
        attrs = dict(self.enter_attrs[frame], is_constant=False)
        enter = self._new(ENTER, [value], attrs, device, frame, source, f"{frame.frame_name}/control_enter", spec)
        merge = self._new(MERGE, [enter.outputs[0], enter.outputs[0]], {}, device, frame, source,
                          f"{frame.frame_name}/control_merge", spec + [(np.dtype(np.int32), ())])
        self.triggers[(frame, device)] = merge
        if self.placement[loop_cond] == device:
            pred = self.copies[loop_cond].outputs[0]
        else:
            pred = self._recv(loop_cond.outputs[0], device)
        switch = self._new(SWITCH, [merge.outputs[0], pred], {}, device, frame, source,
                           f"{frame.frame_name}/control_switch", spec + spec)
        nxt = self._new(NEXT_ITERATION, [switch.outputs[1]], {}, device, frame, source,
                        f"{frame.frame_name}/control_next", spec)
        merge.update_input(1, nxt.outputs[0])
        return merge

    def _root_const(self, device: str) -> Node:
        got = self.root_consts.get(device)
        if got is None:
            got = self.root_consts[device] = self._new(CONST, [], {"value": np.array(True), "dtype": _BOOL}, device,
                                                       None, None, "control_start", [(_BOOL, ())])
        return got
