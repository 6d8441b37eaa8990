"""Untaken branches: the nodes a Switch predicate proves dead, and the edges that leave them.

Per the tagged-token rules (docs/design.md, "Tagged-token rules"), every node of an untaken cond
branch runs dead, one by one: about a microsecond per node, paid on every run that does not take
the branch. But once a predicate's value is known in an iteration, so is a whole set of nodes
that can only be dead there: those *gated* by the other port. A node is gated by port p of
predicate P when one of its inputs comes from port p of a Switch on P or from another gated node
(a Merge needs all of its inputs gated: it is live when any input is; a loop's Merge all of its
entry values). The executor skips such a branch: in that iteration it marks it skipped, sends
one dead token along each edge that leaves it (its *exits*: what its dead nodes would have sent
out, mostly to the cond's Merges) and drops whatever else arrives for its nodes (the *guarded*
ones, with inputs from outside: effect-ordering control edges, loop constants). The cost is
O(edges leaving the branch), not O(nodes in it).

The decision is taken as early as possible: when the predicate reaches the first Switch on it
(TO_PRED edges), so that Switches that only feed the skipped branch (a captured value each) never
run either; else when a Switch on it runs (a COND_SWITCH).

The analysis is structural, on the plan's edges, so it covers cond branches, conds nested in
branches and loops, loops nested in branches, and gradient conds, whose branches share nodes
with the forward ones (`_branches`, `_without_conflicts`). A branch whose shape the executor
cannot skip keeps the dead propagation node by node (see `_analyze`); so do loop bodies.
"""
from __future__ import annotations

from dataclasses import dataclass

from exec.node_kinds import (
    EXIT,
    LOOP_MERGE,
    MERGE,
    NEXT,
    PENDING,
    SINGLE_OUTPUT_KINDS,
    SWITCH,
    TO_FETCH,
    TO_GUARDED,
    TO_PRED,
)
from exec.pending import slot_of
from graph.control_structure import ControlStructure
from graph.op_names import LOOP_COND, RECV, SEND

# A dead Send must still tell its Recv (docs/design.md, "Tagged-token rules"): never skip a branch holding one.
NEVER_SKIPPED_OPS = frozenset({SEND, RECV})
# False: plans built from now on run untaken branches dead, node by node (to compare against)
SKIP_UNTAKEN = True
# where a Switch's predicate (its data input 1) is written in its pending-input record
_PRED_SLOT = slot_of(1)


@dataclass(frozen=True, slots=True)
class Branch:
    exits: tuple    # consumer entries (dst, slot, mode) leaving the branch: one dead token each when skipped
    shared: tuple   # (dst, slot, mode, others): exits from nodes that other branches also hold; sent
                    #   unless one of those was skipped first (then it was sent, or is not to be)
    guarded: tuple  # branch nodes that may hold inputs when it is skipped: dropped then


@dataclass
class Skipping:
    branches: list  # branch id -> Branch
    switches: dict  # Switch id -> (branch id of port 0, of port 1 (-1: not skippable), the consumers
                    #   of port 0 that get a dead token from it (outside its branch), same for port 1)
    guards: dict    # node with a TO_GUARDED or TO_PRED input -> ids of the branches holding it


@dataclass(slots=True)
class _Candidate:
    """Port `port` of the Switches on predicate `pred` (a (node, port) output), as `_analyze` found it."""
    pred: tuple
    switches: list
    port: int
    gated: set
    exits: list     # consumer entries leaving the branch
    sources: list   # the node each exit leaves from
    guarded: set
    entries: set    # (dst, slot) of the edges into the branch from outside


class _Edges:
    """The plan's edges, both ways, and its frames (the shared analysis, graph/control_structure.py)."""

    def __init__(self, plan, flow: ControlStructure):
        self.flow = flow
        self.lists = [_entry_lists(plan, i) for i in range(len(plan.nodes))]
        self.succ = [[(port, e[0]) for port, es in ls for e in es if e[2] != TO_FETCH] for ls in self.lists]
        self.incoming: list[list] = [[] for _ in plan.nodes]
        for src, ls in enumerate(self.lists):
            for port, entries in ls:
                for e in entries:
                    if e[2] != TO_FETCH:
                        self.incoming[e[0]].append((src, port, e))
        # a Merge is live when any input is: gated only when all are; a loop's, all its entry values
        self.need = {}
        for i, kd in enumerate(plan.kind):
            if kd == MERGE:
                self.need[i] = len(self.incoming[i])
            elif kd == LOOP_MERGE:
                self.need[i] = sum(1 for src, _, _ in self.incoming[i] if plan.kind[src] != NEXT)
        self.members: dict = {}
        for i, n in enumerate(plan.nodes):
            self.members.setdefault(flow.frame(n), []).append(i)


def plan_skipping(plan, flow: ControlStructure) -> Skipping:
    """Finds the skippable branches of `plan` and marks the edges into them from outside (mode
    TO_GUARDED: dropped in an iteration that skips a branch holding their node) and the edges
    that carry a skipping Switch's predicate (TO_PRED: its value decides at once which branch is
    skipped, before the Switches run; Switches that only feed that branch then never run). `flow` is the
    frames of the plan's nodes (graph/control_structure.py)."""
    if not SKIP_UNTAKEN:
        return Skipping([], {}, {})
    nodes, kind = plan.nodes, plan.kind
    if flow.problems:
        return Skipping([], {}, {})  # a plan the frame rules do not hold for runs dead nodes one by one
    edges = _Edges(plan, flow)
    groups: dict[tuple, list[int]] = {}
    for s, kd in enumerate(kind):
        # A loop's Switches are left alone: skipping its body in the last iteration would save one
        # iteration per loop and cost the skipping Switch's extra work in every iteration.
        if kd == SWITCH and nodes[s].inputs[1].node.op != LOOP_COND:
            pred = [(src, port) for src, port, e in edges.incoming[s] if e[1] == _PRED_SLOT]
            if len(pred) == 1:
                groups.setdefault(pred[0], []).append(s)
    found = []
    for pred, switches in groups.items():
        frame = flow.frame(nodes[switches[0]])
        if all(flow.frame(nodes[s]) is frame for s in switches):
            for p in (0, 1):
                c = _analyze(plan, edges, switches, p, frame)
                if c is not None:
                    c.pred = pred
                    found.append(c)
    return _wire(plan, edges, _without_conflicts(found))


def _without_conflicts(found: list) -> list:
    """Drops a branch whose exits reach a Merge inside another branch it is not nested in. That
    branch could be skipped after the Merge had all its inputs from this one's exits and ran (dead),
    and send the Merge's exits again. When this branch lies inside the other (its Switches do), it
    skips only where the other was taken."""
    holders: dict[int, list[int]] = {}
    for ci, c in enumerate(found):
        for x in c.gated:
            holders.setdefault(x, []).append(ci)
    keep = []
    for ci, c in enumerate(found):
        sw = set(c.switches)
        if not any(cj != ci and not sw <= found[cj].gated
                   for e in c.exits if e[2] != TO_FETCH for cj in holders.get(e[0], ())):
            keep.append(c)
    return keep


def _wire(plan, edges: _Edges, found: list) -> Skipping:
    """Branch ids, edge modes and the executor's tables for the skippable branches `found`."""
    modes: dict[tuple, int] = {}  # (dst, slot) -> new mode
    owned, by_group = [], {}
    for b, c in enumerate(found):
        by_group.setdefault(c.pred, (c.switches, [(-1, set()), (-1, set())]))[1][c.port] = (b, c.gated)
        # a Switch that only feeds this branch does nothing once it is skipped: it need not run
        own = {s for s in c.switches if _only_feeds(plan, s, c.port, c.gated)}
        for s in own:
            modes.update(((e[0], e[1]), TO_GUARDED) for _, _, e in edges.incoming[s])
        modes.update((slot, TO_GUARDED) for slot in c.entries)
        owned.append(own)
    if modes:
        for i in range(len(plan.nodes)):
            for es in (*(es for _, es in edges.lists[i]), plan.unbound.get(i), *plan.dead_cons.get(i, ())):
                if es:
                    _remode(es, modes)
        for c in found:
            _remode(c.exits, modes)
    # Switch -> predicates of the branches its predicate input enters from outside
    pred_entries: dict[int, set] = {}
    for c in found:
        for dst, slot in c.entries:
            if slot == _PRED_SLOT:
                pred_entries.setdefault(dst, set()).add(c.pred)
    for pred, (switches, _) in by_group.items():
        # Not when the predicate comes from outside a branch holding the Switches: that branch may
        # be skipped after this decision. (A Switch that fires decides only inside a taken branch.)
        if all(pred_entries.get(s, {pred}) == {pred} for s in switches):
            for dst in _decide_early(plan, edges, pred, switches):
                modes.setdefault((dst, _PRED_SLOT), TO_PRED)  # for the guards below
    out = Skipping(_branches(found, owned), {}, {})
    for switches, ports in by_group.values():
        for s in switches:
            dead = [[e for e in plan.dead_cons[s][p] if b < 0 or e[2] == TO_FETCH or e[0] not in g]
                    for p, (b, g) in enumerate(ports)]
            out.switches[s] = (ports[0][0], ports[1][0], *dead)
    holds = [c.gated | own for c, own in zip(found, owned, strict=True)]
    for dst, _ in modes:
        if dst not in out.guards:
            held_by = frozenset(b for b, h in enumerate(holds) if dst in h)
            if held_by:
                out.guards[dst] = held_by
    return out


def _decide_early(plan, edges: _Edges, pred: tuple, switches: list) -> list[int]:
    """Makes the predicate's first delivery to a Switch on it decide, before it reaches the others:
    in each list that delivers it (a loop constant's also goes to each new iteration, a Switch's dead
    output has a list of its own). Returns the Switches it reaches that way."""
    src, port = pred
    on_pred = set(switches)
    own_lists = [next(es for q, es in edges.lists[src] if q == port), plan.unbound.get(src)]
    if src in plan.dead_cons and port >= 0:
        own_lists.append(plan.dead_cons[src][port])
    first_of = []
    for es in own_lists:
        first = next((j for j, e in enumerate(es or ()) if e[2] != TO_FETCH and e[0] in on_pred and e[1] == _PRED_SLOT),
                     None)
        if first is not None:
            es[first] = (es[first][0], _PRED_SLOT, TO_PRED)
            first_of.append(es[first][0])
    bound = plan.unbound.get(src)
    if bound is not None and not any(e[2] == TO_PRED for e in bound):
        # a loop constant bound into the Switches' pending inputs (plan.bindable) reaches no Switch
        # as an iteration starts: an entry that only decides (slot -1) does
        bound.append((switches[0], -1, TO_PRED))
    return first_of


def _branches(found: list, owned: list) -> list[Branch]:
    """Branches of different predicates can hold the same nodes (a gradient cond's branch uses the
    forward branch's values): when both skip in one iteration each exit goes once. A node that one
    sends a dead token to may be held by another, skipped later: that one drops it."""
    holders: dict[int, list[int]] = {}
    for b, c in enumerate(found):
        for x in c.gated:
            holders.setdefault(x, []).append(b)
    drops = [c.guarded | own for c, own in zip(found, owned, strict=True)]
    split = []
    for b, c in enumerate(found):
        plain, shared = [], []
        for e, x in zip(c.exits, c.sources, strict=True):
            others = frozenset(holders[x]) - {b}
            if others:
                shared.append((*e, others))
            else:
                plain.append(e)
            for b2 in holders.get(e[0], ()) if e[2] != TO_FETCH else ():
                drops[b2].add(e[0])
        split.append((plain, shared))
    return [Branch(tuple(plain), tuple(shared), tuple(sorted(d))) for (plain, shared), d in zip(split, drops)]


def _only_feeds(plan, s, p, gated) -> bool:
    c = plan.cons[s]
    return not c[1 - p] and not c[2] and all(e[2] != TO_FETCH and e[0] in gated for e in c[p])


def _remode(entries: list, modes: dict) -> None:
    for j, (dst, slot, mode) in enumerate(entries):
        if mode == PENDING:
            new = modes.get((dst, slot))
            if new is not None:
                entries[j] = (dst, slot, new)


def _entry_lists(plan, i) -> list[tuple[int, list]]:
    """(port, consumer entries) of node i; port -1 is the control output."""
    c = plan.cons[i]
    if plan.kind[i] in SINGLE_OUTPUT_KINDS:
        return [(0, c)]
    return [(0, c[0]), (1, c[1]), (-1, c[2])] + [(p, e) for p, e in enumerate(plan.extra_ports.get(i, ()), 2)]


def _analyze(plan, edges: _Edges, switches, p, frame) -> _Candidate | None:
    """Port p of `switches` as a branch, or None when it is not skippable: a node of it lies outside
    the Switches' frame and the loops nested in that frame, a loop it enters has nodes outside it,
    an edge from outside reaches a node that does not wait for all its inputs or that lives in
    another frame, or it holds an op that must run even when dead."""
    nodes, kind, flow = plan.nodes, plan.kind, edges.flow
    succ, incoming, need = edges.succ, edges.incoming, edges.need
    own = set(switches)
    gated: set[int] = set()
    hits: dict[int, int] = {}
    work: list[int] = []

    def reach(d):
        if d in gated:
            return
        n = need.get(d)
        if n is not None:
            h = hits[d] = hits.get(d, 0) + 1
            if h < n:
                return
        gated.add(d)
        work.append(d)

    for s in switches:
        for e in plan.cons[s][p]:
            if e[2] != TO_FETCH:
                reach(e[0])
    while work:
        x = work.pop()
        # a NextIteration feeds the next iteration; a loop's Exit the frame around the loop
        if kind[x] == NEXT or kind[x] == EXIT and flow.exit_frame(nodes[x]) is frame:
            continue
        # A Switch on the predicate can itself be gated (Switch(Switch(x, p):1, p): a value captured
        # twice); its port p edges were counted above
        skip_port = p if x in own else None
        for port, d in succ[x]:
            if port != skip_port:
                reach(d)
    if not gated:
        return None
    exits, sources, guarded, entries, nested = [], [], set(), set(), set()
    for x in gated:
        n = nodes[x]
        if n.op in NEVER_SKIPPED_OPS:
            return None
        fx = flow.frame(n)
        if kind[x] == EXIT and flow.exit_frame(n) is frame or kind[x] == NEXT and fx is frame:
            pass  # dead, it would do nothing
        elif fx is frame and kind[x] != LOOP_MERGE:
            lists = _entry_lists(plan, x)
            if kind[x] == SWITCH:  # as when it runs dead: a dead Exit does nothing (plan.dead_cons)
                lists = [(0, plan.dead_cons[x][0]), (1, plan.dead_cons[x][1])] + lists[2:]
            for _, es in lists:
                for e in es:
                    if e[2] == TO_FETCH or e[0] not in gated:
                        exits.append(e)
                        sources.append(x)
        elif fx.is_inside(frame):
            nested.add(fx)
            if any(e[2] == TO_FETCH or e[0] not in gated for _, es in _entry_lists(plan, x) for e in es):
                return None
        else:
            return None
        for src, port, e in incoming[x]:
            if src in gated or src in own and port == p:
                continue
            if e[2] != PENDING or flow.input_frame(n) is not frame:
                return None
            guarded.add(x)
            entries.add((e[0], e[1]))
    if any(i not in gated for fr in nested for i in edges.members.get(fr, ())):
        return None  # a loop partly outside the branch would still run its part
    return _Candidate(None, switches, p, gated, exits, sources, guarded, entries)
