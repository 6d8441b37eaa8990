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

from exec.errors import NoProgressError, RunError
from exec.plan import (ASYNC, DIRECT, ENTER, EXIT, FEED, LOOP_MERGE, MERGE, MULTI, NEXT, NORMAL, PENDING,
                       SWITCH, TO_FETCH, TO_LOOP_MERGE, TO_MERGE, Plan)

_MISSING = object()


class Frame:
    """One dynamic instance of a loop (for a given parent iteration)."""

    __slots__ = ("name", "parent", "iters", "first", "last", "max_par", "invariants", "enters_arrived",
                 "num_enters", "deferred", "live_exits")

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


class Iteration:
    """The tag of a value: iteration `n` of `frame`, with its per-node pending inputs."""

    __slots__ = ("frame", "n", "pending", "outstanding", "children")

    def __init__(self, frame: Frame, n: int):
        self.frame = frame
        self.n = n
        self.pending: dict[int, list] = {}
        self.outstanding = 0      # items queued or running in this iteration
        self.children: dict[str, Frame] = {}


class _Pool:
    """A few worker threads for kernels that release the GIL (BLAS, large arrays)."""

    def __init__(self, size: int):
        self.jobs: SimpleQueue = SimpleQueue()
        self.threads = [threading.Thread(target=self._work, daemon=True, name=f"exec-pool-{k}")
                        for k in range(size)]
        for t in self.threads:
            t.start()

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            done, i, it, f, args = job
            try:
                done.put((i, it, f(*args), None))
            except BaseException as e:  # reported by the scheduler thread
                done.put((i, it, None, e))

    def shutdown(self) -> None:
        for _ in self.threads:
            self.jobs.put(None)


def execute(plan: Plan, feed_values: list, pool: _Pool | None = None) -> list:
    """Runs `plan` once; returns the fetched values (numpy) in fetch order."""
    kind, fn, cons, tmpl, ndata, nin = plan.kind, plan.fn, plan.cons, plan.tmpl, plan.ndata, plan.nin
    frame_info, num_enters, exits = plan.frame_info, plan.num_enters, plan.exits
    results = [_MISSING] * len(plan.fetches)
    root_frame = Frame("", None, 1, 0)
    root = Iteration(root_frame, 0)
    root_frame.iters[0] = root
    ready: deque = deque()
    append, popleft = ready.append, ready.popleft
    completions: SimpleQueue | None = SimpleQueue() if pool is not None else None
    inflight = 0

    def deliver(entries, out, dead, it):
        """Hands (out, dead) to each consumer entry (dst, slot, mode) in iteration `it`."""
        for dst, slot, mode in entries:
            if mode == DIRECT:
                it.outstanding += 1
                append((dst, it, (out,), dead))
            elif mode == PENDING:
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
                    it.outstanding += 1
                    append((dst, it, st[2:2 + ndata[dst]], st[1]))
            else:
                deliver_special(dst, slot, mode, out, dead, it)

    def deliver_special(dst, slot, mode, out, dead, it):
        if mode == TO_LOOP_MERGE:
            it.outstanding += 1
            append((dst, it, (out, slot), dead))
        elif mode == TO_MERGE:
            pend = it.pending
            st = pend.get(dst)
            if st is None:
                st = pend[dst] = [nin[dst], False]
            if not dead and not st[1]:
                st[1] = True
                it.outstanding += 1
                append((dst, it, (out, slot), False))
            st[0] -= 1
            if not st[0]:
                del pend[dst]
                if not st[1]:
                    it.outstanding += 1
                    append((dst, it, (None, -1), True))
        elif mode == TO_FETCH:
            results[dst] = (out, dead)

    def deliver_ports(entries, outs, port_dead, ctrl_dead, it):
        for port, dst, slot, mode in entries:
            if port < 0:
                out, dead = None, ctrl_dead
            else:
                out, dead = outs[port], port_dead[port]
            deliver(((dst, slot, mode),), out, dead, it)

    def new_iteration(fr: Frame, n: int) -> Iteration:
        it = Iteration(fr, n)
        fr.iters[n] = it
        fr.last = n
        for ei, v, d in fr.invariants:
            deliver(cons[ei], v, d, it)
        return it

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
                deliver(cons[i], out, dead, child_it)
        else:
            deliver(cons[i], out, dead, fr.iters[0])
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
        deliver(cons[i], out, False, nxt)

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
                    deliver(cons[ni], v, False, nxt)
            nxt = fr.iters.get(fr.first)
            if nxt is not None:
                it = nxt
                continue
            parent = fr.parent
            del parent.children[fr.name]
            for ei in exits.get(fr.name, ()):
                if ei not in fr.live_exits:
                    deliver(cons[ei], None, True, parent)
            it = parent

    def finish_item(it):
        it.outstanding -= 1
        if not it.outstanding and it.frame is not root_frame:
            maybe_finish(it)

    for i in plan.sources:
        root.outstanding += 1
        append((i, root, (), False))
    for i, k in plan.feeds:
        root.outstanding += 1
        append((i, root, (feed_values[k],), False))

    error = None
    while True:
        if inflight and not completions.empty() or not ready and inflight:
            i, it, out, exc = completions.get()
            inflight -= 1
            if exc is not None:
                error = (i, it, exc)
                break
            deliver(cons[i], out, False, it)
            finish_item(it)
            continue
        if not ready:
            break
        i, it, args, dead = popleft()
        k = kind[i]
        if k == NORMAL or k == FEED:
            if dead:
                out = None
            else:
                try:
                    out = fn[i](*args)
                except Exception as e:
                    error = (i, it, e)
                    break
            deliver(cons[i], out, dead, it)
        elif k == SWITCH:
            if dead:
                deliver_ports(cons[i], (None, None), (True, True), True, it)
            else:
                data, pred = args
                p = bool(pred)
                deliver_ports(cons[i], (data, data), (p, not p), False, it)
        elif k == LOOP_MERGE or k == MERGE:
            out, idx = args
            deliver_ports(cons[i], (out, np.int32(idx)), (dead, dead), dead, it)
        elif k == ENTER:
            enter(i, it, args[0], dead)
        elif k == EXIT:
            if not dead:
                it.frame.live_exits.add(i)
                deliver(cons[i], args[0], False, it.frame.parent)
        elif k == NEXT:
            if not dead:
                next_iteration(i, it, args[0])
        elif k == ASYNC:
            if dead:
                deliver(cons[i], None, True, it)
            else:
                inflight += 1
                pool.jobs.put((completions, i, it, fn[i], args))
                continue
        elif k == MULTI:
            if dead:
                outs, deads = (None,) * len(plan.nodes[i].outputs), True
            else:
                try:
                    outs = fn[i](*args)
                except Exception as e:
                    error = (i, it, e)
                    break
                deads = False
            deliver_ports(cons[i], outs, _AllSame(deads), deads, it)
        finish_item(it)
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


class _AllSame:
    """port_dead for multi-output nodes: every port has the same deadness."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __getitem__(self, i):
        return self.v


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
