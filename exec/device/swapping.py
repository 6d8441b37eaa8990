"""The memory manager of a device: saved loop values as device buffers, swapped to host memory and back.

Paper §5.3 (TensorFlow's stack swapping), on the device protocol of exec/device/base.py:

- A push (`save`) makes the value a device buffer, accounted on the device. When the loop
  allows swapping (`while_loop(swap_memory=True)`, or the session's `memory_policy="swap"`),
  the device's bytes in use exceed `threshold` times its limit, the value is larger than
  2 KB and it is not already being swapped out (the same array pushed twice), the value is
  copied to pinned host memory on the d2h stream, after an event of the compute stream
  that produced it. Its device buffer is freed by the copy's event callback, not before.
  A push that does not fit while swap-outs are in flight waits for them (as TensorFlow's
  allocator retries) instead of failing: the one place a thread waits on a copy.
- Pops come in the reverse order of pushes (the gradient loop pops key t, then t-1, ...),
  so once pops start, the latest values on the host are copied back on the h2d stream
  ahead of their pops, as many as fit in `prefetch_bytes` (and in the device).
- A pop (`restore`) of a value on the device returns it. A value still being copied back
  is waited for only by the pop that needs it: on the dataflow executor's scheduler the pop
  answers `exec.memory.InFlight`, and the executor delivers it through its completion queue
  when the copy's event fires; elsewhere (compiled programs, StackConcat) the pop blocks on
  the event.

Nothing here blocks a thread while holding the manager's lock, and device callbacks take
the lock only briefly, so copies complete while the executor runs.
"""
from __future__ import annotations

import threading

import numpy as np

from exec.device.base import KB, Device, DeviceOutOfMemory
from exec.memory import InFlight, MemoryManager, may_defer

SMALL_BYTES = 2 * KB  # values this small are never swapped: the copy would cost more than it saves
POLICIES = ("keep", "swap")

# the states of a saved value
ON_DEVICE, SWAPPING_OUT, ON_HOST, SWAPPING_IN, TAKEN = range(5)


class Saved:
    """A saved value: its device buffer, its host copy, where it is and the event of its last copy."""

    __slots__ = ("buf", "host", "nbytes", "state", "out_event", "in_event", "label", "prefetched", "dropped",
                 "swap", "owner")

    def __init__(self, buf, nbytes: int, label: str, swap: bool, owner: str):
        self.buf, self.host, self.nbytes, self.label, self.swap = buf, None, nbytes, label, swap
        self.owner = owner  # the stack's name: values are prefetched per stack, latest first
        self.state = ON_DEVICE
        self.out_event = self.in_event = None
        self.prefetched = False  # copied back ahead of its pop
        self.dropped = False     # popped or freed while its swap-out was still copying


class DeviceMemoryManager(MemoryManager):
    """Saved values on `device`: accounted there, and swapped to host memory by `policy` (module docstring).

    `policy` "keep" swaps only the values of loops built with swap_memory=True, "swap" those of
    every loop. `threshold` is the fraction of the device's limit above which pushes swap;
    `prefetch_bytes` (default: a quarter of the limit) bounds the values copied back ahead of
    their pops."""

    defers = True

    def __init__(self, device: Device, policy: str = "keep", threshold: float = 0.5,
                 prefetch_bytes: int | None = None):
        if policy not in POLICIES:
            raise ValueError(f"memory_policy must be one of {', '.join(map(repr, POLICIES))}, got {policy!r}")
        super().__init__(device.name)
        self.dev = device
        self.policy = policy
        self.threshold = threshold
        limit = device.memory_limit
        self.prefetch_bytes = prefetch_bytes if prefetch_bytes is not None else (limit // 4 if limit else 0)
        self._lock = threading.RLock()  # device callbacks may run inline, under it
        self._on_host: dict[str, list[Saved]] = {}  # stack -> its values on the host, in push order
        self._popped: dict[str, None] = {}  # the stacks popped since their last push: prefetched for
        self._swapping_ids: dict[int, Saved] = {}  # id(array) -> its value being swapped out
        self._ahead = 0           # bytes copied back (or being copied) ahead of their pops
        self.swap_outs = self.swap_ins = self.prefetches = self.waited_pops = self.waited_pushes = 0
        self.popped_swapping_out = 0  # popped before their swap-out finished: used from the device

    # -- push --------------------------------------------------------------------------------
    def save(self, value, swap: bool = False, owner: str = "", key=None):
        if type(value) is not np.ndarray or not value.nbytes:
            return super().save(value, swap)  # numpy scalars and handles: host values, accounted only
        n = value.nbytes
        label = f"the value saved by stack {owner!r} for iteration {key}" if owner else "a saved value"
        dev = self.dev
        try:
            buf = dev.adopt(value, label)
        except DeviceOutOfMemory:
            buf = self._adopt_after_swap_outs(value, label)
        swappable = swap or self.policy == "swap"
        tok = Saved(buf, n, label, swappable, owner)
        with self._lock:
            if self._popped:
                self._popped.pop(owner, None)  # pushed again: the next forward loop
            used = self.bytes_in_use = self.bytes_in_use + n
            self.saves += 1
            if swappable:
                self.swappable_bytes += n
            if used > self.peak_bytes:
                self.peak_bytes = used
            if (swappable and n > SMALL_BYTES and dev.memory_limit
                    and dev.bytes_in_use > self.threshold * dev.memory_limit and id(value) not in self._swapping_ids):
                self._swap_out(tok, value)
        return tok

    def _adopt_after_swap_outs(self, value, label: str):
        """`adopt` once the swap-outs in flight have freed their buffers (TensorFlow's allocator retries
        likewise): where pushes outrun the d2h stream, the push waits rather than fails. Raises
        DeviceOutOfMemory when none are in flight, or when the memory is still short after them."""
        dev = self.dev
        with self._lock:
            in_flight = bool(self._swapping_ids)
        if not in_flight:
            return dev.adopt(value, label)
        self._wait_for_swap_outs()
        self.waited_pushes += 1
        return dev.adopt(value, label)

    def _swap_out(self, tok: Saved, value) -> None:
        dev = self.dev
        dev.d2h.wait(dev.compute.record())  # after the kernel that produced it
        tok.host, ev = dev.copy_to_host(tok.buf, tok.label)
        tok.state, tok.out_event = SWAPPING_OUT, ev
        self._swapping_ids[id(value)] = tok
        self.swap_outs += 1
        ev.on_complete(lambda: self._swapped_out(tok, id(value)))

    def _swapped_out(self, tok: Saved, value_id: int) -> None:
        """The d2h copy of `tok` completed (a device callback): its device buffer goes."""
        with self._lock:
            self._swapping_ids.pop(value_id, None)
            ev = tok.out_event
            self.dev.free(tok.buf, after=ev)
            tok.buf = None
            if tok.dropped:
                self.dev.free(tok.host, after=ev)
                tok.host = None
                return
            tok.state = ON_HOST
            self._on_host.setdefault(tok.owner, []).append(tok)
            if tok.owner in self._popped:
                self._prefetch()

    # -- pop ---------------------------------------------------------------------------------
    def restore(self, token, defer: bool = False):
        if type(token) is not Saved:
            return super().restore(token)
        with self._lock:
            self._popped[token.owner] = None
            self.bytes_in_use -= token.nbytes
            if token.swap:
                self.swappable_bytes -= token.nbytes
            state = token.state
            if state == ON_DEVICE:
                token.state = TAKEN
                value = self._take_from_device(token)
            elif state == SWAPPING_OUT:  # still on the device: the copy's callback frees both buffers
                token.state, token.dropped = TAKEN, True
                value = token.buf.array
                self.popped_swapping_out += 1
            elif state == ON_HOST:  # taken now, so that no prefetch copies it back too
                token.state = TAKEN
                value = None
            else:
                self._ahead -= token.nbytes
                token.state = TAKEN
                value = None
            self._prefetch()
        if value is not None:
            return value
        if state == ON_HOST:  # not prefetched: copied back now
            self._swap_in_on_demand(token)
        ev = token.in_event
        if not ev.query():
            self.waited_pops += 1
            if defer and may_defer():
                return InFlight([ev], lambda: self._swapped_in(token))
            ev.synchronize()  # compiled programs: this thread waits for the copy (exec/README.md)
        return self._swapped_in(token)

    def _take_from_device(self, tok: Saved):
        dev = self.dev
        value = dev.to_numpy(tok.buf, dev.compute)
        dev.free(tok.buf, stream=dev.compute)
        tok.buf = None
        return value

    def _swap_in(self, tok: Saved) -> None:
        dev = self.dev
        dev.h2d.wait(tok.out_event)  # the host copy is complete (it was seen so), but say it to the stream
        tok.buf, tok.in_event = dev.copy_to_device(tok.host, tok.label)
        tok.state = SWAPPING_IN

    def _swap_in_on_demand(self, tok: Saved) -> None:
        with self._lock:
            try:
                self._swap_in(tok)
                tok.state = TAKEN
                self.swap_ins += 1
                return
            except DeviceOutOfMemory:
                if not self._swapping_ids:
                    raise
        self._wait_for_swap_outs()
        with self._lock:
            self._swap_in(tok)
            tok.state = TAKEN
            self.swap_ins += 1

    def _wait_for_swap_outs(self) -> None:
        """Waits until the swap-outs enqueued so far have freed their device buffers."""
        freed = threading.Event()
        # called after the callbacks of the swap-outs before it, which free their device buffers
        self.dev.d2h.record().on_complete(freed.set)
        freed.wait()

    def _swapped_in(self, tok: Saved):
        """The value of `tok`, whose copy back has completed; frees its device and host buffers."""
        dev = self.dev
        with self._lock:
            dev.compute.wait(tok.in_event)
            value = self._take_from_device(tok)
            dev.free(tok.host, after=tok.in_event)
            tok.host = None
        return value

    def _prefetch(self) -> None:
        """Copies back the latest values on the host of the stacks being popped, in turn, within the
        prefetch budget and while the device stays below its swap threshold plus that budget (room
        is left for pushes and for pops that were not prefetched). Called under the lock."""
        dev, limit = self.dev, self.dev.memory_limit
        room = self.threshold * limit + self.prefetch_bytes if limit else 0
        progress = True
        while progress:
            progress = False
            for owner in list(self._popped):
                waiting = self._on_host.get(owner)
                while waiting and waiting[-1].state != ON_HOST:
                    waiting.pop()
                if not waiting:
                    self._on_host.pop(owner, None)
                    continue
                tok = waiting[-1]
                if self._ahead + tok.nbytes > self.prefetch_bytes or dev.bytes_in_use + tok.nbytes > room:
                    return
                waiting.pop()
                self._swap_in(tok)
                tok.prefetched = True
                self._ahead += tok.nbytes
                self.prefetches += 1
                progress = True

    # -- dropped values ------------------------------------------------------------------------
    def free(self, token) -> None:
        if type(token) is not Saved:
            return super().free(token)
        dev = self.dev
        with self._lock:
            self.bytes_in_use -= token.nbytes
            if token.swap:
                self.swappable_bytes -= token.nbytes
            state, token.state = token.state, TAKEN
            if state == ON_DEVICE:
                dev.free(token.buf, stream=dev.compute)
            elif state == SWAPPING_OUT:
                token.dropped = True
            elif state == ON_HOST:
                dev.free(token.host, after=token.out_event)
            elif state == SWAPPING_IN:
                if token.prefetched:
                    self._ahead -= token.nbytes

                def drop():
                    with self._lock:
                        dev.free(token.buf, after=token.in_event)
                        dev.free(token.host, after=token.in_event)
                token.in_event.on_complete(drop)

    def stats(self) -> dict:
        out = super().stats()
        dev = self.dev
        with self._lock:
            out.update(policy=self.policy, device_bytes_in_use=dev.bytes_in_use, device_peak_bytes=dev.peak_bytes,
                       memory_limit=dev.memory_limit, pinned_host_bytes=dev.host_bytes, swap_outs=self.swap_outs,
                       swap_ins=self.swap_ins, prefetches=self.prefetches, popped_swapping_out=self.popped_swapping_out, waited_pops=self.waited_pops,
                       waited_pushes=self.waited_pushes)
        return out
