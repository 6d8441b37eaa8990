"""The graph IR: `Graph`, `Node`, symbolic `Tensor`, op definitions, default graph.

A node is created in the control-flow context that is current when it is built
(a cond branch or a while loop body). Inputs produced in an enclosing context are
routed in automatically: through a Switch for a cond branch, through a constant
Enter for a loop. That is what makes closures over outer tensors "just work" in
`cond` and `while_loop` bodies, as in TensorFlow's control-flow contexts.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.errors import GraphError, SourceLocation, SymbolicBoolError, user_location

CPU = "/cpu:0"
_CURRENT = object()  # create_node default: the graph's current control-flow context


# --------------------------------------------------------------------------- op definitions

@dataclass(frozen=True, slots=True)
class OpDef:
    """What the graph knows about an op type: how to infer its outputs.

    `infer(inputs, attrs)` returns one `(dtype, shape)` per output.
    `stateful` ops are never deduplicated or folded; `ordered` ones are also
    chained in program order within their context (prints, asserts, variable
    reads and writes, random draws), so their effects happen in the order the
    user wrote them.
    """

    name: str
    infer: Callable[[list, dict], list]
    stateful: bool = False
    ordered: bool = False
    hoist: bool = False  # built in the root context (constants, placeholders)
    differentiable: bool = True


_OPS: dict[str, OpDef] = {}


def register_op(name: str, infer: Callable, **flags) -> OpDef:
    if name in _OPS:
        raise ValueError(f"op {name!r} is already registered")
    op = OpDef(name, infer, **flags)
    _OPS[name] = op
    return op


def get_opdef(name: str) -> OpDef:
    try:
        return _OPS[name]
    except KeyError:
        raise KeyError(f"unknown op type {name!r}") from None


def registered_ops() -> list[str]:
    return sorted(_OPS)


# --------------------------------------------------------------------------- tensors and nodes

class Tensor:
    """A symbolic value: output `index` of `node`, with a dtype and a partial shape.

    Arithmetic, comparisons, indexing and numpy functions on tensors build graph
    nodes (installed by `graph.ops.operators`). Python cannot branch on one:
    `bool(t)` raises with a pointer to the transpiler, `cond` and `while_loop`.
    """

    __slots__ = ("node", "index", "dtype", "shape", "__weakref__")
    __array_priority__ = 1000  # numpy defers binary operators to us

    def __init__(self, node: "Node", index: int, dtype, shape):
        self.node = node
        self.index = index
        self.dtype = dtype
        self.shape = shape

    @property
    def graph(self) -> "Graph":
        return self.node.graph

    @property
    def op(self) -> str:
        return self.node.op

    @property
    def name(self) -> str:
        return f"{self.node.name}:{self.index}"

    @property
    def ndim(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    def __repr__(self) -> str:
        return f"<Tensor {self.name} {self.dtype}{_sh.format_shape(self.shape)}>"

    __hash__ = object.__hash__

    def __bool__(self):
        raise SymbolicBoolError(
            f"the truth value of graph tensor {self.name} is only known when the graph runs; "
            "Python `if`/`while`/`and`/`or`/`not` cannot decide on it. Decorate the function with "
            "@transpile.function to convert such control flow, or build it with graph.cond / graph.while_loop")

    def __iter__(self):
        raise SymbolicBoolError(
            f"cannot iterate over graph tensor {self.name} in Python (unpacking, list(), a comprehension, ...): "
            "its elements only exist when the graph runs. Write a `for` statement in a @transpile.function "
            "(a `for` over a tensor becomes a graph loop; comprehensions and unpacking are not converted), index "
            "it (t[0], t[1]) or use graph.unstack, or build the loop with graph.while_loop / graph.map_fn")

    def __contains__(self, item):
        raise SymbolicBoolError(
            f"`x in t` on graph tensor {self.name} would need its values while the graph is built; "
            "use graph.reduce_any(graph.equal(t, x))")

    def __len__(self):
        if self.shape is not None and self.shape and self.shape[0] is not None:
            return self.shape[0]
        raise SymbolicBoolError(
            f"len() of graph tensor {self.name} with shape {_sh.format_shape(self.shape)} is not known when "
            "the graph is built. Use graph.shape(t)[0], or decorate the function with @transpile.function "
            "so that len() is converted")

    def __index__(self):
        raise SymbolicBoolError(
            f"graph tensor {self.name} cannot be used as a Python index or size: its value is only known at run "
            "time. Use graph ops (e.g. graph.gather, graph.reshape with a tensor shape) instead")

    def __float__(self):
        raise SymbolicBoolError(f"float() of graph tensor {self.name}: its value is only known at run time. "
                                "Use graph.cast(t, np.float64)")

    def __int__(self):
        raise SymbolicBoolError(f"int() of graph tensor {self.name}: its value is only known at run time. "
                                "Use graph.cast(t, np.int64)")


class Node:
    """One operation in a graph.

    Mutable only while control flow is being wired: a loop's Merge gets its
    NextIteration back edge after the body is built, and effect ordering may add
    control inputs. Everything else is fixed at creation.
    """

    __slots__ = ("graph", "id", "name", "op", "inputs", "control_inputs", "attrs", "device",
                 "source", "context", "outputs", "__weakref__")

    def __init__(self, graph, id_, name, op, inputs, control_inputs, attrs, device, source, context):
        self.graph = graph
        self.id = id_
        self.name = name
        self.op = op
        self.inputs: list[Tensor] = inputs
        self.control_inputs: list[Node] = control_inputs
        self.attrs: dict[str, Any] = attrs
        self.device: str = device
        self.source: SourceLocation | None = source
        self.context = context  # ControlFlowContext of the node's outputs, or None (root)
        self.outputs: tuple[Tensor, ...] = ()

    @property
    def output(self) -> Tensor:
        if len(self.outputs) != 1:
            raise ValueError(f"node {self.name} ({self.op}) has {len(self.outputs)} outputs")
        return self.outputs[0]

    @property
    def frame(self):
        """The WhileContext whose frame this node's outputs live in (None: root)."""
        return self.context.frame if self.context is not None else None

    def _update_input(self, index: int, tensor: Tensor) -> None:
        self.inputs[index] = tensor
        self.graph._version += 1

    def _add_control_input(self, node: "Node") -> None:
        if node not in self.control_inputs:
            self.control_inputs.append(node)
            self.graph._version += 1

    def __repr__(self) -> str:
        return f"<Node {self.name} {self.op}>"


# --------------------------------------------------------------------------- graph

class Graph:
    """A dataflow graph. Build nodes with it as the default graph (`with g.as_default()`)."""

    def __init__(self):
        self.nodes: list[Node] = []
        self._by_name: dict[str, Node] = {}
        self._name_counts: dict[str, int] = {}
        self._scope: list[str] = []
        self._context = None  # current ControlFlowContext
        self._control_deps: list[list[Node]] = []
        self._device_stack: list[str] = []
        self._last_effect: dict[Any, Node] = {}
        self._version = 0
        self.variables: dict[str, Any] = {}  # name -> graph.state.Variable
        self.seed: int | None = None
        self._seed_counter = itertools.count(1)
        self.collections: dict[str, list] = {}

    # -- context managers ---------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
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
        deps = [n.node if isinstance(n, Tensor) else n for n in nodes]
        self._control_deps.append(deps)
        try:
            yield
        finally:
            self._control_deps.pop()

    @contextlib.contextmanager
    def device(self, name: str):
        self._device_stack.append(name)
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def _in_context(self, ctx):
        saved, self._context = self._context, ctx
        try:
            yield
        finally:
            self._context = saved

    @property
    def context(self):
        return self._context

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
        block_controls = [n for deps in self._control_deps for n in deps]
        raw = context is not _CURRENT
        ctx = context if raw else self._context
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
        device = self._device_stack[-1] if self._device_stack else CPU
        node = Node(self, -1, name, op, inputs, _dedup(controls), attrs, device, source, ctx)
        try:
            specs = opdef.infer(inputs, attrs)
        except GraphError:
            raise
        except (ValueError, TypeError, IndexError) as e:
            desc = ", ".join(f"{_dt.as_dtype(t.dtype) if t.dtype is not _dt.variant else 'variant'}"
                             f"{_sh.format_shape(t.shape)}" for t in inputs)
            kind = TypeError if isinstance(e, TypeError) else ValueError
            err_cls = type(f"{kind.__name__}GraphError", (GraphError, kind), {})
            raise err_cls(f"{op}({desc}): {e}", source) from None
        node.outputs = tuple(Tensor(node, i, dt, _sh.as_shape(sh)) for i, (dt, sh) in enumerate(specs))
        if ctx is not None and not raw:
            ctx.on_node_created(node)
        if opdef.ordered:
            self._order_effect(node, ctx)
        # the id is taken last: hooks above may have added nodes (a lazily built pivot)
        node.id = len(self.nodes)
        self.nodes.append(node)
        self._by_name[name] = node
        self._version += 1
        return node

    # -- undo, for loops whose body is traced again with relaxed shapes ----------------
    def _checkpoint(self) -> "_Checkpoint":
        return _Checkpoint(len(self.nodes), dict(self._name_counts), dict(self._last_effect),
                           set(self.variables), self._version)

    def _rollback(self, cp: "_Checkpoint") -> None:
        for node in self.nodes[cp.num_nodes:]:
            del self._by_name[node.name]
        del self.nodes[cp.num_nodes:]
        self._name_counts = cp.name_counts
        self._last_effect = cp.last_effect
        for k in [k for k in self.variables if k not in cp.variables]:
            del self.variables[k]
        cache = self.__dict__.get("_const_cache", {})
        for k in [k for k, t in cache.items() if t.node.id >= cp.num_nodes]:
            del cache[k]
        ctx = self._context
        while ctx is not None:
            ctx.rollback(cp.num_nodes)
            ctx = ctx.outer
        self._version += 1

    def _order_effect(self, node: Node, ctx) -> None:
        """Chains an effectful node after the previous one in its context (program order)."""
        prev = self._last_effect.get(ctx)
        if prev is not None:
            node._add_control_input(prev)
        elif ctx is not None:
            for c in ctx.effect_entry_controls():
                node._add_control_input(c)
        self._last_effect[ctx] = node
        if ctx is not None:
            ctx.has_effects = True

    def last_effect(self, ctx=None) -> Node | None:
        return self._last_effect.get(ctx)

    def set_last_effect(self, ctx, node: Node | None) -> None:
        if node is None:
            self._last_effect.pop(ctx, None)
        else:
            self._last_effect[ctx] = node

    # -- printing -----------------------------------------------------------------------
    def __str__(self) -> str:
        from graph.printing import format_graph
        return format_graph(self)

    def to_dot(self, **kwargs) -> str:
        from graph.printing import to_dot
        return to_dot(self, **kwargs)

    def validate(self) -> None:
        from graph.validate import validate
        validate(self)

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self):
        return iter(self.nodes)


@dataclass(frozen=True, slots=True)
class _Checkpoint:
    num_nodes: int
    name_counts: dict
    last_effect: dict
    variables: set
    version: int


def _dedup(nodes: list[Node]) -> list[Node]:
    seen, out = set(), []
    for n in nodes:
        if id(n) not in seen:
            seen.add(id(n))
            out.append(n)
    return out


# --------------------------------------------------------------------------- routing across contexts

def _ancestors(ctx) -> list:
    out = []
    while ctx is not None:
        out.append(ctx)
        ctx = ctx.outer
    return out


def route(ctx, t: Tensor, source=None) -> Tensor:
    """Makes tensor `t` usable inside context `ctx` (adding Switch/Enter as needed)."""
    src = t.node.context
    if src is ctx:
        return t
    if ctx is None:
        raise escape_error(t, ctx, source)
    chain = _ancestors(ctx)
    if src is not None and src not in chain:
        raise escape_error(t, ctx, source)
    return ctx.capture(route(ctx.outer, t, source) if ctx.outer is not src else t)


def route_control(ctx, node: Node, source=None) -> Node:
    """A control input from an enclosing context, expressed in `ctx`'s frame."""
    src = node.context
    if src is not None and src is not ctx and src not in _ancestors(ctx):
        raise GraphError(f"control dependency on {node.name}, which was built inside another "
                         "cond branch or loop body, cannot be used here", source)
    if (src.frame if src is not None else None) is ctx.frame:
        return node
    return ctx.capture_control(node)


def escape_error(t: Tensor, ctx, source) -> GraphError:
    where = t.node.context.describe() if t.node.context is not None else "the top level"
    made = f" (built at {t.node.source})" if t.node.source else ""
    return GraphError(
        f"tensor {t.name}{made} was created inside {where} and cannot be used outside it. "
        "Return it from the branch or loop body (make it an output / loop variable) to use it here", source)


# --------------------------------------------------------------------------- default graph

class _DefaultStack(threading.local):
    def __init__(self):
        self.stack: list[Graph] = []
        self.global_graph = Graph()


_default = _DefaultStack()


def get_default_graph() -> Graph:
    return _default.stack[-1] if _default.stack else _default.global_graph


def reset_default_graph() -> Graph:
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


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def numpy_value(x):
    """A concrete numpy value for a Python/numpy constant (not a tensor)."""
    return np.asarray(x)
