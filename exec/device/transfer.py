"""Values crossing between the host and a device's partition: copies on the device's copy streams.

`DeviceRendezvous` stands between the executor of a device's partition and the run's rendezvous
(exec/rendezvous.py), so the executor sends and receives as for any device while the values that
live in device memory are copied:

- a Send of a device value records an event on the compute stream after the value's producer,
  makes the d2h stream wait for it and copies the value into a pinned host buffer there; the
  value reaches the rendezvous from the copy's completion callback, so the host's Recv completes
  when the copy's event fires;
- a Recv of a host value copies it on the h2d stream once the rendezvous has it, and hands it to
  the executor from that copy's completion callback (after which the compute stream waits for
  the copy's event).

No executor thread blocks on a copy: both directions finish in event callbacks (device threads).
Host-memory values (`host_memory`: boolean and integer scalars, the predicates, loop counters and
sizes that control flow reads) cross without a copy, as TensorFlow keeps them in host memory: a
loop whose predicate is computed on the host copies nothing per iteration for it.
"""
from __future__ import annotations

import numpy as np

from exec.device.base import Buffer, Device
from exec.rendezvous import Rendezvous


def host_memory(value) -> bool:
    """Whether `value` stays in host memory wherever it is used: a bool or integer scalar."""
    if isinstance(value, (bool, int)):
        return True
    if isinstance(value, (np.generic, np.ndarray)):
        return value.ndim == 0 and value.dtype.kind in "biu"
    return False


class DeviceRendezvous(Rendezvous):
    """The rendezvous of `inner` as seen from the partition of `device` (see the module docstring).
    `copies` counts the copies made, per direction."""

    def __init__(self, inner: Rendezvous, device: Device):
        self.inner = inner
        self.device = device
        self.copies = {"d2h": 0, "h2d": 0}

    def send(self, key: str, value, is_dead: bool) -> None:
        dev = self.device
        if is_dead or host_memory(value) or not dev.holds(value):
            self.inner.send(key, value, is_dead)
            return
        label = f"send {_tensor(key)}"
        array = value if isinstance(value, np.ndarray) or not isinstance(value, np.generic) else np.asarray(value)
        scalar = array.ndim == 0 and isinstance(value, np.generic)
        # the value as a buffer written by its producer's kernel, in compute-stream order (not accounted:
        # it is the kernel's output, which the device's memory accounting does not count)
        buf = Buffer(array, int(array.nbytes), label)
        dev.compute.enqueue(_nothing, writes=[buf], label=f"produce {label}")
        dev.d2h.wait(dev.compute.record())
        host, done = dev.copy_to_host(buf, label)
        self.copies["d2h"] += 1
        inner = self.inner

        def copied() -> None:
            out = host.array
            dev.free(host, after=done)  # the host keeps the array; the device stops counting it
            inner.send(key, out[()] if scalar or out.ndim == 0 else out, False)
        done.on_complete(copied)

    def recv(self, key: str, callback) -> None:
        dev = self.device

        def received(value, is_dead: bool) -> None:
            if is_dead or host_memory(value) or not isinstance(value, (np.ndarray, np.generic, float, complex)):
                callback(value, is_dead)
                return
            label = f"recv {_tensor(key)}"
            array = np.asarray(value)
            if not array.flags.c_contiguous:
                array = array.copy()
            source = Buffer(array, int(array.nbytes), f"host value of {label}", host=True)  # not pinned: not counted
            buf, done = dev.copy_to_device(source, label)
            self.copies["h2d"] += 1

            def copied() -> None:
                out = buf.array
                dev.compute.wait(done)  # the kernels that read it come after the copy
                dev.free(buf, after=done)  # the kernels own the array now; not counted, as their outputs
                callback(out[()] if out.ndim == 0 and isinstance(out, np.ndarray) else out, False)
            done.on_complete(copied)
        self.inner.recv(key, received)

    def abort(self, error: BaseException) -> None:
        self.inner.abort(error)

    @property
    def aborted(self) -> BaseException | None:
        return self.inner.aborted


def _tensor(key: str) -> str:
    return key.split(";")[2]


def _nothing() -> None:
    pass
