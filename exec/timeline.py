"""Timelines of runs: `Session.run(..., trace="run.json")` writes one as a Chrome/Perfetto trace.

A `Timeline` collects spans (a kernel on an executor thread, a copy or kernel on a device
stream) and counter samples (memory in use) from any thread, and writes the JSON
"traceEvents" format that chrome://tracing and ui.perfetto.dev open: process "executor"
has a track per executor thread (the scheduler, the pool's workers), each device a
process with a track per stream, and the memory counters are tracks of their process.
"""
from __future__ import annotations

import copy
import json
import threading
import time

STACK_OPS = frozenset({"StackPush", "StackPop", "StackConcat", "StackSplit"})


class Timeline:
    def __init__(self):
        self.start = time.perf_counter()
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
        return {"traceEvents": meta + events, "displayTimeUnit": "ms"}

    def write(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f)


def traced_plan(plan, timeline: Timeline, runtime):
    """A copy of `plan` whose kernels record their spans on `timeline` (and, for stack kernels, the
    bytes that the memory manager of `runtime`, the session's, holds after them)."""
    traced = copy.copy(plan)
    traced.fn = [f if f is None else _traced_kernel(f, node, timeline, runtime)
                 for f, node in zip(plan.fn, plan.nodes)]
    return traced


def _traced_kernel(fn, node, timeline: Timeline, runtime):
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
            timeline.span(f"executor {current().name}", name, t0, t1, args, process="executor")
            memory = runtime.memory  # made by the first StackNew where the session has no device
            if stack_op and memory is not None:
                timeline.counter("executor saved bytes", t1, {"saved bytes": memory.bytes_in_use},
                                 process="executor")
    return kernel
