"""CondContext and WhileContext: the control-flow structure recorded on nodes.

A context decides how an outer tensor enters it (a cond branch sees it through a
Switch on the predicate; a loop body through a constant Enter) and gates "free"
nodes (those with no input that could be dead) on a pivot, so that nothing in an
untaken branch or in a loop's final, dead iteration executes. Gradient and
partitioning code read these records; the executor does not need them.
Both implement graph.node.ControlFlowContext, the protocol that Graph.create_node
calls into.
"""
from __future__ import annotations

from graph.core import get_default_graph
from graph.node import ControlFlowContext, DotCluster, Node, Tensor
from graph.op_names import ENTER, EXIT, IDENTITY, MERGE, SWITCH
from graph.ops.conversion import constant


class _ContextBase(ControlFlowContext):
    """What CondContext and WhileContext share."""

    outer: ControlFlowContext | None
    has_effects: bool

    def capture_control(self, node: Node) -> Node:
        """A node in this context's frame that runs after `node` (an outer node)."""
        graph = node.graph
        with graph.in_context(self.outer):
            token = graph.create_node(IDENTITY, [_zero(graph)], name="ctrl_token",
                                      control_inputs=[node]).outputs[0]
        with graph.in_context(self):
            return graph.create_node(IDENTITY, [token], name="ctrl_token")

    def hoisted_read(self, variable) -> Tensor | None:
        return self.outer.hoisted_read(variable) if self.outer is not None else None


def effect_before(graph, ctx):
    """The effect that an effect starting in context `ctx` must follow: the last one in `ctx`, else
    the last one in the branches around it, out to the nearest loop body or the root (a loop body
    starts after the effects before the loop: its Enters wait for them)."""
    while True:
        last = graph.last_effect(ctx)
        if last is not None or ctx is None or isinstance(ctx, WhileContext):
            return last
        ctx = ctx.outer


def _zero(graph):
    with graph.in_context(None):
        return constant(0)


def _forget(mapping: dict, first_removed_id: int) -> None:
    for k in [k for k, v in mapping.items() if v.node.id >= first_removed_id]:
        del mapping[k]


class CondState:
    """What the two branches of one `cond` share: the predicate and its Switches."""

    def __init__(self, pred: Tensor, source):
        self.pred = pred
        self.source = source
        self.switches: dict[Tensor, Node] = {}  # outer tensor -> Switch(t, pred)
        self.pred_switch: Node | None = None
        self.branches: list[CondContext] = []
        self.merges: list[Node] = []
        self.outputs = None

    def switch_for(self, t: Tensor, outer) -> Node:
        sw = self.switches.get(t)
        if sw is None:
            graph = t.graph
            # built when a branch first needs it, maybe inside a control_dependencies block opened in the
            # branch, whose nodes the Switch (outside the branch) cannot wait for; the branch's nodes do
            with graph.in_context(outer), graph.control_dependencies(None):
                sw = graph.create_node(SWITCH, [t, self.pred], name="Switch")
            self.switches[t] = sw
        return sw


class CondContext(_ContextBase):
    """One branch (`branch` 1: true, 0: false) of a conditional."""

    def __init__(self, state: CondState, branch: int, outer):
        self.state = state
        self.branch = branch
        self.outer = outer
        self.has_effects = False
        self._pivot: Node | None = None
        self.captured: dict[Tensor, Tensor] = {}

    @property
    def pred(self) -> Tensor:
        return self.state.pred

    @property
    def frame(self):
        return self.outer.frame if self.outer is not None else None

    def capture(self, t: Tensor) -> Tensor:
        out = self.captured.get(t)
        if out is None:
            if t.index == self.branch and self.state.switches.get(t.node.inputs[0] if t.node.inputs else None) is t.node:
                return t  # this branch's own capture: its Switch sits outside the branch, its value inside
            out = self.state.switch_for(t, self.outer).outputs[self.branch]
            self.captured[t] = out
        return out

    @property
    def pivot(self) -> Node:
        """A node that is live exactly when this branch is taken."""
        if self._pivot is None:
            graph = self.pred.graph
            sw = self.state.switch_for(self.pred, self.outer)
            # built on first use: an open control_dependencies block is the using node's, not the pivot's
            with graph.in_context(self), graph.control_dependencies(None):
                self._pivot = graph.create_node(IDENTITY, [sw.outputs[self.branch]],
                                                name="pivot_t" if self.branch else "pivot_f")
        return self._pivot

    def on_node_created(self, node: Node) -> None:
        if not node.inputs and node is not self._pivot:
            node.add_control_input(self.pivot)

    def effect_entry_controls(self) -> list[Node]:
        controls = [self.pivot]
        prev = effect_before(self.pred.graph, self.outer)
        if prev is not None:
            controls.append(prev)
        return controls

    def rollback(self, first_removed_id: int) -> None:
        _forget(self.captured, first_removed_id)
        for k in [k for k, v in self.state.switches.items() if v.id >= first_removed_id]:
            del self.state.switches[k]
        if self._pivot is not None and self._pivot.id >= first_removed_id:
            self._pivot = None

    def describe(self) -> str:
        where = f" at {self.state.source}" if self.state.source else ""
        return f"the {'true' if self.branch else 'false'} branch of the cond{where}"

    def name_of(self, t: Tensor) -> str | None:
        return None

    def dot_cluster(self) -> DotCluster:
        return DotCluster(self.state, "cond", self.state.source, "#d68910",
                          part="true" if self.branch else "false",
                          part_color="#2e9e44" if self.branch else "#c0392b")


class WhileContext(_ContextBase):
    """One while loop: its frame, its plumbing nodes and its captured constants."""

    def __init__(self, frame_name: str, parallel_iterations: int, outer, source, names=None,
                 swap_memory: bool = False, maximum_iterations=None, iteration_limit: int | None = None,
                 memory_policy: str | None = None, checkpoint_every: int = 1, back_prop: bool = True):
        self.frame_name = frame_name
        self.back_prop = bool(back_prop)  # False: no gradient flows through the loop (grad cuts its Exits)
        self.parallel_iterations = parallel_iterations
        self.outer = outer
        self.source = source
        self.names = names
        # what the loop's gradient keeps of its iterations (graph.control_flow.memory_policy):
        # "keep", "swap" (= swap_memory) or "recompute" from a saved state every `checkpoint_every`
        self.memory_policy = memory_policy or ("swap" if swap_memory else "keep")
        self.checkpoint_every = checkpoint_every
        self.swap_memory = self.memory_policy == "swap"
        self.maximum_iterations = maximum_iterations
        self.iteration_limit = iteration_limit            # built in: a run fails beyond it
        self.requested_iteration_limit: int | None = None  # asked for while the loop was built
        self.has_effects = False
        self.phase = "cond"
        self.constant_enters: dict[Tensor, Tensor] = {}  # outer tensor -> Enter output
        self.enters: list[Node] = []       # loop-variable Enters
        self.merges: list[Node] = []
        self.switches: list[Node] = []
        self.exits: list[Node] = []
        self.next_iterations: list[Node] = []
        self.loop_cond: Node | None = None
        self.structure = None               # the loop_vars structure
        # id(Variable) -> its value read once before the loop: the loop never assigns it
        self.hoisted_reads: dict[int, Tensor] = {}
        self._body_pivot: Node | None = None
        self._when_complete: list = []   # checks that need the whole loop (see `when_complete`)

    @property
    def frame(self):
        return self

    @property
    def graph(self):
        return self.enters[0].graph if self.enters else get_default_graph()

    def capture(self, t: Tensor) -> Tensor:
        out = self.constant_enters.get(t)
        if out is None:
            out = self.make_enter(t, is_constant=True)
            self.constant_enters[t] = out
        return out

    def make_enter(self, t: Tensor, is_constant: bool, control_inputs=()) -> Tensor:
        graph = t.graph
        return graph.create_node(
            ENTER, [t], {"frame_name": self.frame_name, "is_constant": is_constant,
                           "parallel_iterations": self.parallel_iterations},
            name="Enter", control_inputs=control_inputs, context=self).outputs[0]

    def make_exit(self, t: Tensor) -> Node:
        return t.graph.create_node(EXIT, [t], name="Exit", context=self.outer)

    def when_complete(self, check) -> None:
        """Calls `check(self)` once the loop is complete (body and NextIterations built, final trace),
        before `while_loop` returns: for code run while tracing the body that needs all of it (what
        the rest of the body makes of the loop variables, say)."""
        self._when_complete.append(check)

    def complete(self) -> None:
        """Runs the `when_complete` checks; `while_loop` calls it once its final trace is built."""
        checks, self._when_complete = self._when_complete, []
        for check in checks:
            check(self)

    def request_iteration_limit(self, limit: int) -> None:
        """Asks for the loop to be built with `iteration_limit=limit` (`graph.set_iteration_limit`, called
        while its body is traced): `while_loop` builds it again when that differs from its limit."""
        self.requested_iteration_limit = limit

    def set_memory_policy(self, policy: str, checkpoint_every: int = 1) -> None:
        """Sets the loop's memory policy (checked by graph.control_flow.memory_policy.check_policy)."""
        self.memory_policy = policy
        self.checkpoint_every = checkpoint_every
        self.swap_memory = policy == "swap"

    def is_invariant(self, t: Tensor) -> bool:
        n = t.node
        return n.op == ENTER and n.context is self and n.attrs["is_constant"]

    @property
    def pivot(self) -> Node:
        """Live in every iteration of the current phase; dead in the body of the final one."""
        if self.phase == "cond":
            return self.merges[0]
        if self._body_pivot is None:
            graph = self.loop_cond.graph
            with graph.in_context(self), graph.control_dependencies(None):  # built on first use, as a cond's
                lc = self.loop_cond.outputs[0]
                sw = graph.create_node(SWITCH, [lc, lc], name="pivot_switch")
                self._body_pivot = graph.create_node(IDENTITY, [sw.outputs[1]], name="pivot")
        return self._body_pivot

    def is_pivot(self, node: Node) -> bool:
        """Whether `node` is a pivot of this loop (a gate, not a dependence on a value)."""
        return node is self._body_pivot or (bool(self.merges) and node is self.merges[0])

    def on_node_created(self, node: Node) -> None:
        # A node fed only by loop constants would otherwise fire in the final,
        # dead iteration too (and a NextIteration would start a new one).
        if node.op != MERGE and all(self.is_invariant(t) for t in node.inputs):
            node.add_control_input(self.pivot)

    def effect_entry_controls(self) -> list[Node]:
        return [self.pivot]

    def hoisted_read(self, variable) -> Tensor | None:
        # the outermost loop's read wins: inside it, inner loops see that one value too
        outer = super().hoisted_read(variable)
        return outer if outer is not None else self.hoisted_reads.get(id(variable))

    def rollback(self, first_removed_id: int) -> None:
        _forget(self.constant_enters, first_removed_id)
        if self._body_pivot is not None and self._body_pivot.id >= first_removed_id:
            self._body_pivot = None

    def loop_var_name(self, i: int) -> str:
        if self.names and i < len(self.names):
            return self.names[i]
        return f"loop_vars{i}"

    def describe(self) -> str:
        where = f" at {self.source}" if self.source else ""
        return f"the while loop{where} (frame {self.frame_name})"

    def name_of(self, t: Tensor) -> str | None:
        # a loop variable is the output of its Merge and both outputs of its Switch
        plumbing = self.merges if t.node.op == MERGE else self.switches if t.node.op == SWITCH else ()
        for k, node in enumerate(plumbing):
            if node is t.node and (t.index == 0 or node.op == SWITCH):
                where = f" of the loop at {self.source.short}" if self.source is not None else ""
                return f"loop variable {self.loop_var_name(k)}{where}"
        return None

    def dot_cluster(self) -> DotCluster:
        return DotCluster(self, self.frame_name, self.source, "#3b7dd8")
