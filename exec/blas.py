"""BLAS threads: numpy's BLAS runs single-threaded while the executor's pool runs kernels.

Why: OpenBLAS (numpy's wheels) starts one worker per core and lets idle workers
spin for a while before they sleep. With the executor's pool threads calling
BLAS at the same time, or other processes on the machine, those spinning
workers hold the cores the real work needs: on a 2-core machine an LSTM step
that takes a quarter second swings to seconds. The pool is the executor's
parallelism (independent kernels on separate threads, which block, never
spin), so while it runs, each BLAS call gets one thread. The previous setting
is restored when the last concurrent run ends, so plain numpy code outside runs
is left as the user configured it.

threadpoolctl finds the BLAS libraries loaded in this process (OpenBLAS, MKL, BLIS, FlexiBLAS, on
Linux, macOS and Windows) and sets their thread counts; without one, `single_threaded()` does nothing.
Only BLAS libraries are touched: an OpenMP runtime that other libraries in the process use keeps its setting.
`at_most(n)` is the general block: compiled code runs its matmuls with as many threads as the machine has
cores free (exec/compiled/threads.py).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController


class _Library:
    """One BLAS library: its path and its thread count (a threadpoolctl library controller)."""

    def __init__(self, controller):
        self._controller = controller
        self.path: str = controller.filepath

    def get(self) -> int:
        return int(self._controller.get_num_threads())

    def set(self, n: int) -> None:
        self._controller.set_num_threads(n)
        # threadpoolctl >= 3.8 lets one Python thread at a time set OpenBLAS's process-wide pool (the first to set
        # it; the others' calls do nothing) so that threads do not fight over it. Ours are serialized by `_lock`,
        # whichever thread's run makes them, so each call hands control back (a no-op if this thread lacks it,
        # e.g. inside a user's own `threadpool_limits` block in another thread, whose setting then stands).
        release = getattr(self._controller, "clear_controlling_thread", None)
        if release is not None:
            release()


def _find() -> list[_Library]:
    import numpy  # noqa: F401  (loads numpy's BLAS, so that it is found)
    # scanning the loaded libraries takes milliseconds: done once, the controllers kept
    controllers = ThreadpoolController().select(user_api="blas").lib_controllers
    # a build whose thread count cannot be read (no getter symbol) cannot be restored either
    return [_Library(c) for c in controllers if c.get_num_threads() is not None]


_lock = threading.Lock()
_libraries: list[_Library] | None = None
_limits: list[int] = []  # the limits of the blocks open now, in any thread
_saved: list[int] = []   # each library's count from before the first open block


def libraries() -> list[_Library]:
    global _libraries
    if _libraries is None:
        with _lock:
            if _libraries is None:
                _libraries = _find()
    return _libraries


@contextmanager
def at_most(n: int):
    """BLAS calls use at most `n` threads inside the block. Blocks nest and may be open in several threads at
    once: the smallest open limit holds, and the previous setting is restored when the last block ends."""
    global _saved
    libs = libraries()
    if not libs:
        yield
        return
    with _lock:
        if not _limits:
            _saved = [lib.get() for lib in libs]
        _limits.append(max(1, n))
        _apply(libs)
    try:
        yield
    finally:
        with _lock:
            _limits.remove(max(1, n))
            _apply(libs)


def _apply(libs: list[_Library]) -> None:
    """Sets each library to the smallest open limit, never above the count it had before the first block
    (restored when none is open); called under `_lock`."""
    for lib, saved in zip(libs, _saved, strict=True):
        want = min([saved, *_limits])
        if lib.get() != want:
            lib.set(want)


def single_threaded():
    """BLAS calls use one thread inside the block (counted: nested and concurrent blocks are fine)."""
    return at_most(1)


def threads() -> list[int]:
    """The thread count of each BLAS library found (for tests and benchmarks)."""
    return [lib.get() for lib in libraries()]
