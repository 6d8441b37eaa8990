"""The frame-tagged executor: tagged-token dataflow with dynamic frames.

Every value in flight is (value, is_dead) plus its tag, an `Iteration` of a
`Frame`. The rules (DESIGN.md; paper, Figure 5):

- Switch forwards its data on the port its predicate selects; the other is dead.
- Merge fires on its first live input; it is dead only when all inputs are dead.
- Enter moves a value into iteration 0 of a child frame, created on first use and
  keyed by (parent iteration, frame name); a constant Enter's value is delivered
  to every iteration of the frame, present and future.
- Exit moves a live value to the parent iteration. A dead Exit is dropped, and
  if an Exit never delivered a live value by the time its frame is done, a dead
  token goes to the parent (the whole loop was in an untaken branch).
- NextIteration moves a live value to iteration n+1 (created on demand, at most
  `parallel_iterations` in flight per frame); a dead one ends that path. That is
  how a loop stops: the final iteration's body is dead.
- Any other node computes when all inputs have arrived, unless one is dead, in
  which case its outputs are dead and it does not run.

An untaken cond branch is skipped rather than run dead node by node: as soon as
its predicate's value is known in an iteration (it reaches a Switch on it), one
dead token goes along each edge leaving the branch, the branch is marked skipped
in that iteration, and whatever else arrives for its nodes there is dropped
(exec/branches.py).

An iteration is done when nothing is queued or running in it, it has no live
child frames, and its predecessor is done (iteration 0: all the frame's Enters
have arrived). Done iterations are freed at once, so a loop of a million
iterations runs in constant memory; nothing recurses per iteration.
"""
from __future__ import annotations

import threading
from collections import deque
from queue import SimpleQueue

import numpy as np

from exec import blas, load
from exec.errors import NoProgressError, RunError
from exec.recurrence import BUSY_CORES
from exec.node_kinds import (ASYNC, COND_SWITCH, DIRECT, ENTER, EXIT, LOOP_MERGE, MERGE, MULTI, NEXT, NORMAL,
                             PENDING, SWITCH, TO_GUARDED, TO_LOOP_MERGE, TO_MERGE, TO_PRED)
from exec.plan import Plan

_MISSING = object()
_ready_queue = deque  # the queue of nodes to run; tests replace it to see which nodes ran
_URGENT = object()  # a pool token: look at the urgent jobs


class Frame:
    """One dynamic instance of a loop (for a given parent iteration)."""

    __slots__ = ("name", "parent", "iters", "first", "last", "max_par", "invariants", "enters_arrived",
                 "num_enters", "deferred", "live_exits", "bound")

    def __init__(self, name: str, parent: "Iteration | None", max_par: int, num_enters: int):
        self.name = name
        self.parent = parent
        self.iters: dict[int, Iteration] = {}
        self.first = 0            # earliest iteration not yet done
        self.last = -1            # latest iteration created
        self.max_par = max_par
        self.invariants: list = []  # (enter id, value, dead) of constant Enters
        self.enters_arrived = 0
        self.num_enters = num_enters
        self.deferred: list = []  # NextIteration values waiting for the parallel window
        self.live_exits: set[int] = set()
        # Pending-input templates with the loop constants that arrived so far already
        # filled in; new iterations start from them instead of receiving each constant.
        # Replaced (never mutated) when a constant arrives: older iterations keep theirs.
        self.bound: dict[int, list] = {}


class Iteration:
    """The tag of a value: iteration `n` of `frame`, with its per-node pending inputs."""

    __slots__ = ("frame", "n", "pending", "outstanding", "children", "skipped")

    def __init__(self, frame: Frame, n: int):
        self.frame = frame
        self.n = n
        self.pending: dict[int, list] = {}
        self.outstanding = 0      # items queued or running in this iteration
        self.children: dict[str, Frame] = {}
        self.skipped: set[int] | None = None  # ids of the branches skipped in this iteration


class _Pool:
    """A few worker threads for kernels that release the GIL (BLAS, large arrays).

    Urgent jobs (a loop's recurrence on a busy machine, exec/recurrence.py) go before the queued ones: a worker
    takes the pending urgent jobs first whenever it wakes, and each urgent job also puts a
    token in the queue so that an idle worker wakes for it.
    """

    def __init__(self, size: int):
        self.jobs: SimpleQueue = SimpleQueue()
        self.urgent: deque = deque()
        self.threads = [threading.Thread(target=self._work, daemon=True, name=f"exec-pool-{k}")
                        for k in range(size)]
        for t in self.threads:
            t.start()

    def put_urgent(self, job) -> None:
        self.urgent.append(job)
        self.jobs.put(_URGENT)

    def _work(self) -> None:
        urgent = self.urgent
        while True:
            job = self.jobs.get()
            while urgent:
                try:
                    u = urgent.popleft()
                except IndexError:  # another worker took the last one
                    break
                self._run(*u)
            if job is None:
                return
            if job is not _URGENT:
                self._run(*job)

    @staticmethod
    def _run(done, i, it, f, args) -> None:
        try:
            done.put((i, it, f(*args), None))
        except BaseException as e:  # reported by the scheduler thread
            done.put((i, it, None, e))

    def shutdown(self) -> None:
        for _ in self.threads:
            self.jobs.put(None)


def execute(plan: Plan, feed_values: list, pool: _Pool | None = None) -> list:
    """Runs `plan` once; returns the fetched values (numpy) in fetch order."""
    with blas.single_threaded():  # the pool is the parallelism: see exec/blas.py
        if pool is None or not plan.recurrence:
            return _execute(plan, feed_values, pool, False)
        # where a loop's recurrence runs depends on whether other processes took the cores
        # during this plan's last run (exec/recurrence.py)
        before = load.snapshot()
        try:
            return _execute(plan, feed_values, pool, plan.other_cores < BUSY_CORES)
        finally:
            other = load.other_cores(before, load.snapshot())
            if other is not None:
                plan.other_cores = other


def _execute(plan: Plan, feed_values: list, pool: _Pool | None, inline_recurrence: bool) -> list:
    kind, fn, cons, tmpl, ndata, nin = plan.kind, plan.fn, plan.cons, plan.tmpl, plan.ndata, plan.nin
    frame_info, num_enters, exits = plan.frame_info, plan.num_enters, plan.exits
    bindable, unbound, dead_cons = plan.bindable, plan.unbound, plan.dead_cons
    branches, cond_switches, guards = plan.branches, plan.cond_switches, plan.guards
    results = [_MISSING] * len(plan.fetches)
    root_frame = Frame("", None, 1, 0)
    root = Iteration(root_frame, 0)
    root_frame.iters[0] = root
    ready: deque = _ready_queue()
    append, popleft = ready.append, ready.popleft
    completions: SimpleQueue | None = SimpleQueue() if pool is not None else None
    inflight = 0
    recurrence = plan.recurrence

    def deliver1(dst, slot, mode, out, dead, it) -> int:
        """Hands (out, dead) to input `slot` of `dst` in iteration `it`; returns items queued."""
        if mode >= TO_GUARDED:  # into a skippable branch, or a predicate deciding one (exec/branches.py)
            held = guards.get(dst)
            if held is not None and it.skipped is not None and not it.skipped.isdisjoint(held):
                return 0  # its node is in a branch skipped in this iteration
            if mode == TO_PRED:  # the predicate's value decides now which branches are skipped
                b0, b1 = cond_switches[dst][:2]
                if dead:
                    skip(b0, it)
                    skip(b1, it)
                else:
                    skip(b0 if out else b1, it)
                if slot < 0 or held is not None and it.skipped is not None and not it.skipped.isdisjoint(held):
                    return 0  # an entry that only decides, or a Switch that only feeds the branch skipped now
            mode = PENDING
        if mode == DIRECT:
            append((dst, it, (out,), dead))
            return 1
        if mode == PENDING:
            pend = it.pending
            st = pend.get(dst)
            if st is None:
                st = pend[dst] = tmpl[dst][:]
            st[slot] = out
            if dead:
                st[1] = True
            r = st[0] - 1
            if r:
                st[0] = r
                return 0
            del pend[dst]
            append((dst, it, st[2:2 + ndata[dst]], st[1]))
            return 1
        if mode == TO_LOOP_MERGE:
            append((dst, it, (out, slot), dead))
            return 1
        if mode == TO_MERGE:
            pend = it.pending
            st = pend.get(dst)
            if st is None:
                st = pend[dst] = [nin[dst], False]
            queued = 0
            if not dead and not st[1]:
                st[1] = True
                append((dst, it, (out, slot), False))
                queued = 1
            st[0] -= 1
            if not st[0]:
                del pend[dst]
                if not st[1]:
                    append((dst, it, (None, -1), True))
                    queued = 1
            return queued
        results[dst] = (out, dead)  # TO_FETCH
        return 0

    def skip(b, it) -> None:
        """Skips branch `b` (if any: b >= 0) in iteration `it`, once. What it queues counts as
        outstanding in `it` at once, so that callers need not carry it."""
        if b < 0:
            return
        skipped = it.skipped
        if skipped is None:
            skipped = it.skipped = set()
        elif b in skipped:
            return
        skipped.add(b)
        branch = branches[b]
        pend = it.pending
        for dst in branch.guarded:
            pend.pop(dst, None)  # inputs from outside that arrived before the predicate
        queued = 0
        for dst, slot, mode in branch.exits:
            queued += deliver1(dst, slot, mode, None, True, it)
        for dst, slot, mode, others in branch.shared:
            if skipped.isdisjoint(others):
                queued += deliver1(dst, slot, mode, None, True, it)
        it.outstanding += queued

    def push(entries, out, dead, it) -> None:
        """Delivers a single-output node's value into iteration `it` (maybe another one)."""
        queued = 0
        for dst, slot, mode in entries:
            queued += deliver1(dst, slot, mode, out, dead, it)
        it.outstanding += queued

    def new_iteration(fr: Frame, n: int) -> Iteration:
        it = Iteration(fr, n)
        fr.iters[n] = it
        fr.last = n
        if fr.bound:
            it.pending = {dst: t[:] for dst, t in fr.bound.items()}
        for ei, v, d in fr.invariants:
            entries = unbound[ei]
            if entries:
                push(entries, v, d, it)
        return it

    def bind_invariant(fr: Frame, i, out, dead) -> None:
        bound = dict(fr.bound)
        for dst, slot in bindable[i]:
            t = (bound.get(dst) or tmpl[dst])[:]
            t[slot] = out
            if dead:
                t[1] = True
            t[0] -= 1
            bound[dst] = t
        fr.bound = bound

    def enter(i, it, out, dead):
        name, is_const, par = frame_info[i]
        fr = it.children.get(name)
        if fr is None:
            fr = it.children[name] = Frame(name, it, par, num_enters[name])
            new_iteration(fr, 0)
        fr.enters_arrived += 1
        if is_const:
            fr.invariants.append((i, out, dead))
            for child_it in list(fr.iters.values()):
                push(cons[i], out, dead, child_it)
            if bindable[i]:
                bind_invariant(fr, i, out, dead)
        else:
            push(cons[i], out, dead, fr.iters[0])
        first = fr.iters.get(fr.first)
        if first is not None and not first.outstanding:
            maybe_finish(first)

    def next_iteration(i, it, out):
        fr = it.frame
        n1 = it.n + 1
        nxt = fr.iters.get(n1)
        if nxt is None:
            if n1 - fr.first >= fr.max_par:
                fr.deferred.append((i, out))
                return
            nxt = new_iteration(fr, n1)
        push(cons[i], out, False, nxt)

    def maybe_finish(it: Iteration) -> None:
        """Frees `it` if it is done, then whatever that completes in turn."""
        while True:
            fr = it.frame
            if fr.parent is None or it.outstanding or it.children or it.n != fr.first:
                return
            if it.n == 0 and fr.enters_arrived < fr.num_enters:
                return
            if it.pending:
                raise NoProgressError(_stuck_message(plan, it))
            del fr.iters[it.n]
            fr.first += 1
            if fr.deferred:
                waiting, fr.deferred = fr.deferred, []
                nxt = new_iteration(fr, fr.last + 1)
                for ni, v in waiting:
                    push(cons[ni], v, False, nxt)
            nxt = fr.iters.get(fr.first)
            if nxt is not None:
                it = nxt
                continue
            parent = fr.parent
            del parent.children[fr.name]
            for ei in exits.get(fr.name, ()):
                if ei not in fr.live_exits:
                    push(cons[ei], None, True, parent)
            it = parent

    for i in plan.sources:
        append((i, root, (), False))
    for i, k in plan.feeds:
        append((i, root, (feed_values[k],), False))
    root.outstanding = len(ready)

    error = None
    while True:
        if inflight and (not ready or not completions.empty()):
            i, it, out, exc = completions.get()
            inflight -= 1
            if exc is not None:
                error = (i, it, exc)
                break
            push(cons[i], out, False, it)
            it.outstanding -= 1
            if not it.outstanding and it.frame is not root_frame:
                maybe_finish(it)
            continue
        if not ready:
            break
        i, it, args, dead = popleft()
        k = kind[i]
        queued = 0
        if k == NORMAL:
            if dead:
                out = None
            else:
                try:
                    out = fn[i](*args)
                except Exception as e:
                    error = (i, it, e)
                    break
            # the two common delivery modes inlined: this is the executor's hot path (and an input of a
            # skippable branch, dropped when it is skipped in this iteration: exec/branches.py)
            for dst, slot, mode in cons[i]:
                if mode == DIRECT:
                    append((dst, it, (out,), dead))
                    queued += 1
                elif mode == PENDING or mode == TO_GUARDED and (
                        it.skipped is None or it.skipped.isdisjoint(guards[dst])):
                    pend = it.pending
                    st = pend.get(dst)
                    if st is None:
                        st = pend[dst] = tmpl[dst][:]
                    st[slot] = out
                    if dead:
                        st[1] = True
                    r = st[0] - 1
                    if r:
                        st[0] = r
                    else:
                        del pend[dst]
                        append((dst, it, st[2:2 + ndata[dst]], st[1]))
                        queued += 1
                elif mode != TO_GUARDED:
                    queued += deliver1(dst, slot, mode, out, dead, it)
            # no stale reference here may stop the next write of a Variable whose value this was (or
            # was a control input of a write) from updating it in place (exec/kernels/variables.py)
            out = st = None
        elif k == SWITCH or k == LOOP_MERGE or k == MERGE or k == MULTI or k == COND_SWITCH:
            c0, c1, cc = cons[i]  # consumers of port 0, port 1, control
            if k == COND_SWITCH:  # skips its untaken side; both when the predicate is dead (then so is
                # every Switch on it); usually the predicate's arrival did already (exec/branches.py)
                b0, b1, dead0, dead1 = cond_switches[i]  # dead_p: port p's dead consumers outside its branch
                pred = args[1]  # None only when dead: a live predicate is a bool array
                if pred is None:
                    skip(b0, it)
                    skip(b1, it)
                    groups = ((dead0, None, True), (dead1, None, True), (cc, None, True))
                elif pred:
                    skip(b0, it)
                    groups = ((dead0, None, True), (dead_cons[i][1], None, True) if dead else (c1, args[0], False),
                              (cc, None, dead))
                else:
                    skip(b1, it)
                    groups = ((dead1, None, True), (dead_cons[i][0], None, True) if dead else (c0, args[0], False),
                              (cc, None, dead))
            elif k == SWITCH:
                d0, d1 = dead_cons[i]  # the ports' consumers but Exits: a dead Exit does nothing
                if dead:
                    groups = ((d0, None, True), (d1, None, True), (cc, None, True))
                else:
                    data, pred = args
                    live, other = (c1, d0) if pred else (c0, d1)
                    for dst, slot, mode in other:
                        queued += deliver1(dst, slot, mode, None, True, it)
                    for dst, slot, mode in cc:
                        queued += deliver1(dst, slot, mode, None, False, it)
                    groups = ((live, data, False),)
            elif k == MULTI:
                if dead:
                    groups = ((c0, None, True), (c1, None, True), (cc, None, True)) + tuple(
                        (c, None, True) for c in plan.extra_ports.get(i, ()))
                else:
                    try:
                        outs = fn[i](*args)
                    except Exception as e:
                        error = (i, it, e)
                        break
                    groups = ((c0, outs[0], False), (c1, outs[1], False), (cc, None, False)) + tuple(
                        (c, outs[p], False) for p, c in enumerate(plan.extra_ports.get(i, ()), 2))
            else:
                out, idx = args
                groups = ((c0, out, dead), (c1, np.int32(idx), dead), (cc, None, dead)) if c1 or cc else \
                    ((c0, out, dead),)
            for entries, out, d in groups:
                for dst, slot, mode in entries:
                    if mode == DIRECT:
                        append((dst, it, (out,), d))
                        queued += 1
                    elif mode == PENDING or mode == TO_GUARDED and (
                            it.skipped is None or it.skipped.isdisjoint(guards[dst])):
                        pend = it.pending
                        st = pend.get(dst)
                        if st is None:
                            st = pend[dst] = tmpl[dst][:]
                        st[slot] = out
                        if d:
                            st[1] = True
                        r = st[0] - 1
                        if r:
                            st[0] = r
                        else:
                            del pend[dst]
                            append((dst, it, st[2:2 + ndata[dst]], st[1]))
                            queued += 1
                    elif mode != TO_GUARDED:
                        queued += deliver1(dst, slot, mode, out, d, it)
        elif k == ENTER:
            enter(i, it, args[0], dead)
        elif k == EXIT:
            if not dead:
                it.frame.live_exits.add(i)
                push(cons[i], args[0], False, it.frame.parent)
        elif k == NEXT:
            if not dead:
                next_iteration(i, it, args[0])
        elif k == ASYNC:
            if dead:
                for dst, slot, mode in cons[i]:
                    queued += deliver1(dst, slot, mode, None, True, it)
            elif inline_recurrence and i in recurrence:
                try:
                    out = fn[i](*args)
                except Exception as e:
                    error = (i, it, e)
                    break
                for dst, slot, mode in cons[i]:
                    queued += deliver1(dst, slot, mode, out, False, it)
            else:
                inflight += 1
                if i in recurrence:
                    pool.put_urgent((completions, i, it, fn[i], args))
                else:
                    pool.jobs.put((completions, i, it, fn[i], args))
                continue  # stays outstanding until its completion is processed
        o = it.outstanding + queued - 1
        it.outstanding = o
        if not o and it.frame is not root_frame:
            maybe_finish(it)
    skip = None  # deliver1 and skip call each other: a reference cycle that would outlive the run
    if error is not None:
        # let in-flight pool work drain so no thread touches this run afterwards
        while inflight:
            completions.get()
            inflight -= 1
        i, it, exc = error
        raise _run_error(plan, i, it, exc) from exc
    missing = [k for k, r in enumerate(results) if r is _MISSING]
    if missing:
        raise NoProgressError(_no_progress_message(plan, root, missing))
    out = []
    for k, (value, dead) in enumerate(results):
        if dead:
            t = plan.fetches[k]
            raise RunError(f"fetched tensor {t.name} is dead: it comes from a branch that was not taken",
                           t.node)
        out.append(value)
    return out


# --------------------------------------------------------------------------- error reports

def describe_tag(node, it: Iteration) -> str:
    """'in iteration 3 of the while loop at f.py:10 (frame while), in iteration 0 of ...'"""
    parts = []
    ctx = node.frame
    while it is not None and it.frame.parent is not None:
        desc = ctx.describe() if ctx is not None else f"frame {it.frame.name}"
        parts.append(f"in iteration {it.n} of {desc}")
        it = it.frame.parent
        ctx = ctx.outer.frame if ctx is not None and ctx.outer is not None else None
    return ", ".join(parts)


def _run_error(plan: Plan, i: int, it: Iteration, exc: BaseException) -> RunError:
    node = plan.nodes[i]
    # Exit/Enter nodes' frames differ from their inputs'; the failing node is a kernel node.
    where = describe_tag(node, it)
    msg = f"{type(exc).__name__}: {exc}" if not isinstance(exc, RunError) else str(exc)
    from exec.errors import AssertionFailed
    if isinstance(exc, AssertionFailed):
        msg = f"assertion failed: {exc}"
    return RunError(msg, node, where, exc)


def _stuck_message(plan: Plan, it: Iteration) -> str:
    lines = [f"iteration {it.n} of frame {it.frame.name} finished with nodes still waiting for inputs:"]
    for dst, st in list(it.pending.items())[:10]:
        lines.append("  " + _describe_pending(plan, dst, st))
    return "\n".join(lines)


def _describe_pending(plan: Plan, dst: int, st: list) -> str:
    node = plan.nodes[dst]
    if len(st) == 2:  # a cond Merge
        return f"{node.name} ({node.op}) waiting for {st[0]} more inputs"
    waiting = []
    n_data = plan.ndata[dst]
    for j, v in enumerate(st[2:]):
        if v is None:
            src = node.inputs[j].name if j < n_data else f"^{node.control_inputs[j - n_data].name}"
            waiting.append(src)
    built = f" built at {node.source}" if node.source else ""
    return f"{node.name} ({node.op}{built}) waiting for {', '.join(waiting) or 'inputs'}"


def _no_progress_message(plan: Plan, root: Iteration, missing: list[int]) -> str:
    names = ", ".join(plan.fetches[k].name for k in missing)
    lines = [f"the run cannot make progress: fetches {names} were never produced. Pending nodes:"]
    todo = [root]
    shown = 0
    while todo and shown < 12:
        it = todo.pop()
        for dst, st in it.pending.items():
            tag = f" [frame {it.frame.name} iteration {it.n}]" if it.frame.parent is not None else ""
            lines.append("  " + _describe_pending(plan, dst, st) + tag)
            shown += 1
        for fr in it.children.values():
            todo.extend(fr.iters.values())
    if shown == 0:
        lines.append("  (none: a node the fetches depend on never ran)")
    return "\n".join(lines)
