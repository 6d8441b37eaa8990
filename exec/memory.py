"""The device memory manager: where values saved for later in a run (stack slots) are kept.

Gradient loops pop what forward loops pushed, so saved values are most of the
memory a training step holds. Every stack push and pop goes through `save` and
`restore` here, which keep the accounting (bytes in use, peak) and are the one
place where moving values to host memory and back (`swap=True`, from
`while_loop(swap_memory=True)`) plugs in for accelerator devices. On the CPU a
saved value stays where it is.
"""
from __future__ import annotations

import threading

import numpy as np

CPU = "/cpu:0"


def nbytes_of(value) -> int:
    """Device bytes a value holds: arrays count, handles (TensorArrays, stacks) do not."""
    if isinstance(value, (np.ndarray, np.generic)):
        return int(value.nbytes)
    n = getattr(value, "nbytes", None)  # device arrays (cupy) expose nbytes too
    return int(n) if isinstance(n, (int, np.integer)) else 0


class MemoryManager:
    """Accounts for (and, on accelerators, places) values saved during runs.

    `save(value, swap) -> token` keeps a value until `restore(token)` hands it
    back (and releases it) or `free(token)` drops it. Tokens are opaque.
    """

    def __init__(self, device: str = CPU):
        self.device = device
        self._lock = threading.Lock()
        self.bytes_in_use = 0
        self.peak_bytes = 0
        self.saves = 0
        self.swappable_bytes = 0

    # save and restore run for every stack push and pop (twice per saved value per iteration of
    # a training loop), so they are written flat: no helper calls on the common ndarray path.
    def save(self, value, swap: bool = False):
        """Keeps `value` until `restore`/`free`; `swap` allows moving it to host memory."""
        n = value.nbytes if type(value) is np.ndarray else nbytes_of(value)
        with self._lock:
            used = self.bytes_in_use = self.bytes_in_use + n
            self.saves += 1
            if swap:
                self.swappable_bytes += n
            if used > self.peak_bytes:
                self.peak_bytes = used
        return (value, n, swap)

    def restore(self, token):
        """The saved value, back on the device; its memory is released."""
        value, n, swap = token
        with self._lock:
            self.bytes_in_use -= n
            if swap:
                self.swappable_bytes -= n
        return value

    def free(self, token) -> None:
        _, n, swap = token
        with self._lock:
            self.bytes_in_use -= n
            if swap:
                self.swappable_bytes -= n

    def reset_peak(self) -> None:
        """Starts a new peak measurement from the bytes in use now."""
        with self._lock:
            self.peak_bytes = self.bytes_in_use
            self.saves = 0

    def stats(self) -> dict:
        with self._lock:
            return {"device": self.device, "bytes_in_use": self.bytes_in_use, "peak_bytes": self.peak_bytes,
                    "saves": self.saves, "swappable_bytes": self.swappable_bytes}


_create_lock = threading.Lock()


def memory_manager(rt) -> MemoryManager:
    """The runtime's memory manager, created on first use."""
    mm = rt.memory
    if mm is None:
        with _create_lock:
            if rt.memory is None:
                rt.memory = MemoryManager()
            mm = rt.memory
    return mm
