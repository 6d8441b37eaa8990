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
from dataclasses import dataclass
from typing import Callable, Iterable

from exec.compiled.runtime import describe_iterations
from graph.op_names import RECV


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


@dataclass(frozen=True, slots=True)
class RendezvousKey:
    """A key's fields (see `rendezvous_key`): the edge's devices, its tensor and the iteration it is of."""

    send_device: str
    recv_device: str
    tensor_name: str
    frame_tag: str

    @classmethod
    def parse(cls, key: str) -> RendezvousKey | None:
        """The fields of a key `rendezvous_key` built, or None for any other string."""
        parts = key.split(";")
        return cls(*parts) if len(parts) == 4 else None

    def iterations(self) -> list[tuple[int, str]]:
        """The (iteration, frame name) pairs of its frame tag, innermost first."""
        pairs = [part.rpartition("@") for part in self.frame_tag.split("|") if part]
        return [(int(n), name) for name, _, n in reversed(pairs)]


def describe_key(key: str, graph) -> str:
    """What the value under `key` is, in the user's terms, for errors about a value that did not come:
    "the value of Add computed at /path/f.py:5, sent from /task:1/cpu:0 to /task:0/cpu:0, in iteration
    12 of the while loop at /path/f.py:3 (frame while)". `graph` is the partitioned graph whose Send and
    Recv the key joins; the key itself where that graph lacks them."""
    fields = RendezvousKey.parse(key)
    recv = _recv_of(fields, graph) if fields is not None else None
    if recv is None:
        return f"the value under rendezvous key {key!r}"
    value = _sent_value(fields.tensor_name, graph)
    text = f"{_describe_value(value, recv)}, sent from {fields.send_device} to {fields.recv_device}"
    iterations = fields.iterations()
    if iterations:
        text += ", " + describe_iterations(recv, iterations)
    return text


def _describe_value(value, recv) -> str:
    """The sent value as the user knows it (a loop variable, an input), else by its op and full file:line
    (a rank's log is read away from the code, so the path is kept); a control dependency's signal by the
    op it waits for."""
    where = f" at {recv.source}" if recv.source is not None else ""
    if value is None:
        return f"the signal that the op built{where} ran (a control dependency)"
    named = value.describe()
    source = value.node.source
    if source is None or named != f"the value computed at {source.short}":
        return f"{named} ({value.node.op}{where})"
    return f"the value of {value.node.op} computed at {source}"


def _recv_of(fields: RendezvousKey, graph):
    """The Recv node of `graph` that receives the key's value, or None."""
    for node in graph.nodes:
        if node.op == RECV and node.attrs["tensor_name"] == fields.tensor_name \
                and node.attrs["send_device"] == fields.send_device and node.attrs["recv_device"] == fields.recv_device:
            return node
    return None


def _sent_value(tensor_name: str, graph):
    """The tensor a key's `tensor_name` names in `graph`, or None (a control dependency's dummy value)."""
    if not tensor_name.rpartition(":")[2].isdigit():
        return None
    try:
        return graph.get_tensor(tensor_name)
    except (KeyError, IndexError):
        return None


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
