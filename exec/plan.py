"""Execution plans: the part of a graph a run needs, precomputed as flat arrays.

A plan is built once per (fetches, feeds, targets) signature and graph version,
and cached by the Session. Everything the executor's hot loop looks up is an
integer-indexed list: kernel callables, kinds, input counts, consumer edges.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from exec import layout
from exec.branches import plan_skipping
from exec.device.kernels import device_kernel, runs_on_device
from exec.devices import canonical_device, check_local
from exec.donation import donatable_slot, exclusive_inputs
from exec.kernels import HEAVY_OPS, INPLACE, get_inplace_kernel, get_kernel
from exec.kernels.registry import feeding
from exec.node_kinds import (
    ASYNC,
    COND_SWITCH,
    DIRECT,
    ENTER,
    EXIT,
    LOOP_MERGE,
    MERGE,
    MULTI,
    NEXT,
    NORMAL,
    PENDING,
    RECV,
    SEND,
    SINGLE_OUTPUT_KINDS,
    SWITCH,
    TO_FETCH,
    TO_GUARDED,
    TO_LOOP_MERGE,
    TO_MERGE,
)
from exec.pending import REMAINING, slot_of, template
from exec.recurrence import on_main_recurrence
from exec.rendezvous import rendezvous_key
from graph import op_names
from graph import shapes as _sh
from graph.control_structure import ControlStructure
from graph.core import Node, Tensor
from graph.index import in_graph_order, upstream

_KIND_OF_OP = {op_names.SWITCH: SWITCH, op_names.ENTER: ENTER, op_names.EXIT: EXIT, op_names.NEXT_ITERATION: NEXT, op_names.SEND: SEND, op_names.RECV: RECV}

# Elementwise work on at least this many elements goes to the pool (when enabled).
ASYNC_MIN_ELEMENTS = 1 << 17
ASYNC_MIN_MATMUL_FLOPS = 1 << 21


@dataclass
class Plan:
    nodes: list[Node]
    kind: list[int]
    fn: list
    nin: list[int]
    ndata: list[int]
    cons: list                # single-output kinds: [(dst, slot, mode)]; others: (port0, port1, control)
    tmpl: list                # pending-input record template per node that waits (exec/pending.py), or None
    sources: list[int]        # root nodes with no inputs (excluding feeds)
    feeds: list[tuple[int, int]]  # (node local id, feed index)
    fetches: list[Tensor]
    frame_info: dict = field(default_factory=dict)  # Enter local id -> (frame name, is_constant, par)
    num_enters: dict = field(default_factory=dict)  # frame name -> Enters in the plan
    exits: dict = field(default_factory=dict)       # frame name -> Exit local ids
    local: dict = field(default_factory=dict)       # Node -> local id
    extra_ports: dict = field(default_factory=dict)  # multi-output node -> consumer lists of ports >= 2
    bindable: dict = field(default_factory=dict)     # constant Enter -> [(dst, slot)] bound per frame
    unbound: dict = field(default_factory=dict)      # constant Enter -> entries delivered per iteration
    donated: dict = field(default_factory=dict)      # node -> input slot its kernel computes into
    uses_pool: bool = False                          # some node is ASYNC: runs need a pool
    recurrence: frozenset = frozenset()              # heavy nodes of loop recurrences (exec/recurrence.py)
    other_cores: float = 0.0                         # cores other processes used in the last run
    dead_cons: dict = field(default_factory=dict)    # Switch -> its ports' consumers but Exits
    branches: list = field(default_factory=list)     # skippable branches (exec/branches.py)
    cond_switches: dict = field(default_factory=dict)  # COND_SWITCH -> (branch ids, dead consumers outside)
    guards: dict = field(default_factory=dict)       # TO_GUARDED/TO_PRED destination -> ids of branches holding it
    comm: dict = field(default_factory=dict)         # Send/Recv -> its rendezvous key but the frame tag
    device: object = None                            # the exec.device.Device its kernels run on (None: host)


def prune(fetch_nodes: list[Node], fed: set) -> list[Node]:
    """Nodes needed to compute `fetch_nodes`, stopping at fed nodes, in graph order."""
    return in_graph_order(upstream(fetch_nodes, cut=fed))


def build_plan(graph, fetches: list[Tensor], targets: list[Node], feeds: list[Tensor], rt,
               use_pool: bool, device=None) -> Plan:
    """The plan of a run; `device` (an exec.device.Device): the nodes are its partition, whose kernels
    run on it (exec/device/kernels.py)."""
    with feeding(t.node for t in feeds):  # a fed node's value is never baked into a kernel
        return _build_plan(graph, fetches, targets, feeds, rt, use_pool, device)


def _build_plan(graph, fetches: list[Tensor], targets: list[Node], feeds: list[Tensor], rt,
                use_pool: bool, device) -> Plan:
    _check_request(fetches, feeds)
    fed_nodes = {t.node for t in feeds}
    nodes = prune([t.node for t in fetches] + list(targets), fed_nodes)
    flow = ControlStructure(nodes, cut=fed_nodes)  # before identities are forwarded: they carry frames
    forward = _forwarded_identities(nodes, fetches, fed_nodes)
    nodes = [n for n in nodes if n not in forward]
    n_nodes = len(nodes)
    plan = Plan(nodes, [0] * n_nodes, [None] * n_nodes, [0] * n_nodes, [0] * n_nodes, [[] for _ in range(n_nodes)],
                [None] * n_nodes, [], [], list(fetches), local={n: i for i, n in enumerate(nodes)})
    feed_index = {t.node: k for k, t in enumerate(feeds)}
    device_name = canonical_device(device.name) if device is not None else None
    for i, n in enumerate(nodes):
        if n in fed_nodes:
            plan.kind[i] = NORMAL  # a fed node "computes" the identity of its fed value
            plan.fn[i] = _identity
            plan.feeds.append((i, feed_index[n]))
        else:
            check_local(n, device_name)
            _plan_node(plan, i, n, rt, use_pool, flow)
    _add_edges(plan, forward, fed_nodes)
    _split_invariant_edges(plan)
    _donate(plan, rt, fed_nodes)
    if device is not None:
        _on_device(plan, device, fed_nodes)
    else:
        _pack(plan)
    _complete_ports(plan)
    skipping = plan_skipping(plan, flow)
    plan.branches, plan.cond_switches, plan.guards = skipping.branches, skipping.switches, skipping.guards
    for i in plan.cond_switches:
        plan.kind[i] = COND_SWITCH
    _bind_constants(plan)
    plan.uses_pool = ASYNC in plan.kind
    if plan.uses_pool:  # where the loops' critical recurrences run is decided per run (exec/recurrence.py)
        heavy = [k == ASYNC for k in plan.kind]
        on_main = on_main_recurrence(nodes, _successors(plan), heavy)
        plan.recurrence = frozenset(i for i, r in enumerate(on_main) if r)
    return plan


def _check_request(fetches: list[Tensor], feeds: list[Tensor]) -> None:
    """Only single-output nodes are fed; only values of the root frame are fetched."""
    for t in feeds:
        if len(t.node.outputs) != 1:
            raise ValueError(f"can only feed single-output nodes; {t.name} is output {t.index} of "
                             f"{t.node.op} {t.node.name}")
    for t in fetches:
        if t.node.frame is not None:
            raise ValueError(f"cannot fetch {t.name}: it lives inside {t.node.frame.describe()}; "
                             "return it from the loop as a loop variable")


def _plan_node(plan: Plan, i: int, n: Node, rt, use_pool: bool, flow: ControlStructure) -> None:
    """Node i's kind, kernel, input counts and pending-input template, and what its kind records."""
    k = _kind(n)
    plan.kind[i] = k
    if k not in SINGLE_OUTPUT_KINDS:
        plan.cons[i] = ([], [], [])
    if k in (NORMAL, MULTI):
        if n.op == op_names.PLACEHOLDER:
            loc = f" (created at {n.source})" if n.source else ""
            raise ValueError(f"placeholder {n.name!r}{loc} must be fed: pass it in feed_dict")
        plan.fn[i] = get_kernel(n, rt)
        if use_pool and k == NORMAL and _is_heavy(n):
            plan.kind[i] = ASYNC
    nd = plan.ndata[i] = len(n.inputs)
    nin = plan.nin[i] = nd + len(n.control_inputs)
    if nin == 0:
        if n.frame is not None:
            raise ValueError(f"node {n.name} inside a loop frame has no inputs and could never run")
        plan.sources.append(i)
    # pending-input templates; a node whose one input is a control edge gets one too, so that
    # it is called without arguments, as DIRECT would hand it the control value
    if plan.kind[i] not in (MERGE, LOOP_MERGE) and (nin > 1 or nin == 1 and nd == 0):
        plan.tmpl[i] = template(nin)
    if k in (SEND, RECV):
        a = n.attrs
        plan.comm[i] = rendezvous_key(a["send_device"], a["recv_device"], a["tensor_name"], "")
    if k == ENTER:
        name = n.attrs["frame_name"]
        plan.frame_info[i] = (name, n.attrs["is_constant"], n.attrs["parallel_iterations"])
        plan.num_enters[name] = plan.num_enters.get(name, 0) + 1
    elif k == EXIT:
        plan.exits.setdefault(flow.exit_frame(n).name, []).append(i)


def _add_edges(plan: Plan, forward: set, fed: set) -> None:
    """The consumer edges of every data and control input (read through forwarded identities), and
    the fetches' pseudo-edges."""
    local = plan.local
    for i, n in enumerate(plan.nodes):
        if n in fed:
            continue
        for j, t in enumerate(n.inputs):
            while t.node in forward:
                t = t.node.inputs[0]
            _add_edge(plan, local[t.node], t.index, i, j)
        for j, c in enumerate(n.control_inputs):
            _add_edge(plan, local[c], -1, i, plan.ndata[i] + j)
    for k, t in enumerate(plan.fetches):
        s = local[t.node]
        # a fetch is a pseudo-consumer: "dst" is the fetch's index in the results
        entries = plan.cons[s] if plan.kind[s] in SINGLE_OUTPUT_KINDS else _port_list(plan, s, t.index)
        entries.append((k, -1, TO_FETCH))


def _complete_ports(plan: Plan) -> None:
    """Every port of a multi-output node gets a (maybe empty) list; each Switch its dead consumers."""
    kind = plan.kind
    for i, n in enumerate(plan.nodes):
        if kind[i] not in SINGLE_OUTPUT_KINDS and len(n.outputs) > 2:
            _port_list(plan, i, len(n.outputs) - 1)
    for i in range(len(plan.nodes)):
        if kind[i] == SWITCH:  # the loop's exit side is dead every iteration but the last: skip it
            plan.dead_cons[i] = tuple([e for e in plan.cons[i][p] if kind[e[0]] != EXIT or e[2] == TO_FETCH]
                                      for p in (0, 1))


def _on_device(plan: Plan, device, fed: set) -> None:
    """The kernels of the device's partition run on it (exec/device/kernels.py)."""
    plan.device = device
    for i, node in enumerate(plan.nodes):
        if plan.kind[i] in (NORMAL, MULTI, ASYNC) and node not in fed and runs_on_device(node):
            plan.fn[i] = device_kernel(node, plan.fn[i], device, donated=i in plan.donated)


def _successors(plan: Plan) -> list[list[int]]:
    out = []
    for i, k in enumerate(plan.kind):
        lists = [plan.cons[i]] if k in SINGLE_OUTPUT_KINDS else [*plan.cons[i], *plan.extra_ports.get(i, ())]
        out.append([dst for entries in lists for dst, _, mode in entries if mode != TO_FETCH])
    return out


def _donate(plan: Plan, rt, fed: set) -> None:
    """Kernels that alone read an input's fresh buffer compute into it (exec/donation.py)."""
    for i, slots in exclusive_inputs(plan.nodes, plan.local, plan.fetches, fed).items():
        node = plan.nodes[i]
        if plan.kind[i] not in (NORMAL, ASYNC) or node.op not in INPLACE:
            continue
        j = donatable_slot(node, slots)
        f = None if j is None else get_inplace_kernel(node, rt, j)
        if f is not None:
            plan.fn[i] = f
            plan.donated[i] = j


def _pack(plan: Plan) -> None:
    """A loop's constant matmul operand that is a transposed view is laid out once (exec/layout.py): the
    decision compiled code takes, so that both compute the same bits."""
    for node in layout.packed_transposes(plan.nodes):
        i = plan.local[node]
        if plan.kind[i] in (NORMAL, ASYNC):
            plan.fn[i] = layout.packed(plan.fn[i])


_PURE_IDENTITIES = frozenset({op_names.IDENTITY, op_names.LOOP_COND, op_names.STOP_GRADIENT})


def _forwarded_identities(nodes: list[Node], fetches, fed) -> set:
    """Identity-like nodes whose consumers can read their input directly.

    Such a node only renames a value (deadness included), so skipping it saves a
    node execution per iteration (every loop has a LoopCond). Nodes with control
    inputs are kept: those gate their value on something else.
    """
    keep = {t.node for t in fetches} | set(fed) | {c for m in nodes for c in m.control_inputs}
    return {n for n in nodes if n.op in _PURE_IDENTITIES and not n.control_inputs and n not in keep}


def _bind_constants(plan: Plan) -> None:
    """Writes each top-level constant into the pending-input templates of the consumers that wait
    for other inputs too: it is then there from the start of every run instead of being scheduled
    and delivered each time (a small training step holds dozens of constants, as many queue items
    as its real work). A constant stays a source for its other consumers."""
    pending = (PENDING, TO_GUARDED)
    kept = []
    for i in plan.sources:
        if plan.nodes[i].op != op_names.CONST:
            kept.append(i)
            continue
        value, rest = plan.fn[i](), []
        for dst, slot, mode in plan.cons[i]:
            t = plan.tmpl[dst] if mode in pending else None  # a fetch's dst is its place among the fetches
            if t is not None and t[REMAINING] > 1 and t[slot] is None:
                t[slot] = value
                t[REMAINING] -= 1
            else:
                rest.append((dst, slot, mode))
        plan.cons[i][:] = rest
        if rest:
            kept.append(i)
    plan.sources[:] = kept


def _split_invariant_edges(plan: Plan) -> None:
    """Sorts each constant Enter's consumers into those whose pending-input templates
    can hold the constant (bound once per frame) and the rest (delivered to every
    iteration). Only a consumer with another, per-iteration input can be bound."""
    for i, (_, is_const, _) in plan.frame_info.items():
        if not is_const:
            continue
        binds, rest = [], []
        for dst, slot, mode in plan.cons[i]:
            if mode == PENDING and any(not _is_constant_enter(plan, t.node) for t in plan.nodes[dst].inputs) \
                    or mode == PENDING and plan.nodes[dst].control_inputs:
                binds.append((dst, slot))
            else:
                rest.append((dst, slot, mode))
        plan.bindable[i], plan.unbound[i] = binds, rest


def _is_constant_enter(plan: Plan, node: Node) -> bool:
    return node.op == op_names.ENTER and node.attrs["is_constant"]


def _add_edge(plan: Plan, src: int, port: int, dst: int, slot: int) -> None:
    kd = plan.kind[dst]
    if kd == MERGE:
        mode = TO_MERGE
    elif kd == LOOP_MERGE:
        mode = TO_LOOP_MERGE
    elif plan.nin[dst] == 1 and plan.ndata[dst] == 1:
        mode = DIRECT
    else:
        mode = PENDING
    offset = slot if kd in (MERGE, LOOP_MERGE) else slot_of(slot)  # a Merge's slot is the input's index
    if plan.kind[src] in SINGLE_OUTPUT_KINDS:
        plan.cons[src].append((dst, offset, mode))
    else:
        _port_list(plan, src, port).append((dst, offset, mode))


def _port_list(plan: Plan, src: int, port: int) -> list:
    """Multi-output nodes keep (port 0, port 1, control) consumer lists; ports >= 2 go to extra_ports."""
    if port < 0:
        return plan.cons[src][2]
    if port < 2:
        return plan.cons[src][port]
    extra = plan.extra_ports.setdefault(src, [])
    while len(extra) < port - 1:
        extra.append([])
    return extra[port - 2]


def _kind(n: Node) -> int:
    if n.op == op_names.MERGE:
        return LOOP_MERGE if any(t.node.op == op_names.NEXT_ITERATION for t in n.inputs) else MERGE
    k = _KIND_OF_OP.get(n.op)
    if k is not None:
        return k
    return NORMAL if len(n.outputs) <= 1 else MULTI


def _is_heavy(n: Node) -> bool:
    if n.op == "MatMul":
        a, b = n.inputs
        if _sh.is_fully_defined(a.shape) and _sh.is_fully_defined(b.shape):
            flops = _sh.num_elements(a.shape) * (b.shape[-1] if len(b.shape) >= 2 else 1)
            return flops >= ASYNC_MIN_MATMUL_FLOPS
        return True
    if n.op in HEAVY_OPS:
        return True
    if not n.outputs or n.op in _CONSTANT_TIME:
        return False
    size = _sh.num_elements(n.outputs[0].shape)
    return size is not None and size >= ASYNC_MIN_ELEMENTS


# Kernels that return a view, a stored value or a handle: constant time whatever the size, so
# a pool thread would only add a round trip.
_CONSTANT_TIME = frozenset({op_names.CONST, op_names.IDENTITY, op_names.STOP_GRADIENT, "ReadVariable", "Transpose", "Reshape",
                            "ExpandDims", "Squeeze", "BroadcastTo", "Split", "Unstack", "StackPush", "StackPop",
                            "TensorArrayRead", "TensorArrayWrite", "Shape", "Size", "Rank"})


def _identity(x):
    return x
