"""Control-flow structure as the dataflow gives it: each node's frame and guard, each loop's parts.

One analysis for the passes that need the structure of a graph or of a plan's part of it: the executor's
branch skipping (exec/branches.py), the compiler (exec/compiled/structure.py) and the validator
(graph/validate.py). It reads the primitives only, as TF's functionalize_while / functionalize_cond do, so
a graph built by hand is analysed like one `graph.cond` and `graph.while_loop` built; the recorded
contexts (`Node.context`) only name loops in messages (docs/design.md, "Control-flow structure").

- **Frames.** A node's frame is the loop instance its outputs live in: an Enter's is the child frame its
  `frame_name` names (one per parent frame and name), an Exit's the parent of its input's, a Merge's that
  of its inputs from outside the loop, any other node's that of its first input (control inputs count
  when it has no data input; none: the root). Then every edge must stay in one frame, but an Enter's
  (from the parent frame) and an Exit's (from a loop directly inside): each edge that does not is a
  `FrameProblem`, which names the node and the user's line.
- **Guards.** Relative to its frame, a node's guard is a conjunction of literals "the predicate's value
  is true / false" that holds whenever the node is live in an iteration: a Switch's port adds its
  literal, a Merge needs what all its inputs need (it is live when one is), a loop's Merge and an Enter
  nothing (they are live in every iteration of their frame), an Exit what its loop's variables need to
  enter, any other node what all its inputs need, control inputs included. NEVER: never live (it needs a
  predicate true and false). This is the tagged-token deadness rule (docs/design.md, "Tagged-token
  rules") evaluated once, for all iterations. Predicates are told apart by the value they forward
  (through identities, Switches and loop constants), so a gradient cond on the forward cond's predicate
  shares its literals.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from graph.index import producers
from graph.node import Node, Tensor
from graph.op_names import ENTER, EXIT, IDENTITY, LOOP_COND, MERGE, NEXT_ITERATION, STOP_GRADIENT, SWITCH

# ops whose output is their first input's value (a predicate seen through them is the same predicate)
_FORWARDING = frozenset({IDENTITY, STOP_GRADIENT, LOOP_COND, SWITCH, EXIT, NEXT_ITERATION})
_EMPTY: frozenset = frozenset()


class Literal(NamedTuple):
    """"The predicate whose value is `key` is `value`": key is (node id, output index) of the value."""

    key: tuple[int, int]
    value: bool


# A guard: the literals that hold whenever a node is live, or NEVER.
Guard = frozenset | None
NEVER: Guard = None


@dataclass(eq=False)
class StaticFrame:
    """One loop frame of the graph (one per parent frame and frame name), or the root (name "").

    The static counterpart of the executor's loop instances (exec/executor.py, `FrameInstance`)."""

    name: str
    parent: StaticFrame | None
    depth: int
    context: object = None                          # the loop's recorded WhileContext, where it has one
    nodes: list = field(default_factory=list)       # nodes whose outputs live here, in the order given
    children: dict = field(default_factory=dict)    # frame name -> StaticFrame
    exits: list = field(default_factory=list)       # the Exits leaving this loop, in the order given

    def enclosing(self) -> Iterator[StaticFrame]:
        """This frame and those around it, innermost first (the root last)."""
        f: StaticFrame | None = self
        while f is not None:
            yield f
            f = f.parent

    def is_inside(self, outer: StaticFrame) -> bool:
        """Whether this frame lies inside `outer` at any depth, not being it."""
        return self is not outer and any(f is outer for f in self.enclosing())

    def describe(self) -> str:
        """The frame's names from the outermost loop in, as messages give it ("outer/inner"; "<root>")."""
        if self.parent is None:
            return "<root>"
        return "/".join(reversed([f.name for f in self.enclosing() if f.parent is not None]))


@dataclass(frozen=True, slots=True)
class FrameProblem:
    """An edge that breaks the frame rules, or a node no frame can hold: `message` names `node`."""

    node: Node
    message: str

    def __str__(self) -> str:
        where = f" (built at {self.node.source})" if self.node.source is not None else ""
        return self.message + where


class ControlStructure:
    """Frames and guards of `nodes` (see the module doc); inputs from outside them are not followed, and the
    inputs of a `cut` node (a fed one: its value comes from outside, in the root frame) are no edges.
    Frames are found at once, guards on first use."""

    def __init__(self, nodes: Iterable[Node], *, cut: Collection[Node] = ()):
        self.nodes: list[Node] = list(nodes)
        self.cut = cut
        self._members = set(self.nodes)
        self.root = StaticFrame("", None, 0)
        self.frame_of: dict[Node, StaticFrame] = {}
        self.problems: list[FrameProblem] = []
        self._guards: dict = {}   # node -> Guard; (Switch, port) -> Guard of that output
        for n in self.nodes:
            self._assign_frame(n)
        for n in self.nodes:
            self.frame_of[n].nodes.append(n)
            if n.op == EXIT and n not in cut:
                self.exit_frame(n).exits.append(n)
        for n in self.nodes:
            self._check_edges(n)

    # -- frames -----------------------------------------------------------------------------------
    def frame(self, n: Node) -> StaticFrame:
        return self.frame_of[n]

    def exit_frame(self, exit_node: Node) -> StaticFrame:
        """The loop an Exit leaves: its input's frame."""
        return self.frame_of[exit_node.inputs[0].node]

    def input_frame(self, n: Node) -> StaticFrame | None:
        """The frame `n`'s inputs and control inputs must live in: the parent of an Enter's frame, the loop
        an Exit leaves, any other node's own (None: an Enter into the root, which no frame holds)."""
        if n.op == ENTER:
            return self.frame_of[n].parent
        if n.op == EXIT:
            return self._exit_source(n)
        return self.frame_of[n]

    def frames(self) -> Iterator[StaticFrame]:
        """Every frame, the root first, parents before their children."""
        todo = [self.root]
        while todo:
            f = todo.pop()
            yield f
            todo.extend(reversed(list(f.children.values())))

    def _assign_frame(self, n: Node) -> None:
        """The frames of `n` and of the nodes its frame comes from (a chain walked once, without recursion)."""
        chain: list[Node] = []
        m: Node | None = n
        while m is not None and m not in self.frame_of:
            if m in chain:  # a cycle that no loop Merge breaks (the validator reports it): start at the root
                break
            chain.append(m)
            m = self._frame_source(m)
        frame = self.frame_of[m] if m is not None and m in self.frame_of else self.root
        for c in reversed(chain):
            frame = self._frame_after(c, frame)
            self.frame_of[c] = frame

    def _frame_source(self, n: Node) -> Node | None:
        """The node whose frame decides `n`'s (None: the root)."""
        if n in self.cut:
            return None
        if n.op == MERGE:
            outside = [t.node for t in n.inputs if t.node.op != NEXT_ITERATION]
            candidates = outside[:1] if outside else []
        else:
            candidates = producers(n)[:1]
        return candidates[0] if candidates and candidates[0] in self._members else None

    def _frame_after(self, n: Node, source: StaticFrame) -> StaticFrame:
        """`n`'s frame, given that of the node its frame comes from."""
        if n in self.cut:
            return self.root
        if n.op == ENTER:
            return self._child(source, n)
        if n.op == EXIT:
            return source.parent if source.parent is not None else source
        return source

    def _child(self, parent: StaticFrame, enter: Node) -> StaticFrame:
        name = enter.attrs.get("frame_name")
        child = parent.children.get(name)
        if child is None:
            recorded = enter.frame
            context = recorded if getattr(recorded, "frame_name", None) == name else None
            child = parent.children[name] = StaticFrame(name, parent, parent.depth + 1, context)
        return child

    def _exit_source(self, n: Node) -> StaticFrame | None:
        src = n.inputs[0].node if n.inputs else None
        return self.frame_of.get(src) if src is not None else None

    # -- frame rules ------------------------------------------------------------------------------
    def _check_edges(self, n: Node) -> None:
        if n in self.cut:
            return  # its value is fed, in the root frame
        if n.op == MERGE and n.inputs and all(t.node.op == NEXT_ITERATION for t in n.inputs):
            self._problem(n, f"Merge {n.name} has only NextIteration inputs")
        want = self.input_frame(n)
        if n.op == EXIT and want is not None and want.parent is None:
            self._problem(n, f"{n.name}: Exit input {n.inputs[0].name} is not in a loop: it is in frame <root>")
            return
        for t in n.inputs:
            self._check_edge(n, t.node, f"input {t.name}", want)
        for c in n.control_inputs:
            self._check_edge(n, c, f"control input ^{c.name}", want)

    def _check_edge(self, n: Node, src: Node, what: str, want: StaticFrame | None) -> None:
        have = self.frame_of.get(src)
        if have is None or have is want:
            return  # an input from outside the nodes analysed is not an edge here
        self._problem(n, f"{n.name} ({n.op}): {what} is in frame {have.describe()}, expected "
                         f"{want.describe() if want is not None else '<none>'}")

    def _problem(self, n: Node, message: str) -> None:
        self.problems.append(FrameProblem(n, message))

    # -- guards -----------------------------------------------------------------------------------
    def guard(self, n: Node) -> Guard:
        """When `n` is live in an iteration of its frame (see the module doc)."""
        got = self._guards.get(n, _EMPTY)
        if got is _EMPTY and n not in self._guards:
            self._compute_guards(n)
            got = self._guards[n]
        return got

    def port_guard(self, t: Tensor) -> Guard:
        """When `t` is live: its node's guard, and a Switch output's literal."""
        g = self.guard(t.node)
        return self._guards.get((t.node, t.index), g) if t.node.op == SWITCH else g

    def entry_guard(self, enter: Node) -> Guard:
        """When an Enter's input and control inputs are live, in the frame around its loop."""
        if enter in self.cut:
            return _EMPTY
        for p in producers(enter):
            if p in self._members and p not in self._guards:
                self._compute_guards(p)
        return self._conjunction(enter)

    def loop_guard(self, frame: StaticFrame) -> Guard:
        """When loop `frame` runs, in its parent frame: when its variables enter (any of them, where they
        enter under different conditions; all its Enters where it has no variables)."""
        enters = [n for n in frame.nodes if n.op == ENTER]
        variables = [e for e in enters if not e.attrs.get("is_constant")] or enters
        return _common([self.entry_guard(e) for e in variables])

    def value_key(self, t: Tensor) -> tuple[int, int]:
        """The (node id, output index) of the value `t` carries, through identities, Switches, Exits,
        NextIterations and loop constants: predicates with one key are one predicate."""
        while t.node not in self.cut and t.node.inputs and (
                t.node.op in _FORWARDING or t.node.op == ENTER and t.node.attrs.get("is_constant")):
            t = t.node.inputs[0]
        return (t.node.id, t.index)

    def _compute_guards(self, start: Node) -> None:
        """Guards of `start` and what it depends on, in dependency order (a stack, not recursion). A
        dependency still in progress is a cycle no loop Merge breaks: it counts as always live."""
        in_progress: set[Node] = set()
        stack = [start]
        while stack:
            n = stack[-1]
            if n in self._guards:
                stack.pop()
                continue
            todo = [d for d in self._guard_dependencies(n) if d not in self._guards and d not in in_progress]
            if todo and n not in in_progress:
                in_progress.add(n)
                stack.extend(todo)
                continue
            self._guards[n] = self._guard_of(n)
            in_progress.discard(n)
            stack.pop()

    def _guard_dependencies(self, n: Node) -> list[Node]:
        if n in self.cut or n.op == ENTER or _is_loop_merge(n):
            return []
        if n.op == EXIT:
            frame = self._exit_source(n)
            enters = [] if frame is None else [e for e in frame.nodes if e.op == ENTER]
            return [p for e in enters if e not in self.cut for p in producers(e) if p in self._members]
        return [p for p in producers(n) if p in self._members]

    def _guard_of(self, n: Node) -> Guard:
        if n in self.cut or n.op == ENTER or _is_loop_merge(n):
            return _EMPTY  # there in every iteration of its frame
        if n.op == EXIT:
            frame = self._exit_source(n)
            return _EMPTY if frame is None or frame.parent is None else self.loop_guard(frame)
        if n.op == MERGE:
            return _common([self._known_port_guard(t) for t in n.inputs if t.node in self._members])
        g = self._conjunction(n)
        if n.op == SWITCH and len(n.inputs) == 2:
            key = self.value_key(n.inputs[1])
            for port in (0, 1):
                self._guards[(n, port)] = conjoin(g, frozenset({Literal(key, bool(port))}))
        return g

    def _known_port_guard(self, t: Tensor) -> Guard:
        g = self._guards.get(t.node, _EMPTY)  # _EMPTY where a cycle left it unknown
        return self._guards.get((t.node, t.index), g) if t.node.op == SWITCH else g

    def _conjunction(self, n: Node) -> Guard:
        """What all of `n`'s inputs and control inputs need."""
        g: Guard = _EMPTY
        for t in n.inputs:
            if t.node in self._members:
                g = conjoin(g, self._known_port_guard(t))
        for c in n.control_inputs:
            if c in self._members:
                g = conjoin(g, self._guards.get(c, _EMPTY))
        return g


def conjoin(a: Guard, b: Guard) -> Guard:
    """Both guards; NEVER where they need one predicate true and false."""
    if a is NEVER or b is NEVER:
        return NEVER
    g = a | b
    if len(g) > 1 and any(Literal(k, not v) in g for k, v in g):
        return NEVER
    return g


def _common(guards: list[Guard]) -> Guard:
    """What every one of the live guards needs (NEVER: none is ever live): a Merge's, which is live when
    one of its inputs is."""
    live = [g for g in guards if g is not NEVER]
    if not live:
        return NEVER if guards else _EMPTY
    return frozenset.intersection(*live)


def _is_loop_merge(n: Node) -> bool:
    return n.op == MERGE and any(t.node.op == NEXT_ITERATION for t in n.inputs)
