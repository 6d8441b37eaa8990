"""Profiles: every run made while `with profile("trace.json"):` is open, as one Chrome/Perfetto trace.

```python
with transpile.profile("step.json", memory_plot="memory.png"):   # or exec.profile, for Sessions
    loss = train_step(xs, ys, 100)
# open step.json in ui.perfetto.dev (or chrome://tracing)
```

Like `jax.profiler.trace`, a profile records what the whole process runs while it is open, in
any thread: each `transpile.function` call and `Session.run` is a span of the "runs" process
(named after the function), and its kernels are spans where they ran, in the mode that runs
them: a compiled program's on its thread's track of process "compiled", the dataflow executor's
on the tracks of "executor" (the scheduler and the pool's workers), and each device's part of a
run on several devices on a process of its own ("/task:0/cpu:1"). A device's streams and its
memory, and the bytes loops save for their gradients, are counter tracks (exec/timeline.py);
`memory_plot` draws them as a PNG (exec/trace_plot.py, needs matplotlib).

A recorded run times each kernel call, so it runs slower than an unrecorded one; scalar
arithmetic that compiled code writes inline (`i + 1`) is inside its run's span, not a span of
its own. The files are written when the `with` block ends, also when it raised.

Under MPI (a job of several ranks: `python -m dist.launch -n 2 script.py`) each rank records
the parts of runs it runs and writes its own file, the rank inserted before the suffix
(`step.rank0.json`, `step.rank1.json`); `merge_traces` (or `python -m exec.profiler OUT IN...`)
joins them into one trace, each rank's processes named "rank k: ...", on one clock.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Iterator

from exec.timeline import Timeline


@dataclass(eq=False)
class Profile:
    """What a `profile` block records: its `timeline`, and the files it wrote once it ended."""

    path: str | None
    memory_plot: str | None
    rank: int | None
    timeline: Timeline = field(default_factory=Timeline)
    written: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """The trace as Chrome's JSON object (`traceEvents`, ...)."""
        return self.timeline.to_json()

    def export_chrome_trace(self, path: str) -> None:
        """Writes the trace to `path` (what the block writes to its own `path` when it ends)."""
        self.timeline.write(path)

    def finish(self) -> None:
        """Writes the trace (and the memory plot) to the block's paths, this rank's where under MPI."""
        if self.path is not None:
            path = rank_path(self.path, self.rank)
            self.export_chrome_trace(path)
            self.written.append(path)
        if self.memory_plot is not None:
            from exec.trace_plot import plot_memory  # needs matplotlib, which only the plot extra installs

            png = rank_path(self.memory_plot, self.rank)
            plot_memory(self.to_json(), png, title=_plot_title(self.rank))
            self.written.append(png)


class _Recording:
    """The profile open now, or None: read by every run (exec/session.py) and by the compiled entries
    (exec/compiled/entry.py), which fall back to the session's recording path while one is open."""

    __slots__ = ("profile",)

    def __init__(self):
        self.profile: Profile | None = None


RECORDING = _Recording()
_lock = threading.Lock()


def active() -> Profile | None:
    """The profile recording now, or None."""
    return RECORDING.profile


@contextlib.contextmanager
def profile(path: str | None = None, *, memory_plot: str | None = None) -> Iterator[Profile]:
    """Records every run made while the block is open and writes them to `path` as a Chrome trace (see
    the module docstring), and memory over time to the PNG `memory_plot`. Without `path` the trace stays
    in the Profile the block gets (`to_json()`, `export_chrome_trace(path)`). Profiles do not nest."""
    rank = job_rank()
    recorded = Profile(path, memory_plot, rank)
    if rank is not None:
        recorded.timeline.metadata["rank"] = rank
    with _lock:
        if RECORDING.profile is not None:
            open_one = RECORDING.profile.path or "a profile without a path"
            raise RuntimeError(f"a profile is recording already ({open_one}): profiles do not nest, and one "
                               "records every run of the process; end it first, or record in it")
        RECORDING.profile = recorded
    try:
        yield recorded
    finally:
        with _lock:
            RECORDING.profile = None
        recorded.finish()


def job_rank() -> int | None:
    """This process's rank in an MPI job of several ranks (from the launcher's environment, without
    an MPI call: MPICH's hydra, Open MPI), or None outside one."""
    for size_var, rank_var in (("PMI_SIZE", "PMI_RANK"), ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")):
        if size_var in os.environ and rank_var in os.environ:
            return int(os.environ[rank_var]) if int(os.environ[size_var]) > 1 else None
    return None


def rank_path(path: str, rank: int | None) -> str:
    """`path` for rank `rank`'s file: "step.json" -> "step.rank1.json" (unchanged for None)."""
    if rank is None:
        return path
    stem, suffix = os.path.splitext(path)
    return f"{stem}.rank{rank}{suffix}"


def _plot_title(rank: int | None) -> str:
    return "memory in use" if rank is None else f"memory in use (rank {rank})"


def merge_traces(paths: list[str], out: str | None = None) -> dict:
    """One trace of the per-rank traces at `paths` (written to `out` when given): each file's
    processes renamed "rank k: <name>" (k from the file's "otherData", else its position) and given
    ids of their own, its times shifted onto the earliest file's clock (by the wall-clock start each
    file records)."""
    traces = []
    for k, path in enumerate(paths):
        with open(path) as f:
            trace = json.load(f)
        traces.append((trace.get("otherData", {}).get("rank", k), trace))
    starts = [t.get("otherData", {}).get("start_unix_us", 0) for _, t in traces]
    origin = min(starts, default=0)
    events: list = []
    next_pid = 1
    for (rank, trace), start in zip(traces, starts, strict=True):
        pids: dict = {}
        for e in trace["traceEvents"]:
            e = dict(e)
            if "pid" in e:
                if e["pid"] not in pids:
                    pids[e["pid"]] = next_pid
                    next_pid += 1
                e["pid"] = pids[e["pid"]]
            if e.get("ph") == "M" and e.get("name") == "process_name":
                e["args"] = {"name": f"rank {rank}: {e['args']['name']}"}
            if "ts" in e:
                e["ts"] = round(e["ts"] + (start - origin), 3)
            events.append(e)
    merged = {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"start_unix_us": origin}}
    if out is not None:
        with open(out, "w") as f:
            json.dump(merged, f)
    return merged


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python -m exec.profiler MERGED.json RANK0.json RANK1.json ...")
    merge_traces(sys.argv[2:], sys.argv[1])
