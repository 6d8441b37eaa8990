"""`SimulatedDevice`: the device protocol over numpy, with a worker thread per stream.

It runs the whole device path (swapping, prefetching, events, the happens-before
checker, the timeline) on a machine without a GPU. Each stream is a thread that runs its
operations in order; a copy is `np.copyto` on the copy stream's thread, optionally slowed
to a given bandwidth (`copy_bandwidth`, bytes per second) so that overlap and waiting
show as they would on a PCIe link. Event callbacks run on the thread of the stream that
completes them. Buffers are numpy arrays accounted against `memory_limit`.

Numpy kernels run on the executor's threads, which stand for the compute stream: its
operations run at once on the thread that enqueues them. A value a kernel produced becomes
a device buffer when `adopt` enqueues its production on the compute stream, so copies of
it must wait for the compute stream as on a GPU (the checker counts the order of the
protocol, not what has run).
"""
from __future__ import annotations

import threading
import time
import weakref
from queue import SimpleQueue

import numpy as np

from exec.device.base import Device, Stream


class SimulatedStream(Stream):
    """A stream whose operations run in order on a thread of its own, or (`inline`) on the thread that
    enqueues them, at once: the compute stream, which the executor's threads stand for."""

    def __init__(self, device: "SimulatedDevice", name: str, inline: bool = False):
        super().__init__(device, name)
        self.done = 0    # operations run
        self.called = 0  # operations run whose callbacks ran too
        self.error: BaseException | None = None
        self._cv = threading.Condition(device.lock)
        self._callbacks: list = []  # (seq, callback), waiting for `done` to reach seq
        self._queue: SimpleQueue = SimpleQueue()
        self.inline = inline
        if inline:
            return
        # the thread holds the stream weakly while it waits, so that a dropped device's threads end
        self._thread = threading.Thread(target=_work, args=(weakref.ref(self), self._queue),
                                        name=f"{device.name} {name}", daemon=True)
        self._thread.start()

    def _submit(self, seq: int, fn, label: str) -> None:
        if not self.inline:
            self._queue.put((seq, fn, label))
            return
        # at once, under the device lock: no event of this stream can be recorded before it is done,
        # so no callback waits for it
        tl = self.device.timeline
        t0 = time.perf_counter() if tl is not None else 0.0
        try:
            fn()
        except BaseException as e:  # kept for whoever synchronizes on the stream
            self.error = self.error or e
        self.done = self.called = seq
        if tl is not None:
            tl.span(f"{self.device.name} {self.name} stream", label, t0, time.perf_counter())

    def _run(self, item) -> None:
        device = self.device
        seq, fn, label = item
        t0 = time.perf_counter()
        try:
            fn()
        except BaseException as e:  # kept for whoever synchronizes on the stream
            self.error = self.error or e
        t1 = time.perf_counter()
        tl = device.timeline
        if tl is not None:
            tl.span(f"{device.name} {self.name} stream", label, t0, t1)
        with self._cv:
            self.done = seq
            ready = [cb for s, cb in self._callbacks if s <= seq]
            if ready:
                self._callbacks = [(s, cb) for s, cb in self._callbacks if s > seq]
        for cb in ready:
            self._call(cb)
        with self._cv:  # synchronize returns once the callbacks ran: what they free is free
            self.called = seq
            self._cv.notify_all()

    def _call(self, callback) -> None:
        try:
            callback()
        except BaseException as e:  # a callback's failure is the stream's error, seen on synchronize
            self.error = self.error or e

    def _done(self, seq: int) -> bool:
        return self.done >= seq

    def _wait_for(self, seq: int) -> None:
        with self._cv:
            while self.called < seq:
                self._cv.wait()
        error, self.error = self.error, None  # raised once, to the first to synchronize
        if error is not None:
            raise RuntimeError(f"an operation on the {self.device.name} {self.name} stream failed: "
                               f"{error}") from error

    def _add_callback(self, seq: int, callback) -> None:
        with self._cv:
            if self.done < seq:
                self._callbacks.append((seq, callback))
                return
        self._call(callback)

    def close(self) -> None:
        if not self.inline:
            self._queue.put(None)


def _work(ref, queue: SimpleQueue) -> None:
    while True:
        item = queue.get()
        stream = ref() if item is not None else None
        if stream is None:
            return
        stream._run(item)
        del stream


class SimulatedDevice(Device):
    """A GPU-like device over numpy: worker-thread streams, a memory limit, a happens-before checker.

    `memory_limit` is in bytes (None: unlimited); `copy_bandwidth` (bytes per second, None: as
    fast as memcpy) slows copies as a host-device link would."""

    xp = np

    def __init__(self, memory_limit: int | None = None, copy_bandwidth: float | None = None,
                 name: str = "/gpu:0"):
        super().__init__(name, memory_limit)
        self.copy_bandwidth = copy_bandwidth
        self.compute = SimulatedStream(self, "compute", inline=True)
        self.h2d = SimulatedStream(self, "h2d")
        self.d2h = SimulatedStream(self, "d2h")

    def _empty(self, shape, dtype):
        return np.empty(shape, dtype)

    def _empty_host(self, shape, dtype):
        return np.empty(shape, dtype)

    def _copy(self, dst, src, stream) -> None:
        np.copyto(dst, src)
        if self.copy_bandwidth and stream is not self.compute:
            time.sleep(dst.nbytes / self.copy_bandwidth)

    def to_numpy(self, buf, stream):
        return buf.array

    def close(self) -> None:
        for s in self.streams():
            s.close()

    def __del__(self):
        self.close()
