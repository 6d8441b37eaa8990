"""Timelines of runs, written as Chrome/Perfetto traces: `Session.run(..., trace="run.json")` writes one
run's, `exec.profile` (`transpile.profile`) every run's while it is open (exec/profiler.py).

A `Timeline` collects spans (a run, a kernel on an executor thread or in a compiled program, a
copy or kernel on a device stream) and counter samples (memory in use) from any thread, and
writes the JSON "traceEvents" format that chrome://tracing and ui.perfetto.dev open: process
"executor" has a track per dataflow executor thread (the scheduler, the pool's workers),
"compiled" a track per thread that ran compiled programs, each device of a partitioned run a
process with a track per thread, each device with streams a process with a track per stream;
the memory counters are tracks of their process, and "runs" holds one span per run.
"""
from __future__ import annotations

import copy
import json
import threading
import time

from exec.rendezvous import Rendezvous, RendezvousKey

STACK_OPS = frozenset({"StackPush", "StackPop", "StackConcat", "StackSplit"})


class Timeline:
    def __init__(self):
        self.start = time.perf_counter()
        # the wall clock at `start`: traces of several processes (MPI ranks) are aligned by it when merged
        self.start_unix_us = time.time_ns() // 1000
        self.metadata: dict = {}  # written as the trace's "otherData" (e.g. the MPI rank)
        self._lock = threading.Lock()
        self._events: list = []
        self._tracks: dict[tuple, tuple] = {}  # (process, track) -> (pid, tid)
        self._pids: dict[str, int] = {}

    def _ids(self, process: str, track: str) -> tuple:
        ids = self._tracks.get((process, track))
        if ids is None:
            pid = self._pids.setdefault(process, len(self._pids) + 1)
            ids = self._tracks[(process, track)] = (pid, len(self._tracks) + 1)
        return ids

    def _us(self, t: float) -> float:
        return round((t - self.start) * 1e6, 3)

    def span(self, track: str, name: str, t0: float, t1: float, args: dict | None = None,
             process: str | None = None) -> None:
        """A span `name` from perf_counter time t0 to t1 on `track` (of `process`: by default the part of
        the track's name before its last space, e.g. "/gpu:0" for "/gpu:0 d2h stream")."""
        process = process or track.rsplit(" ", 2)[0]
        event = {"name": name, "ph": "X", "ts": self._us(t0), "dur": self._us(t1) - self._us(t0)}
        if args:
            event["args"] = args
        with self._lock:
            event["pid"], event["tid"] = self._ids(process, track)
            self._events.append(event)

    def counter(self, name: str, t: float, values: dict, process: str | None = None) -> None:
        """A sample of counter track `name` (its series `values`) at perf_counter time t."""
        process = process or name.split(" ")[0]
        with self._lock:
            pid = self._pids.setdefault(process, len(self._pids) + 1)
            self._events.append({"name": name, "ph": "C", "ts": self._us(t), "pid": pid, "args": dict(values)})

    def to_json(self) -> dict:
        with self._lock:
            meta = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}
                    for name, pid in self._pids.items()]
            meta += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": track}}
                     for (_, track), (pid, tid) in self._tracks.items()]
            events = sorted(self._events, key=lambda e: e["ts"])
        return {"traceEvents": meta + events, "displayTimeUnit": "ms",
                "otherData": {"start_unix_us": self.start_unix_us, **self.metadata}}

    def write(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f)


def traced_plan(plan, timeline: Timeline, runtime, process: str = "executor"):
    """A copy of `plan` whose kernels record their spans on `timeline`, on a track per thread of
    `process` (and, for stack kernels, the bytes that the memory manager of `runtime`, the session's,
    holds after them)."""
    traced = copy.copy(plan)
    traced.fn = [f if f is None else traced_kernel(f, node, timeline, runtime, process)
                 for f, node in zip(plan.fn, plan.nodes)]
    return traced


def traced_devices_plan(plan, timeline: Timeline, runtime):
    """A copy of a multi_device.DevicesPlan whose parts are traced plans, each device a process, and whose
    Sends and Recvs are drawn too (`TracedRendezvous`)."""
    traced = copy.copy(plan)
    traced.parts = [(device, traced_plan(part, timeline, runtime, process=device), *rest)
                    for device, part, *rest in plan.parts]
    traced.timeline = timeline
    return traced


class TracedRendezvous(Rendezvous):
    """`inner` as one device's part of a traced run sees it: each Send is a span on the device's "sends"
    track, each Recv a span from the moment the part asked for the value to the moment it came, on its
    "receives" track, so a part left waiting for another (a pipeline's bubble, a slow rank) shows as
    a long Recv. Spans name the tensor sent; their args say from where and in which loop iteration."""

    def __init__(self, inner: Rendezvous, timeline: Timeline, process: str):
        self.inner, self.timeline, self.process = inner, timeline, process
        self._take = getattr(inner, "take", None)

    def send(self, key: str, value, is_dead: bool) -> None:
        t0 = time.perf_counter()
        self.inner.send(key, value, is_dead)
        self._span("sends", "Send", key, t0, is_dead)

    def recv(self, key: str, callback) -> None:
        t0 = time.perf_counter()

        def received(value, is_dead: bool) -> None:
            self._span("receives", "Recv", key, t0, is_dead)
            callback(value, is_dead)
        self.inner.recv(key, received)

    def take(self, key: str) -> tuple | None:
        t0 = time.perf_counter()
        got = self._take(key) if self._take is not None else None
        if got is not None:  # it was there already: a Recv that did not wait
            self._span("receives", "Recv", key, t0, got[1])
        return got

    def abort(self, error: BaseException) -> None:
        self.inner.abort(error)

    @property
    def aborted(self) -> BaseException | None:
        return self.inner.aborted

    def _span(self, track: str, kind: str, key: str, t0: float, is_dead: bool) -> None:
        fields = RendezvousKey.parse(key)
        if fields is None:
            name, args = f"{kind} {key}", None
        else:
            name = f"{kind} {fields.tensor_name}"
            args = {"from": fields.send_device, "to": fields.recv_device, "iteration": fields.frame_tag or "-"}
            if is_dead:
                args["dead"] = True  # an untaken branch's token: no value crossed
        self.timeline.span(f"{self.process} {track}", name, t0, time.perf_counter(), args, process=self.process)


def traced_kernel(fn, node, timeline: Timeline, runtime, process: str):
    """`fn`, node's kernel, recording each call as a span on the calling thread's track of `process`."""
    name = f"{node.op} {node.name}"
    args = {"source": str(node.source)} if node.source else None
    stack_op = node.op in STACK_OPS
    perf_counter, current = time.perf_counter, threading.current_thread

    def kernel(*inputs):
        t0 = perf_counter()
        try:
            return fn(*inputs)
        finally:
            t1 = perf_counter()
            timeline.span(f"{process} {current().name}", name, t0, t1, args, process=process)
            memory = runtime.memory  # made by the first StackNew where the session has no device
            if stack_op and memory is not None:
                timeline.counter(f"{process} saved bytes", t1, {"saved bytes": memory.bytes_in_use},
                                 process=process)
    return kernel
