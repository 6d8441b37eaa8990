"""The graph builder: `Graph` (nodes, names, scopes, the current control-flow context, effect order,
checkpoints) and the default graph that op builders add to.

A node is created in the control-flow context that is current when it is built
(a cond branch or a while loop body). Inputs produced in an enclosing context are
routed in automatically: through a Switch for a cond branch, through a constant
Enter for a loop. That is what makes closures over outer tensors "just work" in
`cond` and `while_loop` bodies, as in TensorFlow's control-flow contexts.

The records themselves (Node, Tensor, and the ControlFlowContext protocol that
contexts implement) are in graph/node.py; op types in graph/op_registry.py.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
from dataclasses import dataclass
from typing import Any, Collection, Iterable, Iterator, Mapping, Sequence

from graph import dtypes as _dt
from graph import printing
from graph import shapes as _sh
from graph import validate as _validate
from graph.devices import UNPLACED, parse_device
from graph.errors import GraphError, OpTypeError, OpValueError, SourceLocation, user_location
from graph.index import GraphIndex
from graph.node import ControlFlowContext, Node, Tensor
from graph.op_names import EXIT, MERGE
from graph.op_registry import get_opdef

CPU = "/cpu:0"
_CURRENT = object()  # create_node default: the graph's current control-flow context


# --------------------------------------------------------------------------- graph

class Graph:
    """A dataflow graph. Build nodes with it as the default graph (`with g.as_default()`)."""

    def __init__(self):
        self.nodes: list[Node] = []
        self._by_name: dict[str, Node] = {}
        self._name_counts: dict[str, int] = {}
        self._scope: list[str] = []
        self._context: ControlFlowContext | None = None
        self._control_deps: list[_ControlBlock] = []
        self._device_stack: list[str] = []
        self._iteration_limits: list[int | None] = []
        self._last_effect: dict[ControlFlowContext | None, Node] = {}
        self._version = 0
        self._index: GraphIndex | None = None  # the index of `index()`, at the version it was built
        self.variables: dict[str, Any] = {}  # name -> graph.ops.variables.Variable
        # (dtype, shape, bytes) -> the Const of a small constant built outside any control_dependencies
        # block, so that repeated literals (1, 0.5, a shape) make one node (see graph.ops.conversion.constant)
        self.constant_cache: dict[tuple, Tensor] = {}
        self.seed: int | None = None
        self._seed_counter = itertools.count(1)
        self.collections: dict[str, list] = {}
        # node -> the node it belongs with (built in a `colocate_with` block and placed by no scope)
        self.colocation: dict[Node, Node] = {}

    # -- context managers ---------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        """Makes this the graph that op builders add to in this thread, inside the block."""
        _default.stack.append(self)
        try:
            yield self
        finally:
            _default.stack.pop()

    @contextlib.contextmanager
    def name_scope(self, name: str):
        """Prefixes the names of nodes built inside with `name/` (made unique)."""
        saved = self._scope
        if name.endswith("/"):  # an absolute scope, reused as is
            self._scope = [name.rstrip("/")] if name.rstrip("/") else []
        else:
            self._scope = self.unique_name(name, mark_used=True).split("/")
        try:
            yield "/".join(self._scope) + "/"
        finally:
            self._scope = saved

    @contextlib.contextmanager
    def control_dependencies(self, nodes: Iterable):
        """Nodes built inside run after `nodes` (tensors or nodes); None clears."""
        if nodes is None:
            saved, self._control_deps = self._control_deps, []
            try:
                yield
            finally:
                self._control_deps = saved
            return
        deps = tuple(n.node if isinstance(n, Tensor) else n for n in nodes)
        self._control_deps.append(_ControlBlock(deps, set()))
        try:
            yield
        finally:
            self._control_deps.pop()

    @contextlib.contextmanager
    def device(self, name: str):
        """Nodes built inside are placed on device `name` ("/cpu:0", "/task:1/cpu:0", ...: graph/devices.py);
        "" leaves them unplaced (`dist.place` decides). A bad name is refused here, at the user's line."""
        if name:
            parse_device(name)
        self._device_stack.append(name)
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, node: Node):
        """Nodes built inside, unless a `device` scope inside the block or around it places them, are
        recorded as belonging with `node` (`colocation`): `dist.place` puts them on its device.
        Gradients use it so that each forward node's gradient runs where the node does."""
        self._device_stack.append(_Colocated(node))
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def iteration_limit(self, limit: int | None):
        """While loops built inside get `iteration_limit=limit` (see `graph.while_loop`) unless they set
        their own: a run in which such a loop's condition still holds after `limit` iterations fails."""
        self._iteration_limits.append(limit)
        try:
            yield
        finally:
            self._iteration_limits.pop()

    @property
    def default_iteration_limit(self) -> int | None:
        """The `iteration_limit` of the innermost `iteration_limit` block, or None."""
        return self._iteration_limits[-1] if self._iteration_limits else None

    @property
    def has_control_dependencies(self) -> bool:
        """Whether nodes built now get control inputs from an open `control_dependencies` block."""
        return bool(self._control_deps)

    @contextlib.contextmanager
    def in_context(self, ctx: ControlFlowContext | None) -> Iterator[None]:
        """Nodes built inside belong to control-flow context `ctx` (None: the top level)."""
        saved, self._context = self._context, ctx
        try:
            yield
        finally:
            self._context = saved

    @property
    def context(self) -> ControlFlowContext | None:
        """The control-flow context that nodes are built in now (None: the top level)."""
        return self._context

    # -- version --------------------------------------------------------------------------
    @property
    def version(self) -> int:
        """A number that changes whenever the graph does (a node added, rewired or rolled back)."""
        return self._version

    def mark_changed(self) -> None:
        """Records a change made to an existing node (a rewired input, an added output or control
        input), so that whatever was derived from the graph at an older `version` (a plan, feed
        checks) is derived again."""
        self._version += 1

    def index(self) -> GraphIndex:
        """The consumers of every tensor and node (graph/index.py), built on first use after a change."""
        if self._index is None or self._index.version != self._version:
            self._index = GraphIndex(self.nodes, version=self._version)
        return self._index

    # -- names --------------------------------------------------------------------------
    def unique_name(self, base: str, mark_used: bool = True) -> str:
        full = "/".join(self._scope + [base]) if self._scope else base
        n = self._name_counts.get(full, 0)
        name = full if n == 0 else f"{full}_{n}"
        while name in self._by_name or (n and name in self._name_counts):
            n += 1
            name = f"{full}_{n}"
        if mark_used:
            self._name_counts[full] = n + 1
        return name

    def get_node(self, name: str) -> Node:
        return self._by_name[name]

    def has_node(self, node: Node) -> bool:
        """Whether `node` is in this graph (a rollback removes the nodes built after its checkpoint)."""
        return self._by_name.get(node.name) is node

    def get_tensor(self, name: str) -> Tensor:
        node, _, port = name.partition(":")
        return self._by_name[node].outputs[int(port or 0)]

    def next_seed(self) -> int:
        """A per-op seed, deterministic given the graph seed and build order."""
        base = 87654321 if self.seed is None else self.seed
        return (base * 1000003 + next(self._seed_counter)) % (2 ** 63)

    # -- node creation ------------------------------------------------------------------
    def create_node(self, op: str, inputs: Sequence[Tensor] = (), attrs: dict | None = None,
                    name: str | None = None, control_inputs: Sequence = (),
                    source: SourceLocation | None = None, context=_CURRENT) -> Node:
        """Adds a node. Inputs from enclosing control-flow contexts are routed in.

        Passing `context` explicitly builds a control-flow plumbing node (Enter,
        Exit) whose inputs live in a different frame from its outputs: no routing,
        no context hooks.
        """
        opdef = get_opdef(op)
        attrs = dict(attrs or {})
        source = source if source is not None else user_location()
        inputs = list(inputs)
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError(f"input to {op} must be a graph Tensor, got {type(t).__name__}")
            if t.node.graph is not self:
                raise GraphError(f"{op}: input {t.name} belongs to a different graph", source)
        explicit_controls = [c.node if isinstance(c, Tensor) else c for c in control_inputs]
        block_controls = self._block_controls(op, inputs)
        raw = context is not _CURRENT
        ctx = context if raw else self._context
        if raw and block_controls and inputs and inputs[0].node.context is not None:
            # plumbing (a loop variable's Enter) waits in the frame its input comes from
            block_controls = [route_control(inputs[0].node.context, c, source) for c in block_controls]
        controls = explicit_controls + block_controls
        if opdef.hoist and not controls and not raw:
            ctx = None
        if not raw:
            inputs = [route(ctx, t, source) for t in inputs]
            if ctx is not None:
                controls = [route_control(ctx, c, source) for c in controls]
            elif any(c.context is not None for c in controls):
                c = next(c for c in controls if c.context is not None)
                raise GraphError(f"control dependency on {c.name}, built inside {c.context.describe()}, "
                                 "cannot be used outside it", source)
        name = self.unique_name(name or op)
        device, with_node = self._placement()
        node = Node(self, -1, name, op, inputs, _dedup(controls), attrs, device, source, ctx)
        if with_node is not None:
            self.colocation[node] = with_node
        try:
            specs = opdef.infer(inputs, attrs)
        except GraphError:
            raise
        except (ValueError, TypeError, IndexError) as e:
            desc = ", ".join(f"{_dt.as_dtype(t.dtype) if t.dtype is not _dt.variant else 'variant'}"
                             f"{_sh.format_shape(t.shape)}" for t in inputs)
            err_cls = OpTypeError if isinstance(e, TypeError) else OpValueError
            raise err_cls(f"{op}({desc}): {e}", source) from None
        node.outputs = tuple(Tensor(node, i, dt, _sh.as_shape(sh)) for i, (dt, sh) in enumerate(specs))
        if ctx is not None and not raw:
            ctx.on_node_created(node)
        if opdef.ordered:
            self._order_effect(node, ctx)
        self._record_in_blocks(node)
        # the id is taken last: hooks above may have added nodes (a lazily built pivot)
        node.id = len(self.nodes)
        self.nodes.append(node)
        self._by_name[name] = node
        self._version += 1
        return node

    def _block_controls(self, op: str, inputs: list[Tensor]) -> list[Node]:
        """The control inputs that the open `control_dependencies` blocks give a node built now.

        As in TensorFlow, a node with an input built in a block after that block's nodes (by a
        control input, or through an input of its own) runs after them already and gets no control
        input from it. A Merge fires on its first live input, so it cannot wait for control inputs:
        the values that reach it were computed in the block and carry the order. So do an Exit's:
        its loop's Enters wait for the block, and a control input from the frame around the loop
        could never meet its input, which arrives tagged with the loop's frame."""
        if op in (MERGE, EXIT):
            return []
        return [n for block in self._control_deps if not any(t.node in block.ordered for t in inputs)
                for n in block.deps]

    def _record_in_blocks(self, node: Node) -> None:
        """Marks `node` as ordered after the nodes of each open block that it waits for: every node but a
        Merge or an Exit waits for them (by its control inputs or an input); those wait through their
        inputs (all of a Merge's, which fires on any)."""
        for block in self._control_deps:
            ins = [t.node in block.ordered for t in node.inputs]
            if node.op == MERGE:
                after = all(ins)
            else:
                after = node.op != EXIT or any(ins)
            if after:
                block.ordered.add(node)

    def _placement(self) -> tuple[str, Node | None]:
        """(device, node to colocate with) of a node built now: the innermost `device` scope's name;
        else, inside `colocate_with(n)`, UNPLACED and n."""
        with_node = None
        for entry in reversed(self._device_stack):
            if isinstance(entry, _Colocated):
                with_node = with_node or entry.node
            else:
                return entry, None
        return UNPLACED, with_node

    def update_node(self, node: Node, *, inputs: Sequence[Tensor] | None = None,
                    control_inputs: Sequence[Node] | None = None, attrs: Mapping[str, Any] | None = None,
                    new_outputs: Sequence[tuple] = (), device: str | None = None) -> tuple[Tensor, ...]:
        """Changes `node`, already in the graph, for the rewrites that must (see `Node`): `inputs` and
        `control_inputs` replace its edges as they are (no routing into contexts), `attrs` updates its
        attributes, `new_outputs` appends outputs of these (dtype, shape), `device` places it (as a
        `device` scope would have; "" unplaces it). The version changes, so what was derived from the
        graph (plans, the index, feed checks) is derived again: a graph placed after it ran (a
        transpile.function's trace) runs partitioned from its next run on. Returns the outputs added."""
        if node.graph is not self:
            raise GraphError(f"update_node: {node.name} belongs to another graph")
        if device:
            parse_device(device)  # a bad name is refused here, as `Graph.device` refuses it
        if device is not None:
            node.device = device
        if inputs is not None:
            node.inputs[:] = inputs  # in place: the node's record stays the one object
        if control_inputs is not None:
            node.control_inputs[:] = _dedup(list(control_inputs))
        if attrs:
            node.attrs.update(attrs)
        added = tuple(Tensor(node, len(node.outputs) + k, dt, _sh.as_shape(sh))
                      for k, (dt, sh) in enumerate(new_outputs))
        node.outputs = node.outputs + added
        self._version += 1
        return added

    def insert_node(self, node: Node) -> Node:
        """Adds `node`, built by the caller with its inputs and outputs set, as it is: no shape
        inference, routing into contexts or effect ordering. For graph rewrites that copy nodes
        (dist.partition); its name must not be taken."""
        if node.graph is not self:
            raise GraphError(f"insert_node: {node.name} belongs to another graph")
        if node.name in self._by_name:
            raise GraphError(f"insert_node: the name {node.name!r} is taken")
        node.id = len(self.nodes)
        self.nodes.append(node)
        self._by_name[node.name] = node
        self._name_counts.setdefault(node.name, 1)
        self._version += 1
        return node

    # -- undo: a loop body traced again with relaxed shapes, a trace made only to learn a structure --
    def checkpoint(self) -> Checkpoint:
        """The state to come back to with `rollback`: nodes built after it are removed then."""
        return Checkpoint(len(self.nodes), dict(self._name_counts), dict(self._last_effect), set(self.variables))

    def rollback(self, cp: Checkpoint) -> None:
        """Removes every node built since `cp` was taken, and what the graph and the current
        control-flow contexts recorded about them. Tensors of those nodes must not be used again."""
        for node in self.nodes[cp.num_nodes:]:
            del self._by_name[node.name]
        del self.nodes[cp.num_nodes:]
        self._name_counts = cp.name_counts
        self._last_effect = cp.last_effect
        for k in [k for k in self.variables if k not in cp.variables]:
            del self.variables[k]
        for k in [k for k, t in self.constant_cache.items() if t.node.id >= cp.num_nodes]:
            del self.constant_cache[k]
        for k in [k for k in self.colocation if k.id >= cp.num_nodes]:
            del self.colocation[k]
        ctx = self._context
        while ctx is not None:
            ctx.rollback(cp.num_nodes)
            ctx = ctx.outer
        self._version += 1

    @contextlib.contextmanager
    def scratch(self) -> Iterator[Checkpoint]:
        """Builds nodes only to look at them: everything built inside is rolled back on exit."""
        cp = self.checkpoint()
        try:
            yield cp
        finally:
            self.rollback(cp)

    def _order_effect(self, node: Node, ctx: ControlFlowContext | None) -> None:
        """Chains an effectful node after the previous one in its context (program order)."""
        prev = self._last_effect.get(ctx)
        if prev is not None:
            node.add_control_input(prev)
        elif ctx is not None:
            for c in ctx.effect_entry_controls():
                node.add_control_input(c)
        self._last_effect[ctx] = node
        if ctx is not None:
            ctx.has_effects = True

    def last_effect(self, ctx: ControlFlowContext | None = None) -> Node | None:
        """The last ordered effect built in `ctx` (None: the top level), which the next one follows."""
        return self._last_effect.get(ctx)

    def set_last_effect(self, ctx: ControlFlowContext | None, node: Node | None) -> None:
        """Makes `node` the effect that the next one in `ctx` follows (a cond's or loop's effects, done)."""
        if node is None:
            self._last_effect.pop(ctx, None)
        else:
            self._last_effect[ctx] = node

    # -- printing and checks ----------------------------------------------------------------
    def __str__(self) -> str:
        """One line per node: `%name = Op[attrs](%input, ^control) : types @frame  # file.py:line`."""
        return printing.format_graph(self)

    def __repr__(self) -> str:
        return printing.format_summary(self)

    def to_dot(self, show_types: bool = True, expand: bool | Collection[str] = False) -> str:
        """Graphviz source. Each loop and cond is one box labelled with the user's line that built it;
        `expand=True` (or the file:line or frame names of some) draws their bodies as nested clusters."""
        return printing.to_dot(self, show_types=show_types, expand=expand)

    def validate(self) -> None:
        """Raises GraphError listing what is structurally wrong (frames, back edges, dangling inputs)."""
        _validate.validate(self)

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self):
        return iter(self.nodes)


@dataclass(frozen=True, slots=True)
class _ControlBlock:
    """An open `control_dependencies` block: the nodes it names, and the nodes built in it that run
    after them (they got them as control inputs, or an input of theirs did)."""

    deps: tuple[Node, ...]
    ordered: set


@dataclass(frozen=True, slots=True)
class _Colocated:
    """A `colocate_with` block on the device stack."""

    node: Node


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What `Graph.rollback` restores: the node count and the bookkeeping that grows with nodes."""

    num_nodes: int
    name_counts: dict
    last_effect: dict
    variables: set


def _dedup(nodes: list[Node]) -> list[Node]:
    seen, out = set(), []
    for n in nodes:
        if id(n) not in seen:
            seen.add(id(n))
            out.append(n)
    return out


# --------------------------------------------------------------------------- routing across contexts

def _ancestors(ctx: ControlFlowContext | None) -> list[ControlFlowContext]:
    out = []
    while ctx is not None:
        out.append(ctx)
        ctx = ctx.outer
    return out


def route(ctx: ControlFlowContext | None, t: Tensor, source: SourceLocation | None = None) -> Tensor:
    """Makes tensor `t` usable inside context `ctx` (adding Switch/Enter as needed)."""
    src = t.node.context
    if src is ctx:
        return t
    if ctx is None:
        raise escape_error(t, ctx, source)
    chain = _ancestors(ctx)
    if src is not None and src not in chain:
        raise escape_error(t, ctx, source)
    outer = route(ctx.outer, t, source) if ctx.outer is not src else t
    # The Enter or Switch that brings `t` in is plumbing of the context boundary, not the node being
    # built: an open control_dependencies block names nodes of the reading node's frame, which the
    # Enter (in t's frame) cannot wait for. The reading node gets those control inputs itself.
    with t.graph.control_dependencies(None):
        return ctx.capture(outer)


def route_control(ctx: ControlFlowContext, node: Node, source: SourceLocation | None = None) -> Node:
    """A control input from an enclosing context, expressed in `ctx`'s frame."""
    src = node.context
    if src is not None and src is not ctx and src not in _ancestors(ctx):
        raise GraphError(f"control dependency on {node.name}, which was built inside another "
                         "cond branch or loop body, cannot be used here", source)
    if (src.frame if src is not None else None) is ctx.frame:
        return node
    with node.graph.control_dependencies(None):  # the token carries `node` alone (see route)
        return ctx.capture_control(node)


def escape_error(t: Tensor, ctx: ControlFlowContext | None, source: SourceLocation | None) -> GraphError:
    where = t.node.context.describe() if t.node.context is not None else "the top level"
    return GraphError(
        f"{t.describe()} was created inside {where} and cannot be used outside it. "
        "Return it from the branch or loop body (make it an output / loop variable) to use it here", source)


# --------------------------------------------------------------------------- default graph

class _DefaultStack(threading.local):
    def __init__(self):
        self.stack: list[Graph] = []
        self.global_graph = Graph()


_default = _DefaultStack()


def get_default_graph() -> Graph:
    """The innermost graph of a `with g.as_default()` block in this thread, else the global graph."""
    return _default.stack[-1] if _default.stack else _default.global_graph


def reset_default_graph() -> Graph:
    """Replaces this thread's global graph with an empty one."""
    if _default.stack:
        raise RuntimeError("reset_default_graph() inside a `with graph.as_default()` block")
    _default.global_graph = Graph()
    return _default.global_graph


def name_scope(name: str):
    return get_default_graph().name_scope(name)


def control_dependencies(nodes):
    return get_default_graph().control_dependencies(nodes)


def device(name: str):
    return get_default_graph().device(name)


def make_op(op: str, inputs: Sequence = (), attrs: dict | None = None, name: str | None = None,
            control_inputs: Sequence = ()) -> Node:
    """Builds a node in the default graph (inputs already converted to tensors)."""
    return get_default_graph().create_node(op, inputs, attrs, name, control_inputs)
