"""The rendezvous: where a Send leaves a value and the matching Recv picks it up.

This is the one interface between the executor and a transport. `LocalRendezvous` (below)
serves devices in one process; an MPI transport implements the same protocol for devices
on other ranks (docs/design.md, "Devices and partitioning").

Protocol (`Rendezvous`):

- `send(key, value, is_dead)` never blocks. A key is sent once per run.
- `recv(key, callback)` never blocks: `callback(value, is_dead)` is called exactly once,
  when the value is there (at once, in the caller's thread, if it already is; else in the
  thread that sends it or that delivers it from another process). A key is received once:
  the value is consumed.
- `abort(error)` fails the run: every pending recv, and every later one, gets
  `callback(Aborted(error), True)`. Later sends are dropped. The first abort's error is kept.
- `take(key)` (optional) returns (value, is_dead) if the value is already there, consuming it,
  else None; the executor then calls `recv`. It saves a callback where Sends run ahead.

Keys are strings built by `rendezvous_key(send_device, recv_device, tensor_name, frame_tag)`;
the frame tag (`frame_tag`) names the dynamic iteration the Send and the Recv run in: the
chain of (frame name, iteration number) from the root, so values of different iterations,
and of different instances of an inner loop, never share a key.
"""
from __future__ import annotations

import threading
from typing import Callable, Iterable


class Aborted:
    """What a Recv's callback gets, as its value with is_dead=True, when the run was aborted."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error

    def __repr__(self) -> str:
        return f"Aborted({self.error!r})"


def rendezvous_key(send_device: str, recv_device: str, tensor_name: str, frame_tag: str) -> str:
    """The key of the value of edge `tensor_name` from `send_device` to `recv_device` in the iteration
    that `frame_tag` names ("" at the top level)."""
    return f"{send_device};{recv_device};{tensor_name};{frame_tag}"


def frame_tag(chain: Iterable[tuple[str, int]]) -> str:
    """The tag of an iteration given as its (frame name, iteration number) pairs from the outermost
    loop in: "while@3|while/inner@0". The executor caches it per iteration (exec/executor.py)."""
    return "|".join(f"{name}@{n}" for name, n in chain)


class Rendezvous:
    """The protocol above; see `LocalRendezvous` for the in-process one."""

    def send(self, key: str, value, is_dead: bool) -> None:
        raise NotImplementedError

    def recv(self, key: str, callback: Callable[[object, bool], None]) -> None:
        raise NotImplementedError

    def abort(self, error: BaseException) -> None:
        raise NotImplementedError

    @property
    def aborted(self) -> BaseException | None:
        """The error of the first `abort`, or None."""
        raise NotImplementedError


class DuplicateKeyError(RuntimeError):
    """A key was sent (or received) twice in one run: two Sends built the same key."""


class LocalRendezvous(Rendezvous):
    """A table key -> the value sent but not yet received, or the callback of a Recv still waiting;
    whichever side comes second completes the pair. One per run: keys are not reused."""

    __slots__ = ("_lock", "_sent", "_waiting", "_error")

    def __init__(self):
        self._lock = threading.Lock()
        self._sent: dict[str, tuple] = {}
        self._waiting: dict[str, Callable] = {}
        self._error: BaseException | None = None

    def send(self, key: str, value, is_dead: bool) -> None:
        with self._lock:
            if self._error is not None:
                return
            callback = self._waiting.pop(key, None)
            if callback is None:
                if key in self._sent:
                    raise DuplicateKeyError(f"rendezvous key {key!r} was sent twice in one run")
                self._sent[key] = (value, is_dead)
                return
        callback(value, is_dead)  # outside the lock: it may send in turn

    def recv(self, key: str, callback: Callable[[object, bool], None]) -> None:
        with self._lock:
            error = self._error
            if error is None:
                got = self._sent.pop(key, None)
                if got is None:
                    if key in self._waiting:
                        raise DuplicateKeyError(f"rendezvous key {key!r} was received twice in one run")
                    self._waiting[key] = callback
                    return
        if error is not None:
            callback(Aborted(error), True)
        else:
            callback(*got)

    def take(self, key: str) -> tuple | None:
        """(value, is_dead) if `key` was sent and not yet received, consuming it; else None (then `recv`).
        Optional in the protocol: the executor uses it, where a transport has it, to skip the callback
        when the value is already there."""
        with self._lock:
            return self._sent.pop(key, None)

    def abort(self, error: BaseException) -> None:
        with self._lock:
            if self._error is not None:
                return
            self._error = error
            waiting, self._waiting = self._waiting, {}
            self._sent.clear()
        for callback in waiting.values():
            callback(Aborted(error), True)

    @property
    def aborted(self) -> BaseException | None:
        return self._error

    def pending(self) -> tuple[list[str], list[str]]:
        """(keys sent but not received, keys received but not sent): what a stuck run waits for."""
        with self._lock:
            return sorted(self._sent), sorted(self._waiting)
