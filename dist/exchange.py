"""What the ranks of an MPI job exchange around each run that spans them (docs/design.md, section 11).

A run across ranks is one computation, so:

- **Feeds must agree.** Every rank sends the others a record of each value it feeds (its dtype,
  shape and bytes, or a 16-byte BLAKE2 digest of a value over `EXACT_LIMIT` bytes) as the run
  begins. A rank that gets a record unlike its own aborts the run at once, and every rank raises
  `FeedMismatchError` naming the input and each rank's value. Without it each rank's devices
  computed from that rank's feeds and the results mixed them: rank 0 got rank 1's answer.
- **Fetches and Variables are shared.** When its devices are done (the run succeeded or not), each
  rank sends the others the values it fetched, and the current value of every Variable that its
  devices' parts write; each rank stores those into its own replica of the Variable. After `run`
  returns or raises, `v.value`, `graph.save` and `Function.save` therefore give every Variable's
  value on the rank that owns it, on every rank (before, a rank kept the initial values of the
  Variables placed on other ranks).

These messages travel in a step of their own, the run's step + 1, which an aborted run leaves open:
each rank waits for every message it expects, so the ranks agree on how the run ended.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

import numpy as np

from exec.rendezvous import Aborted, Rendezvous, rendezvous_key
from graph.devices import task_of

# a fed value of at most this many bytes is compared by its bytes, and shown in a mismatch's message
EXACT_LIMIT = 64


class FeedMismatchError(ValueError):
    """The ranks of an MPI job fed an input different values in one run."""


@dataclass(frozen=True)
class FeedRecord:
    """What a rank fed one input: dtype, shape, and the bytes (`exact`) or their digest. Values agree when
    their bytes do: 0.0 and -0.0 differ (1 / x tells them apart), a NaN equals itself."""

    dtype: str
    shape: tuple
    data: bytes
    exact: bool

    @classmethod
    def of(cls, value) -> FeedRecord:
        if not isinstance(value, (np.ndarray, np.generic, bool, int, float, complex)):
            return cls(type(value).__name__, (), b"", False)  # a handle (variant): not compared by content
        arr = np.asarray(value)
        if arr.dtype.hasobject:
            return cls(type(value).__name__, (), b"", False)
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        if arr.nbytes <= EXACT_LIMIT:
            return cls(arr.dtype.str, arr.shape, arr.tobytes(), True)
        return cls(arr.dtype.str, arr.shape, hashlib.blake2b(arr.view(np.uint8), digest_size=16).digest(), False)

    def show(self) -> str:
        if self.exact:
            value = np.frombuffer(self.data, dtype=np.dtype(self.dtype)).reshape(self.shape)
            return np.array2string(value, threshold=8) if value.ndim else repr(value[()].item())
        if not self.data:
            return f"a {self.dtype}"
        return f"a {np.dtype(self.dtype)} array of shape {self.shape}, digest {self.data.hex()[:12]}"


@dataclass(frozen=True)
class RunExchange:
    """What the ranks exchange around runs of one DevicesPlan (worked out once per plan)."""

    feeds: tuple          # (index in the run's feed values, the fed tensor) of each feed the run uses
    fetches: tuple        # (fetch index, the device that computes it)
    variables: tuple      # (device, Variable) of each Variable a part writes, in one order on every rank

    @classmethod
    def of(cls, plan) -> RunExchange:
        """`plan` (exec.multi_device.DevicesPlan): its parts are (device, plan, fetch indices, feed indices)."""
        fed = sorted({k for part in plan.parts for k in part[3]})
        fetches = tuple((k, part[0]) for part in plan.parts for k in part[2])
        variables, seen = [], set()
        for part in plan.parts:
            for n in part[1].nodes:
                v = n.attrs.get("variable")
                if getattr(v, "is_variable", False) and n.op != "ReadVariable" and id(v) not in seen:
                    seen.add(id(v))
                    variables.append((part[0], v))
        return cls(tuple((k, plan.feeds[k]) for k in fed), fetches, tuple(variables))


def exchange_of(plan) -> RunExchange:
    """The plan's RunExchange, made on its first run and kept on it."""
    if plan.exchange is None:
        plan.exchange = RunExchange.of(plan)
    return plan.exchange


def _key(sender: int, receiver: int, what: str) -> str:
    return rendezvous_key(f"/task:{sender}/cpu:0", f"/task:{receiver}/cpu:0", what, "")


class Exchange:
    """One run's messages between this rank (`rank` of `size`, running the parts of the devices `mine`)
    and the others, on the rendezvous `channel` of the run's second step; `run` is the rendezvous of
    the run itself, aborted when the feeds differ."""

    def __init__(self, ex: RunExchange, rank: int, size: int, mine: set, channel: Rendezvous, run: Rendezvous):
        self.ex, self.rank, self.mine, self.channel, self.run = ex, rank, mine, channel, run
        self.others = [r for r in range(size) if r != rank]
        self._arrived = threading.Condition()
        self._got: dict[str, tuple] = {}
        self._expected = 0
        self._records: tuple = ()
        self._mismatch: str | None = None

    # -- feeds, as the run begins

    def post_feeds(self, feed_values: list) -> None:
        """Sends this rank's feed records to the others and compares theirs as they come."""
        if not self.ex.feeds:
            return
        self._records = tuple(FeedRecord.of(feed_values[k]) for k, _ in self.ex.feeds)
        for r in self.others:
            self.channel.send(_key(self.rank, r, "feeds"), self._records, False)
            self._expect(_key(r, self.rank, "feeds"), self._compare_feeds)

    def _compare_feeds(self, key: str, records, is_dead: bool) -> None:
        if records.__class__ is Aborted or records == self._records or self._mismatch is not None:
            return
        self._mismatch = self._mismatch_message(task_of(key.split(";", 1)[0]), records)
        self.run.abort(FeedMismatchError(self._mismatch))  # the others find it too: this stops the run early

    def _mismatch_message(self, other: int, records: tuple) -> str:
        k = next(j for j, (a, b) in enumerate(zip(self._records, records, strict=True)) if a != b)
        tensor = self.ex.feeds[k][1]
        where = f" (created at {tensor.node.source})" if tensor.node.source else ""
        values = {self.rank: self._records[k].show(), other: records[k].show()}
        ranks = "; ".join(f"rank {r}: {values[r]}" for r in sorted(values))
        return (f"the ranks of this MPI job fed different values to {tensor.describe()}{where} in one run: {ranks}. "
                "A run across ranks is one computation, so every rank must feed each input the same value: "
                "compute it alike on every rank, or send rank 0's to the others (mpi4py's comm.bcast). For "
                "data-parallel work, each rank with a batch of its own, build a graph that names one device (or "
                "none): it runs whole on each rank, with that rank's feeds")

    # -- fetches and Variables, as the run ends

    def finish(self, results: list | None, error: BaseException | None) -> list:
        """Sends what this rank fetched (dead tokens when its part failed with `error`) and the Variables
        its devices write, receives the others', stores their Variables here and returns every fetch.
        Raises FeedMismatchError when the feeds differed, else this rank's `error`, else the error of a
        rank whose part failed before computing a fetch this rank needs."""
        self._send_results(results if error is None else None)
        for k, device in self.ex.fetches:
            if device not in self.mine:
                self._expect(_key(task_of(device), self.rank, f"fetch:{k}"))
        for j, (device, _) in enumerate(self.ex.variables):
            if device not in self.mine:
                self._expect(_key(task_of(device), self.rank, f"variable:{j}"))
        self._wait()
        self._store_variables()
        if self._mismatch is not None:
            raise FeedMismatchError(self._mismatch) from None  # `error` is the abort it caused, here or there
        if error is not None:
            raise error
        return self._fetched(results)

    def _send_results(self, results: list | None) -> None:
        for r in self.others:
            for k, device in self.ex.fetches:
                if device in self.mine:
                    self.channel.send(_key(self.rank, r, f"fetch:{k}"), None if results is None else results[k],
                                      results is None)
            for j, (device, v) in enumerate(self.ex.variables):
                if device in self.mine:
                    self.channel.send(_key(self.rank, r, f"variable:{j}"), v.value, False)

    def _store_variables(self) -> None:
        for j, (device, v) in enumerate(self.ex.variables):
            if device in self.mine:
                continue
            value, is_dead = self._got[_key(task_of(device), self.rank, f"variable:{j}")]
            if value.__class__ is Aborted:
                continue  # the exchange itself failed (a rank gone): _fetched raises
            new = np.asarray(value, dtype=v.dtype)
            if new.base is not None or not new.flags.owndata:  # a small value is a view of the message
                new = new.copy()
            new.setflags(write=False)
            with v.update_lock:
                v.value = new

    def _fetched(self, results: list) -> list:
        if self.channel.aborted is not None:  # a rank gone, or the exchange timed out
            raise self.channel.aborted
        for k, device in self.ex.fetches:
            if device in self.mine:
                continue
            value, is_dead = self._got[_key(task_of(device), self.rank, f"fetch:{k}")]
            if is_dead:  # the part that computes it failed; its rank's abort came before this
                raise self.run.aborted or RuntimeError(f"the run failed on rank {task_of(device)}")
            results[k] = value
        return results

    # -- receiving

    def _expect(self, key: str, then=None) -> None:
        with self._arrived:
            self._expected += 1

        def arrived(value, is_dead):
            if then is not None:
                then(key, value, is_dead)
            with self._arrived:
                self._got[key] = (value, is_dead)
                self._arrived.notify()
        self.channel.recv(key, arrived)

    def _wait(self) -> None:
        # every recv completes: with its value, or with Aborted when the channel's timeout or a rank's
        # exit aborts it
        with self._arrived:
            self._arrived.wait_for(lambda: len(self._got) == self._expected)
