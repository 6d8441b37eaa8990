"""What a device is: an array module, a compute stream, two copy streams, events, and accounted memory.

A `Device` owns three `Stream`s: `compute` (kernels), `h2d` (host-to-device copies) and
`d2h` (device-to-host copies). Operations on one stream run in the order enqueued;
operations on different streams are ordered only by `Event`s: `event = s.record()`
marks the point reached on `s`, `t.wait(event)` orders what is enqueued on `t` next after
it, and the host learns of completion by `event.query()`, `event.synchronize()` or
`event.on_complete(callback)` (callbacks run on a device thread: the executor never
blocks a thread of its own on a copy).

Device memory is `Buffer`s, accounted against `memory_limit` when allocated (an
allocation beyond it raises `DeviceOutOfMemory` naming what it was for) and released by
`free`, which is ordered like any other use (exec/device/checker.py). Host memory for
copies is `HostBuffer`s (pinned on a GPU). Subclasses supply the streams and the array
operations: `SimulatedDevice` (exec/device/simulated.py), `CupyDevice`
(exec/device/cupy_device.py).
"""
from __future__ import annotations

import math
import threading
import time

import numpy as np

from exec.device.checker import check_enqueue, check_free, join, record_access

KB = 1024


class DeviceOutOfMemory(MemoryError):
    """An allocation beyond a device's memory limit."""


class Buffer:
    """An allocation on a device (or, `host=True`, in its pinned host memory) holding `array`."""

    __slots__ = ("array", "nbytes", "label", "writer", "readers", "freed", "host")

    def __init__(self, array, nbytes: int, label: str, host: bool = False):
        self.array = array
        self.nbytes = nbytes
        self.label = label
        self.writer = None     # (stream, seq, label) of the last write
        self.readers: list = []  # (stream, seq, label) of the reads since
        self.freed = False
        self.host = host

    def __repr__(self) -> str:
        return f"<{'host ' if self.host else ''}buffer {self.label}: {self.nbytes} bytes>"


class Event:
    """A point on a stream: complete once the operations enqueued there before it have run."""

    __slots__ = ("stream", "seq", "clock")

    def __init__(self, stream: "Stream", seq: int, clock: dict):
        self.stream, self.seq, self.clock = stream, seq, clock

    def query(self) -> bool:
        return self.stream._done(self.seq)

    def synchronize(self) -> None:
        """Blocks the calling thread until the event is complete (raises the stream's error, if any)."""
        self.stream._wait_for(self.seq)

    def on_complete(self, callback) -> None:
        """Calls `callback()` once the event is complete: at once if it is, else on a device thread."""
        self.stream._add_callback(self.seq, callback)

    def __repr__(self) -> str:
        return f"<event {self.stream.name}:{self.seq}>"


class Stream:
    """An in-order queue of operations on a device. Subclasses implement `_submit`, `_done`,
    `_wait_for` and `_add_callback`."""

    def __init__(self, device: "Device", name: str):
        self.device = device
        self.name = name
        self.count = 0        # operations enqueued so far
        self.clock: dict = {}  # vector clock of the next operation (exec/device/checker.py)

    def enqueue(self, fn, reads=(), writes=(), label: str = "kernel") -> int:
        """Runs `fn()` on this stream after what was enqueued before; `reads`/`writes` are the buffers it
        touches (checked for ordering). Returns its sequence number."""
        with self.device.lock:
            check_enqueue(self.name, self.clock, reads, writes, label)
            seq = self.count = self.count + 1
            self.clock[self.name] = seq
            record_access(self.name, seq, reads, writes, label)
            self._submit(seq, fn, label)
        return seq

    def record(self) -> Event:
        with self.device.lock:
            return Event(self, self.count, dict(self.clock))

    def wait(self, event: Event) -> None:
        """Orders what is enqueued here from now on after `event`."""
        with self.device.lock:
            join(self.clock, event.clock)
            self._wait_event(event)

    def synchronize(self) -> None:
        self.record().synchronize()

    def _wait_event(self, event: Event) -> None:  # a real device orders its own queue too
        pass

    def _submit(self, seq: int, fn, label: str) -> None:
        """Queues operation `seq` (called under the device lock, so in sequence order)."""
        raise NotImplementedError

    def _done(self, seq: int) -> bool:
        raise NotImplementedError

    def _wait_for(self, seq: int) -> None:
        raise NotImplementedError

    def _add_callback(self, seq: int, callback) -> None:
        raise NotImplementedError


class Device:
    """A device: `xp` (its array module), streams `compute`, `h2d`, `d2h`, and accounted memory.

    Subclasses set `xp` and the streams and implement `_empty`, `_empty_host`, `_copy` and
    `to_numpy`."""

    xp = None

    def __init__(self, name: str, memory_limit: int | None):
        self.name = name
        self.memory_limit = memory_limit
        self.lock = threading.RLock()
        self.bytes_in_use = 0
        self.peak_bytes = 0
        self.host_bytes = 0       # pinned host memory held by copies
        self.timeline = None      # an exec.timeline.Timeline while a traced run records
        self.compute: Stream
        self.h2d: Stream
        self.d2h: Stream

    # -- memory ----------------------------------------------------------------------------
    def _allocate(self, nbytes: int, label: str) -> None:
        with self.lock:
            used = self.bytes_in_use + nbytes
            if self.memory_limit is not None and used > self.memory_limit:
                raise DeviceOutOfMemory(
                    f"out of memory on {self.name} allocating {nbytes} bytes for {label}: {self.bytes_in_use} of "
                    f"its {self.memory_limit} bytes are in use. Lower the batch or sequence length, or let loops "
                    "swap saved values to host memory: transpile.function(..., device=..., memory_policy='swap') "
                    "(or transpile.loop_options(memory_policy='swap') in one loop's body), "
                    "while_loop(swap_memory=True) or Session(memory_policy='swap') with the graph API; "
                    "memory_policy='recompute' saves less instead")
            self.bytes_in_use = used
            if used > self.peak_bytes:
                self.peak_bytes = used
            self._count_memory()

    def _count_memory(self) -> None:
        tl = self.timeline
        if tl is not None:
            tl.counter(f"{self.name} memory in use", time.perf_counter(),
                       {"device bytes": self.bytes_in_use, "pinned host bytes": self.host_bytes})

    def reset_peak(self) -> None:
        with self.lock:
            self.peak_bytes = self.bytes_in_use

    def empty(self, shape, dtype, label: str) -> Buffer:
        """A new device buffer (accounted; raises DeviceOutOfMemory past the limit)."""
        nbytes = _nbytes(shape, dtype)
        self._allocate(nbytes, label)
        return Buffer(self._empty(shape, dtype), nbytes, label)

    def empty_host(self, shape, dtype, label: str) -> Buffer:
        """A new (pinned) host buffer for copies."""
        nbytes = _nbytes(shape, dtype)
        with self.lock:
            self.host_bytes += nbytes
        return Buffer(self._empty_host(shape, dtype), nbytes, label, host=True)

    def adopt(self, array, label: str, will_copy: bool = True) -> Buffer:
        """`array`, a value the compute stream produced, as a device buffer: accounted, its write
        the compute stream's (an upload there when `array` is a host array on a real device).
        Without `will_copy` (no copy will read it: a value kept where it is) the write is not
        enqueued, which saves the stream operation; nothing checks an order no copy depends on."""
        buf = self.empty(array.shape, array.dtype, label) if self._uploads(array) else None
        if buf is None:
            n = int(array.nbytes)
            self._allocate(n, label)
            buf = Buffer(array, n, label)
            if will_copy:
                self.compute.enqueue(_nothing, writes=[buf], label=f"produce {label}")
        else:
            self.compute.enqueue(lambda: self._copy(buf.array, array, self.compute), writes=[buf],
                                 label=f"upload {label}")
        return buf

    def free(self, buf: Buffer, *, stream: Stream | None = None, after: Event | None = None) -> None:
        """Releases `buf`: ordered on `stream` (after what is enqueued there) or after `after`, an event
        the caller saw complete. Raises HappensBeforeError when an operation may still use it."""
        with self.lock:
            if stream is not None:
                check_free(buf, stream.clock, stream.name, f"on the {stream.name} stream")
            else:
                clock = {} if after is None else after.clock
                if after is not None and not after.query():
                    clock = {}
                check_free(buf, clock, None, "by the host" + ("" if after is None else f" after {after!r}"))
            buf.freed = True
            buf.array = None
            if buf.host:
                self.host_bytes -= buf.nbytes
            else:
                self.bytes_in_use -= buf.nbytes
            self._count_memory()

    # -- copies ------------------------------------------------------------------------------
    def copy_to_host(self, buf: Buffer, label: str) -> tuple[Buffer, Event]:
        """Enqueues a copy of device buffer `buf` into a new host buffer on the d2h stream; returns the
        host buffer and the event of the copy's completion. The caller orders it after `buf`'s writer."""
        host = self.empty_host(buf.array.shape, buf.array.dtype, f"host copy of {label}")
        src, dst = buf.array, host.array
        self.d2h.enqueue(lambda: self._copy(dst, src, self.d2h), reads=[buf], writes=[host],
                         label=f"swap out {label}")
        return host, self.d2h.record()

    def copy_to_device(self, host: Buffer, label: str) -> tuple[Buffer, Event]:
        """Enqueues a copy of host buffer `host` into a new device buffer on the h2d stream (raises
        DeviceOutOfMemory when it does not fit); returns the buffer and the copy's completion event."""
        buf = self.empty(host.array.shape, host.array.dtype, label)
        src, dst = host.array, buf.array
        self.h2d.enqueue(lambda: self._copy(dst, src, self.h2d), reads=[host], writes=[buf],
                         label=f"swap in {label}")
        return buf, self.h2d.record()

    def synchronize(self) -> None:
        """Waits for everything enqueued on the device's streams."""
        for s in (self.compute, self.h2d, self.d2h):
            s.synchronize()

    def streams(self) -> tuple:
        return (self.compute, self.h2d, self.d2h)

    # -- values of kernels that run on the device (exec/device/kernels.py) -------------------
    def upload(self, array):
        """A host numpy array that a kernel on this device reads (a constant, a fed value) as an array of
        its `xp`, made on the compute stream. The simulated device's arrays are numpy: itself."""
        return array

    def holds(self, value) -> bool:
        """Whether `value`, a value computed by a kernel of this device's partition, is in device memory
        (so that the host reads it through a copy). On the simulated device every array is."""
        return isinstance(value, (np.ndarray, np.generic))

    def download(self, value):
        """A device value as a numpy value, once the run is over (a fetch): waits for the compute stream."""
        return value

    # -- what subclasses provide ---------------------------------------------------------------
    def _uploads(self, array) -> bool:
        """Whether `adopt` must copy `array` onto the device (a host array on a real device)."""
        return False

    def _empty(self, shape, dtype):
        raise NotImplementedError

    def _empty_host(self, shape, dtype):
        raise NotImplementedError

    def _copy(self, dst, src, stream: Stream) -> None:
        raise NotImplementedError

    def to_numpy(self, buf: Buffer, stream: Stream):
        """The value of device buffer `buf` as a numpy array the host kernels can read, ordered on `stream`.
        The caller has seen the buffer's last write complete (the simulated device returns the array itself)."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}: {self.bytes_in_use} of {self.memory_limit} bytes in use>"


def _nothing() -> None:
    pass


def _nbytes(shape, dtype) -> int:
    return math.prod(shape) * np.dtype(dtype).itemsize  # not np.prod: a call per copy, 20 times slower
