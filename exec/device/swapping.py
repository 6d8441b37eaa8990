"""The memory manager of a device: saved loop values as device buffers, swapped to host memory and back.

Paper §5.3 (TensorFlow's stack swapping), on the device protocol of exec/device/base.py:

- A push (`save`) makes the value a device buffer, accounted on the device. When the loop
  allows swapping (`while_loop(swap_memory=True)`, or the session's `memory_policy="swap"`),
  the device's bytes in use with the value exceed `threshold` times its limit and the value
  is larger than 2 KB, the value is copied to pinned host memory on the d2h stream, after
  an event of the compute stream that produced it. Its device buffer is freed by the copy's
  event callback, not before. A value already swapped (the same array pushed again, as a
  loop that saves h_t for one rule and h_{t-1} for another does) is not copied again: the
  push shares the host copy and takes no device memory.
- A push that does not fit while swap-outs are in flight waits for them (as TensorFlow's
  allocator retries) instead of failing.
- Pops come in the reverse order of pushes (the gradient loop pops key t, then t-1, ...),
  so a pop of a stack copies that stack's latest values on the host back on the h2d stream
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
import weakref

import numpy as np

from exec.device.base import KB, Device, DeviceOutOfMemory
from exec.memory import InFlight, MemoryManager, may_defer

SMALL_BYTES = 2 * KB  # values this small are never swapped: the copy would cost more than it saves
POLICIES = ("keep", "swap")

# the states of a saved value
ON_DEVICE, SWAPPING_OUT, ON_HOST, SWAPPING_IN, TAKEN = range(5)


class HostCopy:
    """A value's copy in pinned host memory, shared by the pushes of that value: `buf`, the event
    of the d2h copy that fills it, how many saved values use it, and the last copy back that
    reads it (the host buffer is freed after that one, when nothing uses it any more)."""

    __slots__ = ("buf", "event", "refs", "done", "last_read", "source", "key")

    def __init__(self, buf, event, source, key: int):
        self.buf, self.event, self.refs, self.done = buf, event, 1, False
        self.last_read = event
        self.source = source  # a weak reference to the array it copies
        self.key = key        # id of that array, its key in DeviceMemoryManager._copies


class Saved:
    """A saved value: its device buffer (None while it has none), its host copy, and where it is."""

    __slots__ = ("buf", "host", "nbytes", "state", "in_event", "label", "prefetched", "dropped", "swap", "owner")

    def __init__(self, buf, nbytes: int, label: str, swap: bool, owner: str):
        self.buf, self.host, self.nbytes, self.label, self.swap = buf, None, nbytes, label, swap
        self.owner = owner  # the stack's name: values are prefetched per stack, latest first
        self.state = ON_DEVICE
        self.in_event = None
        self.prefetched = False  # copied back ahead of its pop
        self.dropped = False     # popped or freed while its swap-out was still copying


class DeviceMemoryManager(MemoryManager):
    """Saved values on `device`: accounted there, and swapped to host memory by `policy` (module docstring).

    `policy` "keep" swaps only the values of loops built with swap_memory=True, "swap" those of
    every loop. `threshold` is the fraction of the device's limit above which pushes swap;
    `prefetch_bytes` (default: a quarter of the limit) bounds the values copied back ahead of
    their pops."""

    defers = True

    def __init__(self, device: Device, policy: str = "keep", threshold: float = 0.7,
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
        self._copies: dict[int, HostCopy] = {}  # id(array) -> its host copy, while one is used
        self._swapping = 0        # swap-outs in flight
        self._ahead = 0           # bytes copied back (or being copied) ahead of their pops
        self.swap_outs = self.shared_swaps = self.swap_ins = self.prefetches = 0
        self.popped_swapping_out = self.waited_pops = self.waited_pushes = 0

    # -- push --------------------------------------------------------------------------------
    def save(self, value, swap: bool = False, owner: str = "", key=None):
        if type(value) is not np.ndarray or not value.nbytes:
            return super().save(value, swap)  # numpy scalars and handles: host values, accounted only
        n = value.nbytes
        label = f"the value saved by stack {owner!r} for iteration {key}" if owner else "a saved value"
        dev = self.dev
        swappable = swap or self.policy == "swap"
        if swappable and n > SMALL_BYTES and self._copies:
            tok = self._share_host_copy(value, n, label, owner)
            if tok is not None:
                return tok
        # decided before the value is on the device (by the bytes in use with it), so that a kept value
        # costs no compute-stream operation (Device.adopt)
        limit = dev.memory_limit
        swaps = swappable and n > SMALL_BYTES and limit and dev.bytes_in_use + n > self.threshold * limit
        try:
            buf = dev.adopt(value, label, swaps)
        except DeviceOutOfMemory:
            buf = self._adopt_after_swap_outs(value, label, swaps)
        tok = Saved(buf, n, label, swappable, owner)
        with self._lock:
            self._count_save(tok)
            if swaps:
                self._swap_out(tok, value)
        return tok

    def _count_save(self, tok: Saved) -> None:
        if self._popped:
            self._popped.pop(tok.owner, None)  # pushed again: the next forward loop
        used = self.bytes_in_use = self.bytes_in_use + tok.nbytes
        self.saves += 1
        if tok.swap:
            self.swappable_bytes += tok.nbytes
        if used > self.peak_bytes:
            self.peak_bytes = used

    def _share_host_copy(self, value, n: int, label: str, owner: str) -> Saved | None:
        """A saved value for `value` on the host copy it already has (None if it has none)."""
        with self._lock:
            hc = self._copies.get(id(value))
            if hc is None or hc.source() is not value:
                return None
            tok = Saved(None, n, label, True, owner)
            tok.host = hc
            hc.refs += 1
            self._count_save(tok)
            self.shared_swaps += 1
            if hc.done:
                tok.state = ON_HOST
                self._on_host.setdefault(owner, []).append(tok)
            else:
                tok.state = SWAPPING_OUT
                self._swapping += 1
                hc.event.on_complete(lambda: self._swapped_out(tok, hc))
            return tok

    def _adopt_after_swap_outs(self, value, label: str, swaps: bool):
        """`adopt` once the swap-outs in flight have freed their buffers (TensorFlow's allocator retries
        likewise): where pushes outrun the d2h stream, the push waits rather than fails. Raises
        DeviceOutOfMemory when none are in flight, or when the memory is still short after them."""
        if self._swapping:
            self._wait_for_swap_outs()
            self.waited_pushes += 1
        return self.dev.adopt(value, label, swaps)

    def _wait_for_swap_outs(self) -> None:
        """Waits until the swap-outs enqueued so far have freed their device buffers."""
        freed = threading.Event()
        # called after the callbacks of the swap-outs before it, which free their device buffers
        self.dev.d2h.record().on_complete(freed.set)
        freed.wait()

    def _swap_out(self, tok: Saved, value) -> None:
        dev = self.dev
        dev.d2h.wait(dev.compute.record())  # after the kernel that produced it
        buf, ev = dev.copy_to_host(tok.buf, tok.label)
        tok.host = hc = HostCopy(buf, ev, weakref.ref(value), id(value))
        self._copies[hc.key] = hc
        tok.state = SWAPPING_OUT
        self._swapping += 1
        self.swap_outs += 1
        ev.on_complete(lambda: self._swapped_out(tok, hc))

    def _swapped_out(self, tok: Saved, hc: HostCopy) -> None:
        """The d2h copy `hc` of `tok`'s value completed (a device callback): its device buffer goes."""
        with self._lock:
            self._swapping -= 1
            hc.done = True
            if tok.state == TAKEN and not tok.dropped:
                return  # a value sharing the copy, popped and copied back meanwhile (see restore)
            if tok.buf is not None:  # the buffer the copy read
                self.dev.free(tok.buf, after=hc.event)
                tok.buf = None
            if tok.dropped:
                self._release(tok)
                return
            tok.state = ON_HOST
            self._on_host.setdefault(tok.owner, []).append(tok)
            if tok.owner in self._popped:
                self._prefetch()

    def _release(self, tok: Saved) -> None:
        """`tok` no longer uses its host copy; the copy is freed when nothing does (under the lock)."""
        hc, tok.host = tok.host, None
        hc.refs -= 1
        if hc.refs:
            return
        if self._copies.get(hc.key) is hc:
            del self._copies[hc.key]
        ev = hc.last_read
        if ev.query():
            self.dev.free(hc.buf, after=ev)
        else:  # a copy back for another pop of the value still reads it
            ev.on_complete(lambda: self.dev.free(hc.buf, after=ev))

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
            token.state = TAKEN  # so that no prefetch copies it back too
            if state == ON_DEVICE:
                value = self._take_from_device(token)
            elif state == SWAPPING_OUT and (token.buf is not None or token.host.source() is not None):
                # still on the device: the copy's callback frees what it used
                token.dropped = True
                value = (self.dev.to_numpy(token.buf, self.dev.compute) if token.buf is not None
                         else token.host.source())
                self.popped_swapping_out += 1
            else:
                if state == SWAPPING_OUT:  # a shared copy whose array is gone: the copy is done
                    state = ON_HOST
                value = None
                if state == SWAPPING_IN:
                    self._ahead -= token.nbytes
            if self._on_host:
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
        dev, hc = self.dev, tok.host
        dev.h2d.wait(hc.event)  # the host copy is complete (it was seen so), but say it to the stream
        tok.buf, tok.in_event = dev.copy_to_device(hc.buf, tok.label)
        hc.last_read = tok.in_event  # the latest read of the host copy: on one stream, the last to finish
        self.swap_ins += 1

    def _swap_in_on_demand(self, tok: Saved) -> None:
        with self._lock:
            try:
                return self._swap_in(tok)
            except DeviceOutOfMemory:
                if not self._swapping:
                    raise
        self._wait_for_swap_outs()  # as a push does (_adopt_after_swap_outs)
        with self._lock:
            self._swap_in(tok)

    def _swapped_in(self, tok: Saved):
        """The value of `tok`, whose copy back has completed; frees its device buffer and releases its host copy."""
        with self._lock:
            self.dev.compute.wait(tok.in_event)
            value = self._take_from_device(tok)
            self._release(tok)
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
                tok.state = SWAPPING_IN
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
                self._release(token)
            elif state == SWAPPING_IN:
                if token.prefetched:
                    self._ahead -= token.nbytes

                def drop():
                    with self._lock:
                        dev.free(token.buf, after=token.in_event)
                        self._release(token)
                token.in_event.on_complete(drop)

    def stats(self) -> dict:
        out = super().stats()
        dev = self.dev
        with self._lock:
            out.update(policy=self.policy, device_bytes_in_use=dev.bytes_in_use, device_peak_bytes=dev.peak_bytes,
                       memory_limit=dev.memory_limit, pinned_host_bytes=dev.host_bytes, swap_outs=self.swap_outs,
                       shared_swaps=self.shared_swaps, swap_ins=self.swap_ins, prefetches=self.prefetches,
                       popped_swapping_out=self.popped_swapping_out, waited_pops=self.waited_pops,
                       waited_pushes=self.waited_pushes)
        return out
