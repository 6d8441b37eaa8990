"""BLAS threads in compiled code: as many as the machine has cores free.

Compiled code runs one kernel at a time, so a matmul may use every BLAS thread (the dataflow
executor pins BLAS to one thread: its pool is its parallelism, exec/blas.py). But OpenBLAS's
workers spin while they wait, and when other processes hold the cores, a two-thread matmul
waits for a descheduled worker: on the busy 2-core machine a loop of 256x256 matmuls ran 49 ms
an iteration with two threads and 2.8 ms with one. So a program with large matmuls measures
how many cores other processes used (exec/load.py, over windows of at least 50 ms, across
runs; before the first window, from the load average) and runs with the cores they leave free: all BLAS threads on a quiet machine, one on a
2-core machine while others take half a core or more (the executor's threshold for a busy
machine, exec/recurrence.py), and on a larger machine as many as the cores left (15 of 16 while
another process takes one; a fixed "busy: one thread" rule left them idle).
"""
from __future__ import annotations

import os

from exec import blas, load
from exec.recurrence import BUSY_CORES
from graph import shapes as _sh
from graph.node import Node

# A matmul of at least this many multiply-adds is worth BLAS threads (and their risk).
THREADED_FLOPS = 1 << 21


def uses_threaded_blas(nodes: list[Node]) -> bool:
    """Whether the program holds a matmul large enough (or of unknown size) for BLAS to thread."""
    for n in nodes:
        if n.op == "MatMul" and len(n.inputs) == 2:
            a, b = n.inputs
            if not (_sh.is_fully_defined(a.shape) and _sh.is_fully_defined(b.shape)):
                return True
            if _sh.num_elements(a.shape) * (b.shape[-1] if len(b.shape) >= 2 else 1) >= THREADED_FLOPS:
                return True
    return False


def free_cores(cores: int, other_cores: float) -> int:
    """The cores left to this process while others use `other_cores` of `cores` on average (at least one): a
    core counts as taken from half a core's use (BUSY_CORES), so 0.5 of 2 cores leaves one."""
    return max(1, cores - int(other_cores + 1 - BUSY_CORES))


def _cores() -> int:
    """The cores this process may run on (its affinity where the OS tells it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


class LoadAwareBlas:
    """Wraps a program's function: it runs with BLAS limited to the cores other processes left free
    during the last measuring window (unlimited while all are free)."""

    __slots__ = ("function", "other_cores", "window", "cores")

    def __init__(self, function):
        self.function = function
        # until a window is measured (50 ms of calls), the load average's figure: a grad loop's first calls
        # (11 ms each) ran with two threads on the busy 2-core box, 15-43 ms instead of 11
        self.other_cores = load.lately()
        self.window = load.snapshot()  # the start of the current measuring window
        self.cores = _cores()

    def __call__(self, *values):
        try:
            free = free_cores(self.cores, self.other_cores)
            if free < self.cores:
                with blas.at_most(free):
                    return self.function(*values)
            return self.function(*values)
        finally:
            now = load.snapshot()
            other = load.other_cores(self.window, now)
            if other is not None:
                self.other_cores, self.window = other, now
