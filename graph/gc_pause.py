"""Pausing Python's cyclic garbage collector while a program is converted, traced and compiled.

Building a large function allocates hundreds of thousands of long-lived objects (syntax trees, nodes,
tensors, plan records) and frees few of them, which is the worst case of CPython's generational
collector: each collection of the oldest generation walks everything alive, and they come again as the
heap grows. On a function of 4,000 statements they took a quarter of its first call (0.9 s of 3.8 s)
and made the per-statement cost grow with the function's size (`bench/conversion.py`). Reference
counting still frees what it can meanwhile; the cycles left are collected after the build, by the
next collection that runs.
"""
from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0            # builds going on (nested or in other threads)
_was_enabled = False  # whether the collector ran before the outermost build paused it


@contextmanager
def gc_paused() -> Iterator[None]:
    """Holds the cyclic collector off while the block runs; the outermost of nested or concurrent
    blocks gives it back as it was."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
