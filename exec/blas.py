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

Only libraries found in this process are touched (OpenBLAS under its usual
names, MKL); without one, `single_threaded()` does nothing.
"""
from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager

# (setter, getter) symbol names per library family; numpy's own wheels use scipy_openblas64_
_OPENBLAS = [("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
             ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
             ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
             ("openblas_set_num_threads", "openblas_get_num_threads")]
_MKL = [("MKL_Set_Num_Threads", "MKL_Get_Max_Threads")]


class _Library:
    def __init__(self, path: str, setter, getter):
        self.path = path
        self._set = setter
        self._get = getter

    def get(self) -> int:
        return int(self._get())

    def set(self, n: int) -> None:
        self._set(ctypes.c_int(n))


def _loaded_paths() -> list[str]:
    """Shared libraries mapped into this process (Linux); empty elsewhere."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if line.count(" ") >= 5 and ".so" in line}
    except (OSError, IndexError):
        return []
    return sorted(p for p in paths if p.startswith("/"))


def _find() -> list[_Library]:
    import numpy  # noqa: F401  (loads numpy's BLAS, so that it is mapped)
    found = []
    for path in _loaded_paths():
        name = path.rsplit("/", 1)[-1].lower()
        candidates = _OPENBLAS if "openblas" in name else _MKL if "mkl_rt" in name else None
        if candidates is None:
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in candidates:
            setter, getter = getattr(lib, set_name, None), getattr(lib, get_name, None)
            if setter is not None and getter is not None:
                getter.restype = ctypes.c_int
                found.append(_Library(path, setter, getter))
                break
    return found


_lock = threading.Lock()
_libraries: list[_Library] | None = None
_users = 0
_saved: list[int] = []


def libraries() -> list[_Library]:
    global _libraries
    if _libraries is None:
        with _lock:
            if _libraries is None:
                _libraries = _find()
    return _libraries


@contextmanager
def single_threaded():
    """BLAS calls use one thread inside the block (counted: nested and concurrent blocks are fine)."""
    global _users, _saved
    libs = libraries()
    if not libs:
        yield
        return
    with _lock:
        if _users == 0:
            _saved = [lib.get() for lib in libs]
            for lib, n in zip(libs, _saved, strict=True):
                if n != 1:
                    lib.set(1)
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                for lib, n in zip(libs, _saved, strict=True):
                    if n != 1:
                        lib.set(n)


def threads() -> list[int]:
    """The thread count of each BLAS library found (for tests and benchmarks)."""
    return [lib.get() for lib in libraries()]
