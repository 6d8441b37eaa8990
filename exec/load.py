"""How many cores other processes used during a run, from the kernel's CPU counters (Linux).

The executor reads this around runs of plans whose choices depend on it (exec/recurrence.py):
whether the cores are free is a fact of the machine at run time, not of the graph.
"""
from __future__ import annotations

import os
import time

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def snapshot() -> tuple[float, float, float] | None:
    """(wall, seconds all CPUs were busy, this process's CPU seconds), or None where unknown."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()[1:9]
    except OSError:
        return None
    ticks = [int(v) for v in fields]
    t = os.times()
    return time.perf_counter(), (sum(ticks) - ticks[3] - ticks[4]) / _TICK, t.user + t.system


MIN_INTERVAL = 0.05  # the counters tick every 10 ms: shorter intervals say little


def other_cores(before, after) -> float | None:
    """Mean number of cores used by other processes between two snapshots (None: unknown)."""
    if before is None or after is None or after[0] - before[0] < MIN_INTERVAL:
        return None
    other = (after[1] - before[1]) - (after[2] - before[2])
    return max(other, 0.0) / (after[0] - before[0])


def lately() -> float:
    """The cores other processes kept busy lately, for a choice that must be made before any window of this
    process was measured: the 1-minute load average (threads running or ready to) less one for this thread,
    which is running; 0 where the OS does not say. Coarse, but a program that assumed a quiet machine ran its
    first calls with every BLAS thread on a busy one, tens of times slower (docs/compiled.md)."""
    try:
        return max(os.getloadavg()[0] - 1.0, 0.0)
    except (OSError, AttributeError):
        return 0.0
