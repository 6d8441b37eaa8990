"""What reverse mode needs to know about a forward graph: consumers, control-flow units, reachability.

Reverse mode works region by region: a region is one control-flow context (the
top level, a cond branch, a loop body). Inside a region, a nested conditional
or loop is one *unit* (a CondState or WhileContext), like a single op whose
gradient is built by control_flow_grad; everything else is a node unit.
"""
from __future__ import annotations

from dataclasses import dataclass

from grad.registry import is_differentiable
from graph.control_flow.contexts import CondContext, CondState, WhileContext
from graph.control_flow.stack import pushed_values, stack_of
from graph.core import Node, Tensor
from graph.errors import GraphError
from graph.op_names import ENTER, EXIT, IDENTITY, LOOP_COND, MERGE, NEXT_ITERATION, SWITCH

LOOP_PLUMBING = frozenset({ENTER, MERGE, SWITCH, NEXT_ITERATION, LOOP_COND})


def differentiable_dtype(t: Tensor) -> bool:
    """Floating-point values carry gradients; so do variant handles (TensorArray flows)."""
    kind = t.dtype.kind
    return kind in "fV"


def stacked_values(n: Node) -> list[Tensor]:
    """The values a StackPush saves in its slot, or the one a StackSplit cuts into slots (its
    rows, saved under the keys of the concat it undoes)."""
    return pushed_values(n) if n.op == "StackPush" else [n.inputs[1]]


def _slot_position(n: Node, i: int) -> int | None:
    """For input i of a StackPush or StackSplit that is a saved value, its position in the slot."""
    if n.op == "StackPush":
        return i - 1 if 1 <= i <= n.attrs["num_values"] else None
    return 0 if n.op == "StackSplit" and i == 1 else None


def ancestors(ctx):
    while ctx is not None:
        yield ctx
        ctx = ctx.outer


def is_within(ctx, outer) -> bool:
    """Whether context `ctx` is `outer` or nested inside it (None is the top level)."""
    if outer is None:
        return True
    return any(c is outer for c in ancestors(ctx))


def cond_outer(state: CondState):
    return state.branches[0].outer


def variable_of(read: Node):
    """The Variable object a ReadVariable node reads."""
    for key in ("variable", "var"):
        v = read.attrs.get(key)
        if v is not None:
            return v
    raise GraphError(f"gradients: cannot find the variable read by {read.name}")


@dataclass(frozen=True, slots=True)
class Target:
    """One x of a `gradients` call and the tensors its gradient is the sum over: a tensor itself, or
    all the reads of a Variable."""
    x: object
    sources: tuple[Tensor, ...]

    @property
    def is_variable(self) -> bool:
        return getattr(self.x, "is_variable", False)

    def describe(self) -> str:
        """The x as error messages name it: `Variable 'W'`, `input 'w'`, `loop variable 'w' of the loop at f.py:3`."""
        return f"Variable {self.x.name!r}" if self.is_variable else self.x.describe()


def loop_variable_of(t: Tensor) -> tuple[WhileContext, int] | None:
    """(loop, k) when `t` is loop variable k of `loop`, as its body (Switch) or condition (Merge) sees it."""
    t = origin(t)
    loop = t.node.context
    if not isinstance(loop, WhileContext):
        return None
    for k, (m, sw) in enumerate(zip(loop.merges, loop.switches, strict=False)):
        if t is m.outputs[0] or t is sw.outputs[1]:
            return loop, k
    return None


def origin(t: Tensor) -> Tensor:
    """The value `t` stands for: through Identity, a loop constant's Enter and a cond's Switch."""
    while True:
        n = t.node
        if n.op == IDENTITY and n.inputs:
            t = n.inputs[0]
        elif n.op == ENTER and n.attrs.get("is_constant"):
            t = n.inputs[0]
        elif n.op == SWITCH and n.inputs[1].node.op != LOOP_COND:  # a cond's: its outputs are its input
            t = n.inputs[0]
        else:
            return t


class ForwardIndex:
    """What reverse mode looks up in the forward graph, built once per `gradients` call."""

    def __init__(self, graph):
        self.graph = graph
        # the graph's index as the forward graph is now: the gradient nodes built next are not its consumers
        self.forward = graph.index()
        self.by_context: dict[object, list[Node]] = {}
        self.cond_unit: dict[Node, CondState] = {}   # cond Switch/Merge nodes -> their cond
        self.exit_loop: dict[Node, WhileContext] = {}
        self.child_units: dict[object, list] = {}   # context -> CondStates / WhileContexts directly inside
        self.stack_pushes: dict[Node, list[Node]] = {}
        self.stack_pops: dict[Node, list[Node]] = {}
        self.variable_reads: list[Node] = []
        self.loop_exits: dict[WhileContext, list[Node]] = {}
        self._sub_contexts: dict[int, list] = {}
        self._waits: dict[int, list[Node]] = {}
        states: dict[int, CondState] = {}
        loops: dict[int, WhileContext] = {}
        contexts: dict[int, object] = {}
        for n in graph.nodes:
            self.by_context.setdefault(n.context, []).append(n)
            for ctx in ancestors(n.context):
                contexts.setdefault(id(ctx), ctx)
                if isinstance(ctx, CondContext):
                    states.setdefault(id(ctx.state), ctx.state)
                else:
                    loops.setdefault(id(ctx), ctx)
            if n.op == EXIT:
                loop = self.exit_loop[n] = n.inputs[0].node.frame
                self.loop_exits.setdefault(loop, []).append(n)
            elif n.op in ("StackPush", "StackSplit", "StackPop", "StackConcat"):
                stack = stack_of(n.inputs[0])
                if stack is not None:  # a split puts values in like a push, a concat takes them out like a pop
                    table = self.stack_pushes if n.op in ("StackPush", "StackSplit") else self.stack_pops
                    table.setdefault(stack, []).append(n)
            elif n.op == "ReadVariable":
                self.variable_reads.append(n)
        for ctx in contexts.values():
            self._sub_contexts.setdefault(id(ctx.outer), []).append(ctx)
        for s in states.values():
            for sw in s.switches.values():
                self.cond_unit[sw] = s
            for m in s.merges:
                self.cond_unit[m] = s
            self.child_units.setdefault(cond_outer(s), []).append(s)
        for loop in loops.values():
            self.child_units.setdefault(loop.outer, []).append(loop)
        # Merges of values from a cond's branches belong to that cond: its outputs, the
        # joins of its effect tokens, gradients built into its branches
        self._cond_merges: dict[int, list[Node]] = {}
        for n in graph.nodes:
            if n.op == MERGE and n.inputs:
                src = n.inputs[0].node.context
                if isinstance(src, CondContext) and src.outer is n.context:
                    self.cond_unit[n] = src.state
                    self._cond_merges.setdefault(id(src.state), []).append(n)

    # -- units ----------------------------------------------------------------------------
    def unit_of(self, node: Node, region):
        """The unit of `region` that `node` belongs to, or None if it is outside the region
        (or is the region's own loop plumbing)."""
        s = self.cond_unit.get(node)
        ctx = node.context
        if s is not None and cond_outer(s) is region:
            return s
        if node.op == EXIT:
            loop = self.exit_loop[node]
            if loop.outer is region:
                return loop
        if ctx is region:
            if s is None and isinstance(region, WhileContext) and node.op in LOOP_PLUMBING:
                return None
            return node
        x = ctx
        while x is not None and x.outer is not region:
            x = x.outer
        if x is None:
            return None
        return x.state if isinstance(x, CondContext) else x

    def merges_of(self, state: CondState) -> list[Node]:
        """The cond's Merges (its outputs and the joins of its effect tokens)."""
        return self._cond_merges.get(id(state), [])

    def _nodes_within(self, ctx) -> list[Node]:
        out, todo = [], [ctx]
        while todo:
            c = todo.pop()
            out.extend(self.by_context.get(c, ()))
            todo.extend(self._sub_contexts.get(id(c), ()))
        return out

    def unit_waits_on(self, unit) -> list[Node]:
        """The nodes outside `unit` that it reads (data) or waits for (control)."""
        if isinstance(unit, Node):
            return [t.node for t in unit.inputs] + list(unit.control_inputs)
        cached = self._waits.get(id(unit))
        if cached is not None:
            return cached
        if isinstance(unit, CondState):
            inside = [n for b in unit.branches for n in self._nodes_within(b)]
            inside += list(unit.switches.values()) + self.merges_of(unit)
        else:
            inside = self._nodes_within(unit) + self.loop_exits.get(unit, [])
        ids = {id(n) for n in inside}
        # Inputs come in through Switches and Enters, and also straight from other conds'
        # branches where a gradient cond reads forward values (see grad.mirrors).
        waits = [p for n in inside for p in [t.node for t in n.inputs] + n.control_inputs if id(p) not in ids]
        self._waits[id(unit)] = waits
        return waits

    def units(self, region) -> list:
        """The units of `region` in topological order (producers first)."""
        found: dict[int, object] = {}
        for n in self.by_context.get(region, ()):
            u = self.unit_of(n, region)
            if u is not None:
                found.setdefault(id(u), u)
        for u in self.child_units.get(region, ()):
            found.setdefault(id(u), u)
        units = list(found.values())
        deps: dict[int, set[int]] = {}
        users: dict[int, list] = {id(u): [] for u in units}
        for u in units:
            ds = set()
            # control edges count too: a gradient stack's pops wait for its pushes through one
            for b in self.unit_waits_on(u):
                p = self.unit_of(b, region)
                if p is not None and p is not u and id(p) in users:
                    ds.add(id(p))
            deps[id(u)] = ds
            for d in ds:
                users[d].append(u)
        order, ready = [], [u for u in units if not deps[id(u)]]
        remaining = {k: len(v) for k, v in deps.items()}
        while ready:
            u = ready.pop()
            order.append(u)
            for v in users[id(u)]:
                remaining[id(v)] -= 1
                if not remaining[id(v)]:
                    ready.append(v)
        if len(order) != len(units):
            raise RuntimeError("gradients: the units of a region form a cycle; the graph is malformed")
        return order

    # -- reachability ---------------------------------------------------------------------
    def forward_reach(self, sources: list[Tensor], stop: frozenset[Node] = frozenset()) -> set[Tensor]:
        """Tensors that depend differentiably on `sources` (through no node of `stop`)."""
        seen = {t for t in sources if differentiable_dtype(t)}
        work = list(seen)
        while work:
            t = work.pop()
            for use in self.forward.uses(t):
                n, i = use.node, use.index
                if not is_differentiable(n) or n in stop:
                    continue
                outs = list(n.outputs)
                k = _slot_position(n, i)
                if k is not None:  # saved as value k of a slot: the pops' output k
                    outs = [p.outputs[k if p.op == "StackPop" else 0] for p in self.stack_pops.get(stack_of(n.inputs[0]), ())]
                for o in outs:
                    if o not in seen and differentiable_dtype(o):
                        seen.add(o)
                        work.append(o)
        return seen

    def backward_reach(self, ys: list[Tensor], within: set[Tensor]) -> set[Tensor]:
        """Tensors in `within` that `ys` depend on differentiably."""
        seen = {t for t in ys if t in within}
        work = list(seen)
        while work:
            t = work.pop()
            n = t.node
            if not is_differentiable(n):
                continue
            ins = list(n.inputs)
            if n.op in ("StackPop", "StackConcat"):
                ins = [stacked_values(p)[t.index] for p in self.stack_pushes.get(stack_of(n.inputs[0]), ())]
            for i in ins:
                if i not in seen and i in within:
                    seen.add(i)
                    work.append(i)
        return seen

    def reads_within(self, ctx) -> list[Node]:
        """ReadVariable nodes in context `ctx` or nested inside it."""
        return [r for r in self.variable_reads if is_within(r.context, ctx)]
