"""`CupyDevice`: the device protocol on a CUDA GPU through CuPy (the optional `gpu` extra).

Streams are CuPy non-blocking streams; every operation is followed by a recorded CUDA
event, so `Event`s of the protocol map to CUDA events and `Stream.wait` to
`cudaStreamWaitEvent`. Host buffers are pinned (cupyx.empty_pinned), so copies on the
copy streams run asynchronously beside the compute stream. Completion callbacks run on a
poller thread that queries the events of the callbacks waiting (CUDA's own host callbacks
may not call CUDA, and a callback here frees buffers). Memory is accounted against
`memory_limit` as on the simulated device (default: the GPU's free memory at creation).

The nodes a session places on this device run the numpy kernels on CuPy arrays, launched on
the compute stream (exec/device/kernels.py); a value saved from the host's kernels is uploaded
on the compute stream when it is saved and downloaded when it is popped (docs/design.md,
"Devices").
"""
from __future__ import annotations

import threading
import time

import cupy as cp
import cupyx
import numpy as np

from exec.device.base import Device, Stream


class CupyStream(Stream):
    def __init__(self, device: "CupyDevice", name: str):
        super().__init__(device, name)
        with device.gpu:
            self.cs = cp.cuda.Stream(non_blocking=True)
        self._events: dict[int, cp.cuda.Event] = {}  # seq -> the CUDA event recorded after it
        self._done_upto = 0
        self.error: BaseException | None = None

    def _submit(self, seq: int, fn, label: str) -> None:
        tl = self.device.timeline
        t0 = time.perf_counter()
        with self.device.gpu, self.cs:
            try:
                fn()  # launches asynchronous work on this stream
            except BaseException as e:
                self.error = self.error or e
            ev = cp.cuda.Event(disable_timing=True)
            ev.record(self.cs)
        self._events[seq] = ev
        if tl is not None:  # the launch, as the host saw it: CUDA runs it later
            tl.span(f"{self.device.name} {self.name} stream", label, t0, time.perf_counter())

    def _done(self, seq: int) -> bool:
        with self.device.lock:
            if seq <= self._done_upto:
                return True
            ev = self._events.get(seq)
            if ev is None or not ev.done:
                return False
            self._done_upto = seq
            for s in [s for s in self._events if s <= seq]:
                del self._events[s]
            return True

    def _wait_for(self, seq: int) -> None:
        with self.device.lock:
            ev = self._events.get(seq) if seq > self._done_upto else None
        if ev is not None:
            ev.synchronize()
        self._done(seq)
        error, self.error = self.error, None  # raised once, to the first to synchronize
        if error is not None:
            raise RuntimeError(f"an operation on the {self.device.name} {self.name} stream failed: "
                               f"{error}") from error

    def _add_callback(self, seq: int, callback) -> None:
        if self._done(seq):
            callback()
        else:
            self.device._poller.add(self, seq, callback)

    def _wait_event(self, event) -> None:
        ev = event.stream._events.get(event.seq)
        if ev is not None:
            self.cs.wait_event(ev)


class _Poller:
    """A thread that calls the callbacks of events once they are complete."""

    def __init__(self):
        self._cv = threading.Condition()
        self._waiting: list = []
        self._thread = threading.Thread(target=self._loop, name="cupy event poller", daemon=True)
        self._thread.start()

    def add(self, stream: CupyStream, seq: int, callback) -> None:
        with self._cv:
            self._waiting.append((stream, seq, callback))
            self._cv.notify()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._waiting:
                    self._cv.wait()
                waiting = self._waiting
                self._waiting = []
            later = []
            for stream, seq, callback in waiting:
                if stream._done(seq):
                    try:
                        callback()
                    except BaseException as e:
                        stream.error = stream.error or e
                else:
                    later.append((stream, seq, callback))
            if later:
                with self._cv:
                    self._waiting = later + self._waiting
                time.sleep(50e-6)


class CupyDevice(Device):
    """GPU `index` through CuPy: compute, h2d and d2h streams, CUDA events, pinned host buffers."""

    xp = cp

    def __init__(self, index: int = 0, memory_limit: int | None = None, name: str | None = None):
        super().__init__(name or f"/gpu:{index}", None)
        self.gpu = cp.cuda.Device(index)
        if memory_limit is None:
            with self.gpu:
                memory_limit = cp.cuda.runtime.memGetInfo()[0]
        self.memory_limit = memory_limit
        self._poller = _Poller()
        self.compute = CupyStream(self, "compute")
        self.h2d = CupyStream(self, "h2d")
        self.d2h = CupyStream(self, "d2h")

    def _uploads(self, array) -> bool:
        return isinstance(array, np.ndarray)

    def upload(self, array):
        with self.gpu, self.compute.cs:
            return cp.asarray(array)

    def holds(self, value) -> bool:
        return isinstance(value, cp.ndarray)

    def download(self, value):
        if not isinstance(value, cp.ndarray):
            return value
        with self.gpu:
            out = value.get(stream=self.compute.cs)
        self.compute.cs.synchronize()
        return out[()] if out.ndim == 0 else out

    def _empty(self, shape, dtype):
        with self.gpu:
            return cp.empty(shape, dtype)

    def _empty_host(self, shape, dtype):
        return cupyx.empty_pinned(shape, dtype)

    def _copy(self, dst, src, stream) -> None:
        cs = stream.cs
        if isinstance(dst, np.ndarray):
            src.get(stream=cs, out=dst, blocking=False)  # into pinned memory: asynchronous
        elif isinstance(src, np.ndarray):
            dst.set(src, stream=cs)
        else:
            dst[...] = src

    def to_numpy(self, buf, stream):
        with self.gpu, stream.cs:
            out = buf.array.get(stream=stream.cs)
        stream.cs.synchronize()
        return out
