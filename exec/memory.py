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

# Set while the dataflow executor's scheduler runs kernels on this thread: a restore may then
# answer `InFlight` instead of blocking (see `InFlight`). Compiled programs leave it unset.
_deferral = threading.local()


def may_defer() -> bool:
    """Whether a restore on this thread may answer `InFlight` (the dataflow executor's scheduler)."""
    return getattr(_deferral, "on", False)


class deferring:
    """`with deferring():` lets restores on this thread answer `InFlight` (the executor's scheduler)."""

    __slots__ = ("before",)

    def __enter__(self):
        self.before = may_defer()
        _deferral.on = True

    def __exit__(self, *exc):
        _deferral.on = self.before


class InFlight:
    """A popped value still being copied back to the device: what a StackPop kernel returns instead
    of blocking its thread. The dataflow executor counts it as a job in flight and delivers
    `finish()` through its completion queue once every event in `events` is complete."""

    __slots__ = ("events", "finish")

    def __init__(self, events: list, finish):
        self.events = events
        self.finish = finish  # () -> the value, once the events are complete

    def notify(self, completions, i, it) -> None:
        """Puts `(i, it, value, None)` (or `(i, it, None, error)`) on `completions` once the value is back."""
        left = [len(self.events)]
        lock = threading.Lock()

        def one_done():
            with lock:
                left[0] -= 1
                if left[0]:
                    return
            try:
                value = self.finish()
            except Exception as e:
                completions.put((i, it, None, e))
            else:
                completions.put((i, it, value, None))
        for ev in self.events:
            ev.on_complete(one_done)

    @staticmethod
    def gather(values: list):
        """`values` as a tuple, or one InFlight for the tuple if any of them is in flight."""
        waiting = [v for v in values if type(v) is InFlight]
        if not waiting:
            return tuple(values)
        return InFlight([e for v in waiting for e in v.events],
                        lambda: tuple([v.finish() if type(v) is InFlight else v for v in values]))


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

    defers = False  # whether restore may answer InFlight (a device's manager, in the executor)

    def __init__(self, device: str = CPU):
        self.device = device
        self._lock = threading.Lock()
        self.bytes_in_use = 0
        self.peak_bytes = 0
        self.saves = 0
        self.swappable_bytes = 0

    # save and restore run for every stack push and pop (twice per saved value per iteration of
    # a training loop), so they are written flat: no helper calls on the common ndarray path.
    def save(self, value, swap: bool = False, owner: str = "", key=None):
        """Keeps `value` until `restore`/`free`; `swap` allows moving it to host memory. `owner` and
        `key` (the stack and iteration) name the value in a device's errors."""
        n = value.nbytes if type(value) is np.ndarray else nbytes_of(value)
        with self._lock:
            used = self.bytes_in_use = self.bytes_in_use + n
            self.saves += 1
            if swap:
                self.swappable_bytes += n
            if used > self.peak_bytes:
                self.peak_bytes = used
        return (value, n, swap)

    def restore(self, token, defer: bool = False):
        """The saved value, back on the device; its memory is released. With `defer` (a pop), a
        device's manager may answer `InFlight` where the value is still being copied back."""
        value, n, swap = token
        with self._lock:
            self.bytes_in_use -= n
            if swap:
                self.swappable_bytes -= n
        return value

    def restore_all(self, tokens) -> list:
        """`restore` of each token, in order, under one lock: a gradient stack joined after its loop hands back
        a value per iteration (a thousand lock round trips were most of bench/grad_loop.py's 0.8 ms joins)."""
        if type(self).restore is not MemoryManager.restore:  # a device's manager restores each its own way
            return [self.restore(t) for t in tokens]
        values, total, swapped = [], 0, 0
        for value, n, swap in tokens:
            values.append(value)
            total += n
            if swap:
                swapped += n
        with self._lock:
            self.bytes_in_use -= total
            self.swappable_bytes -= swapped
        return values

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
