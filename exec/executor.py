"""The frame-tagged executor: tagged-token dataflow with dynamic frames.

Every value in flight is (value, is_dead) plus its tag, an `Iteration` of a
`FrameInstance`. The rules (docs/design.md, "Tagged-token rules"; paper, Figure 5):

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

How a run is organized (docs/design.md, "The executor"): `execute` makes a `_Run`,
whose scheduler loop (`_Run._loop`) pops `(node, iteration, inputs, dead)` items from
the ready queue and fires each node by its kind; every value then reaches its
consumers through `_Run.deliver`, which queues those that have all their inputs
(their pending-input records: exec/pending.py). Heavy kernels go to the worker pool
(exec/pool.py) and come back through the run's completion queue.
"""
from __future__ import annotations

from collections import deque
from queue import Empty, SimpleQueue

import numpy as np

from exec import blas, load
from exec.errors import AssertionFailed, NoProgressError, RunError, RunInterrupted, run_interrupted
from exec.memory import InFlight, deferring
from exec.node_kinds import (
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
    SWITCH,
    TO_GUARDED,
    TO_LOOP_MERGE,
    TO_MERGE,
    TO_PRED,
)
from exec.pending import DEAD, FIRED, FIRST_SLOT, REMAINING, merge_record
from exec.plan import Plan
from exec.pool import Pool
from exec.recurrence import BUSY_CORES
from exec.rendezvous import Aborted
from graph.frames import parent_frame

_MISSING = object()
_ready_queue = deque  # the queue of nodes to run; tests replace it to see which nodes ran


class FrameInstance:
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

    __slots__ = ("frame", "n", "pending", "outstanding", "children", "skipped", "tag")

    def __init__(self, frame: FrameInstance, n: int):
        self.frame = frame
        self.n = n
        self.pending: dict[int, list] = {}
        self.outstanding = 0      # items queued or running in this iteration
        self.children: dict[str, FrameInstance] = {}
        self.skipped: set[int] | None = None  # ids of the branches skipped in this iteration
        self.tag: str | None = None  # its rendezvous frame tag, made on first use (`_tag`)


def execute(plan: Plan, feed_values: list, pool: Pool | None = None, rendezvous=None) -> list:
    """Runs `plan` once; returns the fetched values (numpy) in fetch order. A plan with Send and
    Recv nodes (one device's partition, exec/multi_device.py) needs the run's `rendezvous`."""
    with blas.single_threaded():  # the pool is the parallelism: see exec/blas.py
        if pool is None or not plan.recurrence:
            return _Run(plan, pool, False, rendezvous).run(feed_values)
        # where a loop's recurrence runs depends on whether other processes took the cores
        # during this plan's last run (exec/recurrence.py)
        before = load.snapshot()
        try:
            return _Run(plan, pool, plan.other_cores < BUSY_CORES, rendezvous).run(feed_values)
        finally:
            other = load.other_cores(before, load.snapshot())
            if other is not None:
                plan.other_cores = other


class _Run:
    """One execution of a plan: the ready queue, the frames and iterations in flight, the results.

    Items in the ready queue are `(node, iteration, inputs, dead)`. Every item queued in an
    iteration, or running on the pool for it, counts in its `outstanding` until the node has
    fired: an iteration with none left may be done (`_maybe_finish`).
    """

    __slots__ = ("plan", "cons", "tmpl", "ndata", "guards", "cond_switches", "ready", "append", "results",
                 "root_frame", "root", "pool", "completions", "inflight", "receiving", "inline_recurrence",
                 "rendezvous", "at")

    def __init__(self, plan: Plan, pool: Pool | None, inline_recurrence: bool, rendezvous=None):
        self.plan = plan
        # the tables `deliver` reads, as attributes of their own: one lookup instead of two per delivery
        self.cons, self.tmpl, self.ndata = plan.cons, plan.tmpl, plan.ndata
        self.guards, self.cond_switches = plan.guards, plan.cond_switches
        self.ready: deque = _ready_queue()
        self.append = self.ready.append
        self.results = [_MISSING] * len(plan.fetches)
        self.root_frame = FrameInstance("", None, 1, 0)
        self.root = Iteration(self.root_frame, 0)
        self.root_frame.iters[0] = self.root
        self.pool = pool
        # pool jobs, and pops whose values a device is still copying back (InFlight), complete here
        self.completions: SimpleQueue = SimpleQueue()
        self.inflight = 0  # pool jobs, InFlight pops and Recvs not yet completed
        self.receiving = 0  # the Recvs of those
        self.at = (None, None)  # (node, iteration) the scheduler fired when a Ctrl-C stopped it
        self.inline_recurrence = inline_recurrence  # run the loops' recurrences here, not on the pool
        # Send and Recv meet there; a Recv's value comes back through `completions`, as a pool job's
        self.rendezvous = rendezvous
        if rendezvous is not None and self.completions is None:
            self.completions = SimpleQueue()
        self.root.tag = ""

    def run(self, feed_values: list) -> list:
        """Runs the plan to the end; returns the fetched values in fetch order."""
        root, append = self.root, self.append
        for i in self.plan.sources:
            append((i, root, (), False))
        for i, k in self.plan.feeds:
            append((i, root, (feed_values[k],), False))
        root.outstanding = len(self.ready)
        try:
            with deferring():
                error = self._loop()
        except KeyboardInterrupt:
            raise self._interrupted() from None
        if error is not None:
            i, it, exc = error
            if isinstance(exc, KeyboardInterrupt):  # another device's part was interrupted: this one stops too
                self.at = (i, it)
                raise self._interrupted() from None
            failure = _run_error(self.plan, i, it, exc)
            if self.rendezvous is not None:  # the other devices stop too; this run's pending Recvs return
                self.rendezvous.abort(failure)
            self._drain()
            raise failure from exc
        return self._fetched()

    def _interrupted(self) -> RunInterrupted:
        """Ctrl-C during `_loop`, as a RunInterrupted saying which node and iteration the scheduler was at
        (`self.at`, set by `_loop` as it is left), once the pool jobs in flight are done (no kernel of this
        run runs after it is raised). A part of a run on several devices aborts the run's rendezvous
        first: that fails its own Recvs in flight (else they would be waited for here, for ever) and
        stops the other devices' parts."""
        i, it = self.at
        where = describe_tag(self.plan.nodes[i], it) if i is not None and it is not None else ""
        interrupted = run_interrupted(where)
        if self.rendezvous is not None:
            self.rendezvous.abort(interrupted)  # a no-op when the run was aborted already
        self._drain()
        return interrupted

    def _drain(self) -> None:
        """Waits for the pool jobs and device copies in flight, so that no thread touches this run
        afterwards. Not for its Recvs: the run's rendezvous was aborted, so they do nothing more,
        and a Ctrl-C in a Send on another thread may have lost the callback of one."""
        kind, get = self.plan.kind, self.completions.get
        jobs = self.inflight - self.receiving
        while jobs > 0:
            if kind[get()[0]] != RECV:
                jobs -= 1

    def _loop(self) -> tuple | None:
        """Fires queued nodes until nothing is left to run. Returns (node, iteration, exception) of
        the first kernel that failed, or None."""
        # This loop runs once per node execution, so the plan's tables and the bound methods it
        # calls are local variables (CPython's cheapest lookup), and the kinds a loop iteration runs
        # (kernels, Switch, Merge, NextIteration) fire inline, most frequent first; the rarer kinds
        # call a method each. That is why it is one long function, the one exception to the
        # packages' 80-line limit: a method per inline kind would add a Python call, and the reloads
        # of these locals, to every node execution, which is most of the executor's own cost
        # (bench/loop_overhead.py).
        plan = self.plan
        kind, fn, cons, dead_cons = plan.kind, plan.fn, plan.cons, plan.dead_cons
        recurrence, inline_recurrence = plan.recurrence, self.inline_recurrence
        root_frame, popleft = self.root_frame, self.ready.popleft
        ready, completions, pool = self.ready, self.completions, self.pool
        deliver, maybe_finish = self.deliver, self._maybe_finish
        comm, rendezvous = plan.comm, self.rendezvous
        take = getattr(rendezvous, "take", None)  # a value already there, without a callback (optional)
        # a part of a run on several devices may wait long for another's value: then Ctrl-C must reach it
        wait = completions.get if rendezvous is None else _polling(completions, rendezvous)
        # each counted once it is registered: a Ctrl-C between would leave a count that nothing completes
        inflight = receiving = 0
        error = None
        i = it = None  # the node and iteration being fired, for a Ctrl-C's message
        try:
            while True:
                if inflight and (not ready or not completions.empty()):
                    got = wait()
                    if got is None:  # the run was aborted, and a value this part waits for will not come
                        error = (i, it, rendezvous.aborted)
                        break
                    i, it, out, exc = got
                    inflight -= 1
                    if kind[i] == RECV:
                        receiving -= 1
                    if exc is not None:
                        if exc is not RECEIVED_DEAD:
                            error = (i, it, exc)
                            break
                        queued = deliver(cons[i], None, True, it)  # a dead token from a Send; first, as below
                        o = it.outstanding + queued - 1
                        it.outstanding = o
                        if not o and it.frame is not root_frame:
                            maybe_finish(it)
                        continue
                    # first: a skip() it makes counts in `it` itself
                    queued = deliver(cons[i], out, False, it) if kind[i] != MULTI else self._deliver_ports(i, out, it)
                    o = it.outstanding + queued - 1
                    it.outstanding = o
                    if not o and it.frame is not root_frame:
                        maybe_finish(it)
                    continue
                if not ready:
                    break
                i, it, args, dead = popleft()
                k = kind[i]
                if k == NORMAL:
                    if dead:
                        out = None
                    else:
                        try:
                            out = fn[i](*args)
                        except Exception as e:
                            error = (i, it, e)
                            break
                        if out.__class__ is InFlight:  # a pop whose value a device is copying back
                            out.notify(completions, i, it)
                            inflight += 1
                            out = None
                            continue  # stays outstanding until its completion is processed
                    queued = deliver(cons[i], out, dead, it)
                    # no stale reference here may stop the next write of a Variable whose value this was (or
                    # was a control input of a write) from updating it in place (exec/kernels/variables.py)
                    out = None
                elif k == SWITCH:
                    d0, d1 = dead_cons[i]  # the ports' consumers but Exits: a dead Exit does nothing
                    control = cons[i][2]
                    if dead:
                        queued = deliver(d0, None, True, it) + deliver(d1, None, True, it)
                        if control:
                            queued += deliver(control, None, True, it)
                    else:
                        live, other = (cons[i][1], d0) if args[1] else (cons[i][0], d1)
                        queued = deliver(other, None, True, it) if other else 0
                        if control:
                            queued += deliver(control, None, False, it)
                        queued += deliver(live, args[0], False, it)
                elif k == LOOP_MERGE or k == MERGE:
                    c0, c1, control = cons[i]
                    queued = deliver(c0, args[0], dead, it)
                    if c1:  # the index of the input it forwarded
                        queued += deliver(c1, np.int32(args[1]), dead, it)
                    if control:
                        queued += deliver(control, None, dead, it)
                elif k == NEXT:
                    queued = 0
                    if rendezvous is not None and rendezvous.aborted is not None:
                        # another device's part failed or was interrupted: this one stops too, here if it
                        # receives nothing (a loop that runs on this device alone)
                        error = (i, it, rendezvous.aborted)
                        break
                    if not dead:
                        # the next iteration exists but for this iteration's first NextIteration
                        nxt = it.frame.iters.get(it.n + 1) or self._successor(i, it, args[0])
                        if nxt is not None:
                            q = deliver(cons[i], args[0], False, nxt)
                            nxt.outstanding += q
                elif k == ENTER:
                    queued = 0
                    self._enter(i, it, args[0], dead)
                elif k == EXIT:
                    queued = 0
                    if not dead:
                        it.frame.live_exits.add(i)
                        self._push(cons[i], args[0], False, it.frame.parent)
                elif k == COND_SWITCH:
                    queued = self._cond_switch(i, it, args, dead)
                elif k == MULTI:
                    if dead:
                        values = None
                    else:
                        try:
                            values = fn[i](*args)
                        except Exception as e:
                            error = (i, it, e)
                            break
                        if values.__class__ is InFlight:
                            values.notify(completions, i, it)
                            inflight += 1
                            values = None
                            continue
                    queued = self._deliver_ports(i, values, it)
                    values = None
                elif k == SEND:  # what it sends is its value in this iteration, or a dead token
                    queued = 0
                    try:
                        rendezvous.send(comm[i] + (it.tag if it.tag is not None else _tag(it)), args[0], dead)
                    except Exception as e:
                        error = (i, it, e)
                        break
                elif k == RECV:  # asynchronous: the value comes back through `completions`, unless it is there
                    key = comm[i] + (it.tag if it.tag is not None else _tag(it))
                    got = take(key) if take is not None else None
                    if got is None:
                        rendezvous.recv(key, _on_received(completions, i, it))
                        inflight += 1
                        receiving += 1
                        continue  # stays outstanding until its completion is processed
                    queued = deliver(cons[i], got[0], got[1], it)
                else:  # ASYNC: a heavy kernel, for the pool
                    if dead:
                        queued = deliver(cons[i], None, True, it)
                    elif inline_recurrence and i in recurrence:  # run here on a quiet machine (exec/recurrence.py)
                        try:
                            out = fn[i](*args)
                        except Exception as e:
                            error = (i, it, e)
                            break
                        queued = deliver(cons[i], out, False, it)
                        out = None
                    else:
                        job = (completions, i, it, fn[i], args)
                        if i in recurrence:
                            pool.put_urgent(job)
                        else:
                            pool.put(job)
                        inflight += 1
                        continue  # stays outstanding until its completion is processed
                o = it.outstanding + queued - 1
                it.outstanding = o
                if not o and it.frame is not root_frame:
                    maybe_finish(it)
        except KeyboardInterrupt:
            self.inflight, self.receiving, self.at = inflight, receiving, (i, it)
            raise
        self.inflight, self.receiving = inflight, receiving
        return error

    def deliver(self, entries, out, dead: bool, it: Iteration) -> int:
        """Hands (out, dead) to each consumer `(dst, slot, mode)` of `entries` in iteration `it`;
        returns how many items that queued in `it`. What a skipped branch queues (`skip`) is
        counted in `it` already."""
        queued = 0
        for dst, slot, mode in entries:
            if mode == DIRECT:
                self.append((dst, it, (out,), dead))
                queued += 1
                continue
            if mode != PENDING:
                if mode == TO_LOOP_MERGE:
                    self.append((dst, it, (out, slot), dead))
                    queued += 1
                    continue
                if mode == TO_GUARDED:  # into a skippable branch (exec/branches.py)
                    skipped = it.skipped
                    if skipped is not None and not skipped.isdisjoint(self.guards[dst]):
                        continue  # its node is in a branch skipped in this iteration
                    # else as PENDING, below
                elif mode == TO_PRED:  # a predicate that decides which branch is skipped
                    if not self._decide(dst, slot, out, dead, it):
                        continue
                    # else as PENDING, below
                elif mode == TO_MERGE:
                    queued += self._to_merge(dst, slot, out, dead, it)
                    continue
                else:  # TO_FETCH
                    self.results[dst] = (out, dead)
                    continue
            pend = it.pending
            st = pend.get(dst)
            if st is None:
                st = pend[dst] = self.tmpl[dst][:]
            st[slot] = out
            if dead:
                st[DEAD] = True
            remaining = st[REMAINING] - 1
            if remaining:
                st[REMAINING] = remaining
            else:
                del pend[dst]
                self.append((dst, it, st[FIRST_SLOT:FIRST_SLOT + self.ndata[dst]], st[DEAD]))
                queued += 1
        return queued

    def _to_merge(self, dst: int, slot: int, out, dead: bool, it: Iteration) -> int:
        """Input `slot` of cond Merge `dst`: it fires on the first live input, and dead once all
        its inputs arrived dead. Returns the items queued."""
        pend = it.pending
        st = pend.get(dst)
        if st is None:
            st = pend[dst] = merge_record(self.plan.nin[dst])
        queued = 0
        if not dead and not st[FIRED]:
            st[FIRED] = True
            self.append((dst, it, (out, slot), False))
            queued = 1
        st[REMAINING] -= 1
        if not st[REMAINING]:
            del pend[dst]
            if not st[FIRED]:
                self.append((dst, it, (None, -1), True))
                queued = 1
        return queued

    def _decide(self, switch: int, slot: int, pred, dead: bool, it: Iteration) -> bool:
        """The predicate of COND_SWITCH `switch` arrived in `it`: skips the branch it rules out
        (both when it is dead). Returns whether the Switch still takes the value: not for an entry
        that only decides (slot < 0), nor when the Switch is in a branch skipped in `it` (then
        nothing is decided), nor when it only feeds the branch skipped now."""
        held = self.guards.get(switch)
        if held is not None and it.skipped is not None and not it.skipped.isdisjoint(held):
            return False
        b0, b1 = self.cond_switches[switch][:2]
        if dead:
            self.skip(b0, it)
            self.skip(b1, it)
        else:
            self.skip(b0 if pred else b1, it)
        if slot < 0:
            return False
        return held is None or it.skipped is None or it.skipped.isdisjoint(held)

    def _cond_switch(self, i: int, it: Iteration, args: tuple, dead: bool) -> int:
        """COND_SWITCH `i` fires: skips its untaken side (both when the predicate is dead: then so is
        every Switch on it; usually the predicate's arrival did already) and delivers its outputs.
        Returns the items queued."""
        b0, b1, dead0, dead1 = self.cond_switches[i]  # dead_p: port p's dead consumers outside its branch
        c0, c1, control = self.cons[i]
        pred = args[1]  # None only when dead: a live predicate is a bool array
        deliver = self.deliver
        if pred is None:
            self.skip(b0, it)
            self.skip(b1, it)
            return deliver(dead0, None, True, it) + deliver(dead1, None, True, it) + deliver(control, None, True, it)
        if pred:
            self.skip(b0, it)
            untaken, taken, port = dead0, c1, 1
        else:
            self.skip(b1, it)
            untaken, taken, port = dead1, c0, 0
        queued = deliver(untaken, None, True, it) if untaken else 0
        if dead:
            queued += deliver(self.plan.dead_cons[i][port], None, True, it)
        else:
            queued += deliver(taken, args[0], False, it)
        if control:
            queued += deliver(control, None, dead, it)
        return queued

    def _deliver_ports(self, i: int, values: tuple | None, it: Iteration) -> int:
        """Delivers a MULTI node's output `values`, port by port; all dead when `values` is None.
        Returns the items queued."""
        c0, c1, control = self.cons[i]
        ports = (c0, c1, *self.plan.extra_ports.get(i, ()))
        dead = values is None
        queued = 0
        for p, entries in enumerate(ports):
            queued += self.deliver(entries, None if dead else values[p], dead, it)
            if p == 1:
                queued += self.deliver(control, None, dead, it)
        return queued

    def skip(self, b: int, it: Iteration) -> None:
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
        branch = self.plan.branches[b]
        pend = it.pending
        for dst in branch.guarded:
            pend.pop(dst, None)  # inputs from outside that arrived before the predicate
        queued = self.deliver(branch.exits, None, True, it)
        for dst, slot, mode, others in branch.shared:
            # checked one at a time: a dead token sent just before may have skipped another branch
            if skipped.isdisjoint(others):
                queued += self.deliver(((dst, slot, mode),), None, True, it)
        it.outstanding += queued

    def _push(self, entries, out, dead: bool, it: Iteration) -> None:
        """Delivers a value into iteration `it` from outside the main loop's bookkeeping (another
        iteration, a new one, a frame that finished): counts what it queued there."""
        queued = self.deliver(entries, out, dead, it)
        it.outstanding += queued

    def _enter(self, i: int, it: Iteration, out, dead: bool) -> None:
        """Enter `i` fires in `it`: its value goes to iteration 0 of the child frame (a loop
        constant's to every iteration of it, present and future)."""
        plan = self.plan
        name, is_const, par = plan.frame_info[i]
        fr = it.children.get(name)
        if fr is None:
            fr = it.children[name] = FrameInstance(name, it, par, plan.num_enters[name])
            self._new_iteration(fr, 0)
        fr.enters_arrived += 1
        if is_const:
            fr.invariants.append((i, out, dead))
            for child_it in list(fr.iters.values()):
                self._push(plan.cons[i], out, dead, child_it)
            if plan.bindable[i]:
                self._bind_invariant(fr, i, out, dead)
        else:
            self._push(plan.cons[i], out, dead, fr.iters[0])
        first = fr.iters.get(fr.first)
        if first is not None and not first.outstanding:
            self._maybe_finish(first)

    def _bind_invariant(self, fr: FrameInstance, i: int, out, dead: bool) -> None:
        """Writes loop constant `i` into the frame's pending-record templates (FrameInstance.bound)."""
        bound = dict(fr.bound)
        tmpl = self.tmpl
        for dst, slot in self.plan.bindable[i]:
            t = (bound.get(dst) or tmpl[dst])[:]
            t[slot] = out
            if dead:
                t[DEAD] = True
            t[REMAINING] -= 1
            bound[dst] = t
        fr.bound = bound

    def _successor(self, i: int, it: Iteration, out) -> Iteration | None:
        """Creates the iteration after `it`, for NextIteration `i` with value `out`; or, while it
        would be beyond the parallel window, keeps the value in the frame and returns None."""
        fr = it.frame
        n1 = it.n + 1
        if n1 - fr.first >= fr.max_par:
            fr.deferred.append((i, out))
            return None
        return self._new_iteration(fr, n1)

    def _new_iteration(self, fr: FrameInstance, n: int) -> Iteration:
        """Iteration `n` of `fr`, holding the loop constants that arrived so far."""
        it = Iteration(fr, n)
        fr.iters[n] = it
        fr.last = n
        if fr.bound:
            it.pending = {dst: t[:] for dst, t in fr.bound.items()}
        unbound = self.plan.unbound
        for ei, v, d in fr.invariants:
            entries = unbound[ei]
            if entries:
                self._push(entries, v, d, it)
        return it

    def _maybe_finish(self, it: Iteration) -> None:
        """Frees `it` if it is done, then whatever that completes in turn."""
        cons, exits = self.cons, self.plan.exits
        while True:
            fr = it.frame
            if fr.parent is None or it.outstanding or it.children or it.n != fr.first:
                return
            if it.n == 0 and fr.enters_arrived < fr.num_enters:
                return
            if it.pending:
                raise NoProgressError(_stuck_message(self.plan, it))
            del fr.iters[it.n]
            fr.first += 1
            if fr.deferred:
                waiting, fr.deferred = fr.deferred, []
                nxt = self._new_iteration(fr, fr.last + 1)
                for ni, v in waiting:
                    self._push(cons[ni], v, False, nxt)
            nxt = fr.iters.get(fr.first)
            if nxt is not None:
                it = nxt
                continue
            parent = fr.parent
            del parent.children[fr.name]
            for ei in exits.get(fr.name, ()):
                if ei not in fr.live_exits:
                    self._push(cons[ei], None, True, parent)
            it = parent

    def _fetched(self) -> list:
        """The fetched values in fetch order; every one must have been produced, live."""
        plan = self.plan
        missing = [k for k, r in enumerate(self.results) if r is _MISSING]
        if missing:
            raise NoProgressError(_no_progress_message(plan, self.root, missing))
        out = []
        for k, (value, dead) in enumerate(self.results):
            if dead:
                t = plan.fetches[k]
                raise RunError(f"fetched {t.describe()} is dead: it comes from a branch that was not taken",
                               t.node)
            out.append(value)
        return out


# --------------------------------------------------------------------------- Send and Recv

# how often a part of a run on several devices that waits for a value looks for a Ctrl-C (seconds)
_POLL_S = 0.05


def _polling(completions: SimpleQueue, rendezvous):
    """`completions.get` for a part of a run on several devices, which may wait long for another's value.
    It wakes every `_POLL_S`: a Ctrl-C that `_thread.interrupt_main` gives (as IDEs and the tests do; no
    signal, so no blocked wait wakes) is raised then, and a wait for a completion that an aborted run
    will never give (a Ctrl-C in another thread's Send may lose a callback) ends, returning None. A
    timed wait's only way to say that it timed out is `Empty`."""
    get = completions.get

    def wait():
        while True:
            try:
                return get(timeout=_POLL_S)
            except Empty:
                if rendezvous.aborted is not None:
                    return None
    return wait


RECEIVED_DEAD = object()  # a completion's "exception" that says: the Recv got a dead token


def _on_received(completions: SimpleQueue, i: int, it: Iteration):
    """Recv `i`'s rendezvous callback in iteration `it`: queues its value (or a dead token, or the
    error of an aborted run) as a completion, from whichever thread calls it."""
    def received(value, is_dead: bool) -> None:
        if not is_dead:
            completions.put((i, it, value, None))
        elif value.__class__ is Aborted:
            completions.put((i, it, None, value.error))
        else:
            completions.put((i, it, None, RECEIVED_DEAD))
    return received


def _tag(it: Iteration) -> str:
    """The rendezvous frame tag of `it` (exec/rendezvous.py: `frame_tag`), cached on it."""
    if it.tag is None:
        parent = it.frame.parent
        outer = parent.tag if parent.tag is not None else _tag(parent)
        own = f"{it.frame.name}@{it.n}"
        it.tag = f"{outer}|{own}" if outer else own
    return it.tag


# --------------------------------------------------------------------------- error reports

def describe_tag(node, it: Iteration) -> str:
    """'in iteration 3 of the while loop at f.py:10 (frame while), in iteration 0 of ...'"""
    parts = []
    ctx = node.frame
    while it is not None and it.frame.parent is not None:
        desc = ctx.describe() if ctx is not None else f"frame {it.frame.name}"
        parts.append(f"in iteration {it.n} of {desc}")
        it = it.frame.parent
        ctx = parent_frame(ctx)
    return ", ".join(parts)


def _run_error(plan: Plan, i: int, it: Iteration, exc: BaseException) -> RunError:
    node = plan.nodes[i]
    # Exit/Enter nodes' frames differ from their inputs'; the failing node is a kernel node.
    where = describe_tag(node, it)
    msg = f"{type(exc).__name__}: {exc}" if not isinstance(exc, RunError) else str(exc)
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
    if plan.kind[dst] == MERGE:  # its record counts inputs only
        return f"{node.name} ({node.op}) waiting for {st[0]} more inputs"
    waiting = []
    n_data = plan.ndata[dst]
    for j, v in enumerate(st[FIRST_SLOT:]):
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
