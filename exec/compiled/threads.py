"""BLAS threads in compiled code: all of them on a quiet machine, one on a busy one.

Compiled code runs one kernel at a time, so a matmul may use every BLAS thread (the dataflow
executor pins BLAS to one thread: its pool is its parallelism, exec/blas.py). But OpenBLAS's
workers spin while they wait, and when other processes hold the cores, a two-thread matmul
waits for a descheduled worker: on the busy 2-core machine a loop of 256x256 matmuls ran 49 ms
an iteration with two threads and 2.8 ms with one. So a program with large matmuls measures
how many cores other processes used (exec/load.py, over windows of at least 50 ms, across
runs) and runs with one BLAS thread while that is half a core or more, the executor's
threshold for a busy machine (exec/recurrence.py).
"""
from __future__ import annotations

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


class LoadAwareBlas:
    """Wraps a program's function: BLAS threads while the machine is quiet, one while it is busy."""

    __slots__ = ("function", "other_cores", "window")

    def __init__(self, function):
        self.function = function
        self.other_cores = 0.0
        self.window = load.snapshot()  # the start of the current measuring window

    def __call__(self, *values):
        try:
            if self.other_cores >= BUSY_CORES:
                with blas.single_threaded():
                    return self.function(*values)
            return self.function(*values)
        finally:
            now = load.snapshot()
            other = load.other_cores(self.window, now)
            if other is not None:
                self.other_cores, self.window = other, now
