"""Recovers structured control flow from a plan: loop frames become loops, guards become `if`s.

The frames and guards are the shared analysis of the graph's control flow (graph/control_structure.py,
which reads them off the dataflow, as TF's functionalize_while / functionalize_cond do). What is the
compiler's own is turning them into Python:

- A Merge's inputs must be live under the leaves of a complete if/else tree (exactly one is live
  whenever the Merge is), so that its value is one assignment per branch.
- In a loop frame, the loop's predicate splits the nodes: those live without it run every
  iteration before the test (the *head*: the condition, and nodes of the final iteration),
  those needing it true run after the test (the *body*), those needing it false run once,
  when the loop ends (the *tail*, usually nothing but what the Exits forward).
- Within a frame, nodes and child loops are ordered topologically, program order first.

Anything else is `Unstructured`: the plan runs on the dataflow executor instead.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from graph.control_structure import NEVER, ControlStructure, Literal, StaticFrame
from graph.index import GraphIndex, in_graph_order, upstream
from graph.node import Node, Tensor
from graph.op_names import CONST, ENTER, EXIT, IDENTITY, LOOP_COND, MERGE, NEXT_ITERATION, NO_OP, STOP_GRADIENT, SWITCH

# Ops whose output is their (first) input, unchanged: compiled code renames, it does not call.
# (Control inputs only order them and decide whether they are live: both are kept in guards.)
_RENAMES = frozenset({IDENTITY, STOP_GRADIENT, LOOP_COND})
# Ops with no kernel call at all in compiled code.
_STRUCTURAL = frozenset({ENTER, EXIT, SWITCH, MERGE, NEXT_ITERATION, NO_OP, CONST}) | _RENAMES


class Unstructured(Exception):
    """The graph has a shape that the compiler does not turn into Python control flow (the reason)."""


# ----------------------------------------------------------------------------- program records


def tensor_key(t: Tensor) -> tuple:
    """`t` as a key of the compiler's tables: its node's id and output index (tensors are not hashed by value)."""
    return (t.node.id, t.index)


@dataclass(eq=False)
class Call:
    """`outs = kernel(*args)` for a node with a kernel; `outs[k]` None: output k is not used."""
    node: Node
    args: list          # canonical tensors
    outs: list          # the node's output tensors (canonical), or None where unused
    guard: tuple = ()


@dataclass(eq=False)
class Select:
    """A cond Merge's value in one branch: `out = source` (and `index_out = index`) where `guard` holds."""
    out: Tensor
    source: Tensor
    index_out: Tensor | None
    index: int
    guard: tuple = ()


@dataclass(eq=False)
class Loop:
    """A loop frame's instance: merges start as `init`, then head / test / body / back edge."""
    frame: StaticFrame
    context: object                  # the graph's WhileContext when recorded (error messages), else None
    init: list                       # (merge output, value before the loop)
    head: list
    pred: Tensor                     # the value of the loop's predicate
    tail: list
    body: list
    back: list                       # (merge output, its value for the next iteration)
    exits: list                      # tensors the loop hands to its parent frame
    guard: tuple = ()
    labels: list = field(default_factory=list)  # per loop variable, the user's name for it ("" unknown)


@dataclass(eq=False)
class Structured:
    """A plan as structured code: parameters (fed tensors), steps, and per fetch its value and guard."""
    params: list
    steps: list
    results: list       # per fetch: (canonical tensor, guard relative to the root, NEVER included)
    fetches: list
    nodes: list         # every node the program runs, graph order
    predicates: dict    # literal key -> the tensor whose value a guard tests
    fed: set            # the fed nodes


# ----------------------------------------------------------------------------- analysis

class _Structurer:
    def __init__(self, fetches: list[Tensor], targets: list[Node], feeds: list[Tensor]):
        self.fed = {t.node: t for t in feeds}
        self.nodes = in_graph_order(upstream([t.node for t in fetches] + list(targets), cut=self.fed))
        self.flow = ControlStructure(self.nodes, cut=self.fed)
        if self.flow.problems:
            raise Unstructured(str(self.flow.problems[0]))
        self.root = self.flow.root
        self.frame_of = self.flow.frame_of
        self.index = GraphIndex(self.nodes, cut=self.fed)
        self.position: dict = {}     # frame -> {node or child frame: its index in the frame's order}
        self.by_id = {n.id: n for n in self.nodes}
        self.predicates: dict = {}   # literal key -> the canonical tensor tested
        self.alias: dict = {}        # (node id, port) of a Merge whose branches all give one value -> it
        self.used = {(t.node.id, t.index) for n in self.nodes if n not in self.fed for t in n.inputs} | \
            {(t.node.id, t.index) for t in fetches}

    # -- values --------------------------------------------------------------------------------
    def value_key(self, t: Tensor) -> tuple:
        """The key of the variable holding `t`'s value in compiled code."""
        return tensor_key(self.canonical(t))

    def canonical(self, t: Tensor) -> Tensor:
        """The tensor whose variable holds `t`'s value in compiled code (renames looked through)."""
        while t.node not in self.fed:
            op = t.node.op
            same = self.alias.get((t.node.id, t.index))
            if same is not None:
                t = same
            elif op in _RENAMES or op in (SWITCH, EXIT, NEXT_ITERATION) or \
                    op == ENTER and t.node.attrs["is_constant"]:
                t = t.node.inputs[0]
            else:
                return t
        return t

    # -- frames as code ------------------------------------------------------------------------
    def order(self, frame: StaticFrame) -> list:
        """The frame's nodes and child loops (as Frames) in a dependency order, program order first
        (node creation order) among what is ready: effects without edges between them keep the
        order the user wrote them in."""
        units = {c: min(e.id for e in c.nodes if e.op == ENTER) for c in frame.children.values()}
        deps: dict = {}
        for n in frame.nodes:
            if n.op == ENTER:
                continue  # values from the parent frame: there before the loop starts
            srcs = [t.node for t in n.inputs] + list(n.control_inputs)
            if n.op == MERGE and any(t.node.op == NEXT_ITERATION for t in n.inputs):
                srcs = [s for s in srcs if s.op != NEXT_ITERATION]
            deps[n] = [] if n in self.fed else [self._unit(s, frame) for s in srcs]
        for c in units:
            deps[c] = [self._unit(s, frame) for e in c.nodes if e.op == ENTER
                       for s in [t.node for t in e.inputs] + list(e.control_inputs)]
        return _toposort(deps, lambda u: units[u] if isinstance(u, StaticFrame) else u.id, frame.name)

    def _unit(self, src: Node, frame: StaticFrame):
        """What `src` is in `frame`'s order: itself, the child loop it belongs to, or None (outside)."""
        f = self.frame_of[src]
        if f is frame:
            return None if src.op == ENTER else src
        while f is not None and f.parent is not frame:
            f = f.parent
        return f

    def structure(self, frame: StaticFrame, pred_key=None) -> list:
        """The steps of one iteration of `frame` (of the whole program at the root), in order."""
        steps = []
        order = self.order(frame)
        self.position[frame] = {u: k for k, u in enumerate(order)}
        for u in order:
            step = self.loop(u) if isinstance(u, StaticFrame) else self.node_step(u, pred_key)
            if isinstance(step, Loop):
                steps.append(step)
            elif step is not None:
                steps.extend(step)
        return [s for s in steps if s.guard is not NEVER]

    def literal_rank(self, frame: StaticFrame, literal) -> tuple:
        """Where a literal's test goes among those of one guard (outermost first): predicates of
        enclosing frames first, then in the order `frame` computes them (a loop's values where the
        loop is), so that every predicate is tested only where it has been computed."""
        node = self.by_id[literal[0][0]]
        home = self.frame_of[node]
        common, f = home, frame
        while common.depth > f.depth:
            common = common.parent
        while f.depth > common.depth:
            f = f.parent
        while common is not f:
            common, f = common.parent, f.parent
        unit = node if home is common else home  # else the child loop of `common` that computes it
        while unit is not node and unit.parent is not common:
            unit = unit.parent
        rank = self.position[common][unit]
        return (0, rank) if common is frame else (-1, common.depth, rank)

    def finish(self, frame: StaticFrame, steps: list) -> None:
        """Turns the steps' guards into tuples of literals, outermost test first."""
        for s in steps:
            s.guard = tuple(sorted(s.guard, key=lambda lit: self.literal_rank(frame, lit)))

    def node_step(self, n: Node, pred_key) -> list | None:
        op = n.op
        if n in self.fed or op in (ENTER, EXIT):
            return None  # an Exit's value is its loop's (structured with the loop)
        if op == MERGE:
            return self.merge(n, pred_key)
        if op == SWITCH:
            self.predicates[self.flow.value_key(n.inputs[1])] = self.canonical(n.inputs[1])
            return None
        if op in _STRUCTURAL:
            return None
        g = self.flow.guard(n)
        if g is NEVER:
            return []
        outs = [o if self._is_used(o) else None for o in n.outputs]
        return [Call(n, [self.canonical(t) for t in n.inputs], outs, g)]

    def _is_used(self, t: Tensor) -> bool:
        return (t.node.id, t.index) in self.used

    def merge(self, n: Node, pred_key) -> list:
        if any(t.node.op == NEXT_ITERATION for t in n.inputs):
            return None  # a loop's: structured with its loop
        if n.control_inputs:
            raise Unstructured(f"Merge {n.name} has control inputs")
        guards = [self.flow.port_guard(t) for t in n.inputs]
        _check_complete([g for g in guards if g is not NEVER], pred_key, n)
        if self.flow.guard(n) is NEVER:
            return []
        out, index_out = n.outputs[0], n.outputs[1] if len(n.outputs) > 1 else None
        if index_out is not None and not self._is_used(index_out):
            index_out = None
        live = [(k, t, g) for k, (t, g) in enumerate(zip(n.inputs, guards, strict=True)) if g is not NEVER]
        sources = {self.value_key(t) for _, t, _ in live}
        if len(sources) == 1 and index_out is None:
            self.alias[(n.id, 0)] = self.canonical(live[0][1])  # every branch gives the same value
            return []
        return [Select(out, self.canonical(t), index_out, k, g) for k, t, g in live]

    def _feeds_one_of(self, n: Node, merges: dict) -> bool:
        cons = self.index.data_consumers(n)
        return len(cons) == 1 and cons[0] in merges

    def loop(self, frame: StaticFrame) -> Loop:
        enters = [n for n in frame.nodes if n.op == ENTER]
        variables = [e for e in enters if not e.attrs["is_constant"]]
        g_loop = self._entry_guard(frame, enters)
        conds = [n for n in frame.nodes if n.op == LOOP_COND]
        if len(conds) != 1:
            raise Unstructured(f"frame {frame.name} has {len(conds)} LoopCond nodes")
        merges, nexts = self._loop_merges(frame, variables)
        pred = conds[0].inputs[0]
        pred_key = self.flow.value_key(pred)
        head, tail, body = _split(self.structure(frame, pred_key), pred_key)
        for part in (head, tail, body):
            self.finish(frame, part)
        taken, final = Literal(pred_key, True), Literal(pred_key, False)
        if self.flow.guard(conds[0]) != frozenset():
            raise Unstructured(f"the predicate of frame {frame.name} is not computed in every iteration")
        for m in merges:
            if self.flow.guard(nexts[m]) != frozenset({taken}):
                raise Unstructured(f"the next value of {m.name} is not computed exactly when the loop goes on")
        for n in frame.exits:
            if self.flow.port_guard(n.inputs[0]) != frozenset({final}):
                raise Unstructured(f"Exit {n.name} is not fed when the loop ends")
        exits = [self.canonical(n.outputs[0]) for n in frame.exits]
        init = [(m.outputs[0], self.canonical(e.inputs[0])) for e, m in zip(variables, merges, strict=True)]
        back = [(m.outputs[0], self.canonical(nexts[m].inputs[0])) for m in merges]
        context = getattr(conds[0], "context", None)
        if getattr(context, "frame_name", None) != frame.name:
            context = None
        return Loop(frame, context, init, head, self.canonical(pred), tail, body, back, exits, g_loop,
                    _labels(context, merges))

    def _entry_guard(self, frame: StaticFrame, enters: list[Node]):
        """The guard the loop runs under in its parent frame: its variables must all enter under it, and
        its constants under it or less."""
        outer = [self.flow.entry_guard(e) for e in enters]
        var_guards = {g for g, e in zip(outer, enters, strict=True) if not e.attrs["is_constant"]}
        if len(var_guards) != 1:
            raise Unstructured(f"the loop variables of frame {frame.name} enter under different conditions")
        (g_loop,) = var_guards
        for g, e in zip(outer, enters, strict=True):
            if e.attrs["is_constant"] and g_loop is not NEVER and (g is NEVER or not g <= g_loop):
                raise Unstructured(f"loop constant {e.name} is live under other conditions than its loop")
        return g_loop

    def _loop_merges(self, frame: StaticFrame, variables: list[Node]) -> tuple[list, dict]:
        """Each loop variable's Merge (of its Enter and one NextIteration) and that NextIteration."""
        merges, nexts = [], {}
        for e in variables:
            cons = self.index.data_consumers(e)
            if len(cons) != 1 or cons[0].op != MERGE or len(cons[0].inputs) != 2 or \
                    {t.node.op for t in cons[0].inputs} != {ENTER, NEXT_ITERATION}:
                raise Unstructured(f"loop variable {e.name} does not enter through a Merge with a NextIteration")
            m = cons[0]
            merges.append(m)
            nexts[m] = next(t.node for t in m.inputs if t.node.op == NEXT_ITERATION)
        for n in frame.nodes:
            if n.op == NEXT_ITERATION and not self._feeds_one_of(n, nexts):
                raise Unstructured(f"NextIteration {n.name} does not feed one loop Merge")
        return merges, nexts


def _split(steps: list, pred_key) -> tuple[list, list, list]:
    """A loop frame's steps as head (live without the loop predicate), tail (needing it false: the loop
    ended) and body (needing it true), each with that literal taken out of its guard."""
    head, tail, body = [], [], []
    taken, final = Literal(pred_key, True), Literal(pred_key, False)
    for s in steps:
        g = s.guard
        if g is NEVER:
            continue
        if taken in g:
            s.guard = g - {taken}
            body.append(s)
        elif final in g:
            s.guard = g - {final}
            tail.append(s)
        else:
            head.append(s)
    return head, tail, body


def _labels(context, merges: list[Node]) -> list[str]:
    """Per loop variable, the user's name for it as the loop's recorded context has it ("": unknown)."""
    if context is None:
        return [""] * len(merges)
    recorded = list(getattr(context, "merges", ()))
    return [context.loop_var_name(recorded.index(m)) if m in recorded else "" for m in merges]


def _check_complete(guards: list, pred_key, node: Node) -> None:
    """Unstructured unless a cond Merge's live inputs' guards are the leaves of a complete if/else tree
    (exactly one input is live whenever the Merge is), on predicates other than its loop's: then their
    disjunction is one conjunction, the Merge's guard."""
    if not guards:
        return
    guards = list(guards)
    while len(guards) > 1:
        for i, a in enumerate(guards):
            for j in range(i + 1, len(guards)):
                b = guards[j]
                diff = a ^ b
                if len(diff) == 2:
                    (k1, v1), (k2, v2) = diff
                    if k1 == k2 and v1 != v2 and k1 != pred_key:
                        guards[i] = a & b
                        del guards[j]
                        break
            else:
                continue
            break
        else:
            raise Unstructured(f"the inputs of Merge {node.name} are not live under complementary conditions")


def _toposort(deps: dict, priority, frame_name: str) -> list:
    """Kahn's algorithm, the ready unit of smallest priority first."""
    users: dict = {u: [] for u in deps}
    missing = {}
    for u, ds in deps.items():
        ds = {d for d in ds if d is not None and d is not u}
        missing[u] = len(ds)
        for d in ds:
            users[d].append(u)
    ready = [(priority(u), k, u) for k, u in enumerate(deps) if not missing[u]]
    heapq.heapify(ready)
    index = {u: k for k, u in enumerate(deps)}
    out = []
    while ready:
        _, _, u = heapq.heappop(ready)
        out.append(u)
        for v in users[u]:
            missing[v] -= 1
            if not missing[v]:
                heapq.heappush(ready, (priority(v), index[v], v))
    if len(out) != len(deps):
        raise Unstructured(f"frame {frame_name or '(top level)'} has a cycle that is not a loop")
    return out


def structure(fetches: list[Tensor], targets: list[Node], feeds: list[Tensor]) -> Structured:
    """The plan for `fetches` and `targets` with `feeds` fed, as structured steps (or Unstructured)."""
    s = _Structurer(fetches, targets, feeds)
    steps = s.structure(s.root)
    s.finish(s.root, steps)
    results = []
    for t in fetches:
        g = s.flow.port_guard(t)
        results.append((s.canonical(t), g if g is NEVER else tuple(sorted(g, key=lambda lit: s.literal_rank(s.root, lit)))))
    return Structured(list(feeds), steps, results, list(fetches), s.nodes, s.predicates, set(s.fed))
