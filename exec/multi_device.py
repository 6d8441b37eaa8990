"""Runs a graph whose nodes are on several devices, in this process: one executor per device.

`plan_run` prunes the graph to what a run needs; if that names more than one device it is placed
and partitioned (by dist's graph-level modules, which exec/session.py passes in as `partition`)
and each device's part gets its own plan, fetching the fetches that live there and running every
Send there. `execute` runs a `DevicesPlan`: each device's plan on the frame-tagged executor, one
thread per device (the calling thread takes the first), all meeting in one `LocalRendezvous` per
run. The first failure on any device aborts the rendezvous, so every other device's pending and
later Recvs fail at once and its executor stops: the run raises that first error (naming the
node, its device and the user's line), never hangs on a value that will not come. Ctrl-C aborts it
too: a part that receives nothing stops at its next loop iteration, and the run raises one
RunInterrupted naming where each device's part was, once every part has stopped.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from queue import SimpleQueue

from exec import executor
from exec.device.transfer import DeviceRendezvous
from exec.errors import run_interrupted
from exec.plan import Plan, build_plan, prune
from exec.rendezvous import LocalRendezvous, Rendezvous
from exec.timeline import TracedRendezvous
from graph.devices import UNPLACED, canonical_device
from graph.frames import enclosing_frames
from graph.op_names import LOOP_COND


@dataclass
class DevicesPlan:
    """The plans of one run's devices: (device, plan, the flat fetch index of each of its fetches, the
    index in the run's feeds of each of its feeds)."""

    parts: list
    num_fetches: int
    partitioned: object  # dist.Partitioned: the partitioned graph, for printing and tests
    uses_pool: bool = False
    copies: dict | None = None  # the last run's copies between the host and the session's device, per direction
    feeds: tuple = ()  # the run's fed tensors, in feed order (what an error about a feed names)
    exchange: object = None  # what a process group worked out for this plan on its first run (dist/exchange.py)
    timeline: object = None  # exec.timeline.Timeline of a traced copy (exec/timeline.py): Sends and Recvs drawn too

    @property
    def devices(self) -> list[str]:
        return [part[0] for part in self.parts]


def plan_run(graph, fetches, targets, feeds, rt, use_pool: bool, partition, device=None) -> Plan | DevicesPlan:
    """A Plan (exec/plan.py) when the nodes the run needs are on one device (or none is placed), else a
    DevicesPlan. `partition(graph, nodes, fed)` returns a dist.Partitioned of `nodes`. `device` (the
    session's exec.device.Device): the part placed on its name runs its kernels there; a run with a
    node placed there is always partitioned, so that host-memory nodes go to the host's CPU."""
    fed = {t.node for t in feeds}
    nodes = prune([t.node for t in fetches] + list(targets), fed)
    devices = {canonical_device(n.device) for n in nodes if n.device != UNPLACED}
    on_device = canonical_device(device.name) if device is not None else None
    if len(devices) <= 1 and on_device not in devices:
        return build_plan(graph, fetches, targets, feeds, rt, use_pool=use_pool)
    nodes = _with_loop_predicates(graph, nodes, fed)
    parted = partition(graph, nodes, fed)
    placement = parted.placement
    parts = []
    fed_here = [k for k, t in enumerate(feeds) if t.node in parted.copies]  # the others feed pruned nodes
    for part_device in parted.devices:
        mine = [(k, parted.tensor(t)) for k, t in enumerate(fetches) if placement[t.node] == part_device]
        device_targets = [parted.copies[n] for n in targets if placement[n] == part_device] \
            + parted.sends.get(part_device, [])
        if not mine and not device_targets:
            continue
        plan = build_plan(parted.graph, [t for _, t in mine], device_targets, [parted.tensor(feeds[k]) for k in fed_here],
                          rt, use_pool=use_pool, device=device if part_device == on_device else None)
        parts.append((part_device, plan, [k for k, _ in mine], fed_here))
    return DevicesPlan(parts, len(fetches), parted, uses_pool=any(part[1].uses_pool for part in parts),
                       feeds=tuple(feeds))


def _with_loop_predicates(graph, nodes: list, fed: set) -> list:
    """`nodes` and whatever computes the predicates of the loops they are in: each device's copy of a
    loop runs as many iterations as the predicate says (dist/partition.py)."""
    frames = {f for n in nodes for f in enclosing_frames(n.frame)}
    have = set(nodes)
    missing = [m for m in graph.nodes if m.op == LOOP_COND and m.frame in frames and m not in have]
    return prune(nodes + missing, fed) if missing else nodes


# What runs a DevicesPlan in a job of several processes: dist/mpi.py installs one when imported in an
# MPI job. Its `execute(plan, feed_values, pool)` runs this process's devices (through `execute` below,
# with `rendezvous` and `devices`) and returns every fetched value, those of the other processes too.
_process_group = None


def set_process_group(group) -> None:
    """Makes `group` (None: none) run this process's DevicesPlans; see `_process_group`."""
    global _process_group
    _process_group = group


def execute(plan, feed_values: list, pool=None, rendezvous: Rendezvous | None = None, devices=None) -> list:
    """Runs a Plan (on the executor) or a DevicesPlan (see the module docstring); returns the fetched values.

    `devices` (a set of device names) runs only those devices' parts, leaving None for the fetches
    of the others: each process of a multi-process job runs its own devices so, with a `rendezvous`
    that reaches the others. Given neither, a process group set by `set_process_group` runs it.

    Ctrl-C stops every device's part (each at its next loop iteration or Recv) and raises
    RunInterrupted naming where each was; the threads are then free for the next run."""
    if not isinstance(plan, DevicesPlan):
        return executor.execute(plan, feed_values, pool)
    if rendezvous is None and devices is None and _process_group is not None:
        return _process_group.execute(plan, feed_values, pool)
    run = _DevicesRun(plan, feed_values, pool, rendezvous if rendezvous is not None else LocalRendezvous())
    parts = plan.parts if devices is None else [p for p in plan.parts if p[0] in devices]
    try:
        for part in parts[1:]:
            run.start(part)
        if parts:  # a process of a multi-process job may run none of the devices
            run.run_part(*parts[0])
    except KeyboardInterrupt as e:  # a Ctrl-C between its executor's steps: the run stops as from one in them
        run.rendezvous.abort(e)
    run.wait()
    return run.outcome()


class _DevicesRun:
    """One run of a DevicesPlan's parts in this process: each on an executor of its own, the caller's
    thread taking the first; what they fetched, and where each was if Ctrl-C stopped the run."""

    def __init__(self, plan: DevicesPlan, feed_values: list, pool, rendezvous: Rendezvous):
        self.plan, self.feed_values, self.pool, self.rendezvous = plan, feed_values, pool, rendezvous
        self.results: list = [None] * plan.num_fetches
        self.interrupted: dict[str, str] = {}  # device -> where its part was (RunInterrupted.where)
        self._lock = threading.Lock()
        self._running = 0  # parts started on other threads and not yet done
        self._all_done = threading.Event()
        self._all_done.set()

    def start(self, part) -> None:
        """Runs `part` on a device thread."""
        with self._lock:
            self._running += 1
            self._all_done.clear()
        _take_worker().put((self.run_part, part, self._done))

    def _done(self) -> None:
        with self._lock:
            self._running -= 1
            if not self._running:
                self._all_done.set()

    def run_part(self, device: str, part_plan: Plan, indices: list, fed: list) -> None:
        """Runs one device's part; its first failure (or Ctrl-C) aborts the rendezvous, stopping the others."""
        try:
            out = self._execute(device, part_plan, [self.feed_values[k] for k in fed])
        except KeyboardInterrupt as e:  # its RunInterrupted (a Ctrl-C, or another part's that stopped it)
            self.interrupted[device] = getattr(e, "where", "")
            self.rendezvous.abort(e)  # a no-op when the run was aborted already
            return
        except BaseException as e:  # noqa: BLE001  (the first failure is raised by the calling thread)
            self.rendezvous.abort(e)  # a no-op when the executor aborted with it already
            return
        for k, v in zip(indices, out, strict=True):
            self.results[k] = v

    def _execute(self, device: str, part_plan: Plan, values: list) -> list:
        rendezvous = self.rendezvous
        if self.plan.timeline is not None:
            rendezvous = TracedRendezvous(rendezvous, self.plan.timeline, device)
        dev = part_plan.device
        if dev is None:
            return executor.execute(part_plan, values, self.pool, rendezvous)
        # a device's partition: what crosses to the host is copied on its copy streams
        seen = DeviceRendezvous(rendezvous, dev)
        out = executor.execute(part_plan, values, self.pool, seen)
        self.plan.copies = seen.copies
        return [dev.download(v) for v in out]

    def wait(self) -> None:
        """Until every part started on another thread is done. A Ctrl-C meanwhile aborts the run and the
        wait goes on: the others stop at their next loop iteration or Recv, so none outlives the run.
        It wakes every `_POLL_S` for a Ctrl-C that wakes no blocked wait (`_thread.interrupt_main`)."""
        while not self._all_done.is_set():
            try:
                self._all_done.wait(_POLL_S)
            except KeyboardInterrupt as e:
                self.rendezvous.abort(e)

    def outcome(self) -> list:
        """The fetched values, or the run's first error: after Ctrl-C, a RunInterrupted naming where each
        device's part was."""
        error = self.rendezvous.aborted
        if error is None:
            return self.results
        if isinstance(error, KeyboardInterrupt):
            where = "; ".join(f"{w} (on {device})" for device, w in self.interrupted.items() if w)
            raise run_interrupted(where) from None
        raise error


# how often the caller's thread, waiting for the other devices' parts, looks for a Ctrl-C (seconds)
_POLL_S = 0.05

# Threads that run the devices' parts other than the caller's, kept between runs (starting a thread costs
# about as much as a small run): each waits on its own queue for (run, args, done), runs it, goes back to
# the idle list and calls done().
_idle: list[SimpleQueue] = []
_idle_lock = threading.Lock()


def _take_worker() -> SimpleQueue:
    with _idle_lock:
        if _idle:
            return _idle.pop()
    jobs: SimpleQueue = SimpleQueue()
    threading.Thread(target=_work, args=(jobs,), name="device worker", daemon=True).start()
    return jobs


def _work(jobs: SimpleQueue) -> None:
    while True:
        run, args, done = jobs.get()
        try:
            run(*args)  # it catches what its executor raises (see `_DevicesRun.run_part`)
        finally:
            run = args = None
            with _idle_lock:
                _idle.append(jobs)
            done()
