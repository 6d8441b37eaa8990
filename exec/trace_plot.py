"""Memory over time from a run's trace: `python -m exec.trace_plot run.json memory.png`.

Reads a trace that `Session.run(..., trace="run.json")` wrote (exec/timeline.py) and draws
each memory counter of it (a device's bytes in use and pinned host bytes, the executor's
saved bytes) as a step line against milliseconds since the run started. Needs matplotlib
(the `plot` extra: pip install 'flowgraph-ml[plot]'); `memory_series` alone does not.
"""
from __future__ import annotations

import json
import sys


def memory_series(trace) -> dict:
    """{"<counter> <series>": (times in ms, values)} of a trace (a path or its parsed JSON), in time order."""
    if isinstance(trace, str):
        with open(trace) as f:
            trace = json.load(f)
    series: dict = {}
    for e in trace["traceEvents"]:
        if e.get("ph") != "C":
            continue
        for key, value in e["args"].items():
            times, values = series.setdefault(f"{e['name']}: {key}", ([], []))
            times.append(e["ts"] / 1000.0)
            values.append(value)
    return series


def plot_memory(trace, png: str, title: str | None = None) -> None:
    """Draws `memory_series(trace)` into the PNG file `png`."""
    try:
        # a Figure of its own, not pyplot's: neither the user's backend (a notebook's) nor pyplot's figures change
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError("plotting a trace needs matplotlib: pip install 'flowgraph-ml[plot]'") from e
    series = memory_series(trace)
    fig = Figure(figsize=(9, 4))
    ax = fig.subplots()
    for name, (times, values) in series.items():
        ax.step(times, [v / 2**20 for v in values], where="post", label=name)
    ax.set_xlabel("time since the run started (ms)")
    ax.set_ylabel("MiB")
    ax.set_title(title or "memory in use")
    if series:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(png, dpi=100)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m exec.trace_plot TRACE.json OUT.png")
    plot_memory(sys.argv[1], sys.argv[2])
