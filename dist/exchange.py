"""What the ranks of an MPI job exchange around each run that spans them (docs/design.md, section 11).

A run across ranks is one computation, so:

- **Feeds must agree.** Every rank sends the others a record of each value it feeds (its dtype,
  shape and bytes, or a 16-byte BLAKE2 digest of a value over `EXACT_LIMIT` bytes) as the run
  begins. A rank that gets a record unlike its own aborts the run at once, and every rank raises
  `FeedMismatchError` naming the input and each rank's value. Without it each rank's devices
  computed from that rank's feeds and the results mixed them: rank 0 got rank 1's answer.
- **Graphs must agree.** With its feeds each rank sends a digest of the partitioned graph it runs
  (`graph_digest`: every node's name, op, device, inputs and attributes, Const values included). A
  Python value a graph was built from, not fed, can differ across ranks (a transpile.function's
  static argument: each rank traced its own graph); the ranks' Send/Recv pairs still met by name, and
  rank 1 got rank 0's answer. Now every rank raises `GraphMismatchError`, and exchanges nothing else.
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

import dataclasses
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


class GraphMismatchError(FeedMismatchError):
    """The ranks of an MPI job ran different graphs in one run: a value the graphs were built from, not
    fed (a transpile.function's static argument), differed. A FeedMismatchError: to the caller it is an
    argument given different values on the ranks."""


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
    graph: GraphRecord    # what every rank must run alike
    nodes: tuple          # the nodes of every device's part, in the order `graph` digests them

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
        nodes = tuple(n for part in plan.parts for n in part[1].nodes)
        return cls(tuple((k, plan.feeds[k]) for k in fed), fetches, tuple(variables), GraphRecord.of(plan), nodes)


@dataclass(frozen=True)
class GraphRecord:
    """What a rank runs: the number of nodes of each device's part, and a digest of them all."""

    nodes: tuple          # (device, how many nodes its part has)
    digest: bytes

    @classmethod
    def of(cls, plan) -> GraphRecord:
        h = hashlib.blake2b(digest_size=16)
        for device, part, fetched, fed in plan.parts:
            h.update(repr((device, fetched, fed)).encode())
            for n in part.nodes:
                h.update(_node_text(n).encode())
        h.update(repr([t.name for t in plan.feeds]).encode())
        return cls(tuple((part[0], len(part[1].nodes)) for part in plan.parts), h.digest())

    def show(self) -> str:
        parts = ", ".join(f"{count} on {device}" for device, count in self.nodes)
        return f"{sum(count for _, count in self.nodes)} nodes ({parts}), digest {self.digest.hex()[:12]}"


def _node_text(n) -> str:
    """A node as a text that is the same in every process that built the same node."""
    attrs = ", ".join(f"{k}={_canonical(v)}" for k, v in sorted(n.attrs.items()))
    inputs = ", ".join(t.name for t in n.inputs)
    controls = ", ".join(c.name for c in n.control_inputs)
    return f"{n.name} = {n.op}[{n.device}]({inputs}; {controls}) {{{attrs}}}\n"


def _shown(texts: tuple, k: int, limit: int = 300) -> str:
    """Node `k` of a rank's node texts, for a message: the graph ended before it, or its text, shortened."""
    if k >= len(texts):
        return "no node there (its graph is shorter)"
    text = texts[k].strip()
    return text if len(text) <= limit else text[:limit] + " ..."


def _canonical(value, depth: int = 0) -> str:
    """`value` (a node attribute) as text without what differs between processes (ids, the order of a
    set of strings, which hash randomization decides): numbers and arrays exactly, other objects by their
    type or name."""
    if depth > 8:
        return "..."
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return repr(value)
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.ascontiguousarray(value)
        if arr.dtype.hasobject:
            return f"array({arr.dtype.str}, {arr.shape})"
        if arr.nbytes <= EXACT_LIMIT:  # small ones (a static number) shown, for the mismatch's message
            return f"array({arr.dtype.str}, {arr.shape}, {arr.tolist()!r})"
        return f"array({arr.dtype.str}, {arr.shape}, {hashlib.blake2b(arr.tobytes(), digest_size=16).hexdigest()})"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_canonical(v, depth + 1) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_canonical(k, depth + 1)}: {_canonical(v, depth + 1)}" for k, v in value.items()) + "}"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_canonical(v, depth + 1) for v in value)) + "}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = (f"{f.name}={_canonical(getattr(value, f.name), depth + 1)}" for f in dataclasses.fields(value))
        return f"{type(value).__qualname__}(" + ", ".join(fields) + ")"
    name = getattr(value, "name", None)  # a Tensor, Node, Variable, dtype, ...
    return f"{type(value).__qualname__}:{name}" if isinstance(name, str) else type(value).__qualname__


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
        self._mismatch: FeedMismatchError | None = None

    # -- the graph and the feeds, as the run begins

    def post_feeds(self, feed_values: list) -> None:
        """Sends this rank's graph and feed records to the others and compares theirs as they come."""
        self._records = (self.ex.graph, tuple(FeedRecord.of(feed_values[k]) for k, _ in self.ex.feeds))
        for r in self.others:
            self.channel.send(_key(self.rank, r, "feeds"), self._records, False)
            self._expect(_key(r, self.rank, "feeds"), self._compare_feeds)

    def _compare_feeds(self, key: str, records, is_dead: bool) -> None:
        if records.__class__ is Aborted or records == self._records or isinstance(self._mismatch, GraphMismatchError):
            return
        other = task_of(key.split(";", 1)[0])
        if records[0] != self._records[0]:
            # (over a feed mismatch with another rank: every rank must know whether to exchange results)
            self._mismatch = GraphMismatchError(self._graph_mismatch_message(other, records[0]))
        elif self._mismatch is None:
            self._mismatch = FeedMismatchError(self._mismatch_message(other, records[1]))
        self.run.abort(self._mismatch)  # the others find it too: this stops the run early

    def _graph_mismatch_message(self, other: int, theirs: GraphRecord) -> str:
        shown = {self.rank: self.ex.graph.show(), other: theirs.show()}
        ranks = "; ".join(f"rank {r}: {shown[r]}" for r in sorted(shown))
        return ("the ranks of this MPI job ran different graphs in one run: " + ranks + ". A run across ranks is "
                "one computation, so every rank must build the same graph: a Python value it was built from "
                "differs across the ranks (a transpile.function's static argument, or a Python number argument "
                "it traces as one value at a time; a number, shape or list length read from Python state). "
                "Give every rank the same values (mpi4py's comm.bcast).")

    def _first_difference(self) -> GraphMismatchError:
        """The graph mismatch, naming the first node that differs from another rank's and where it was
        built: every rank sends the others its nodes (as text: on this failure only) and compares."""
        mine = tuple(_node_text(n) for n in self.ex.nodes)
        for r in self.others:
            self.channel.send(_key(self.rank, r, "nodes"), mine, False)
            self._expect(_key(r, self.rank, "nodes"))
        self._wait()
        for r in self.others:
            theirs, _ = self._got[_key(r, self.rank, "nodes")]
            if theirs.__class__ is Aborted or theirs == mine:
                continue
            k = next((j for j, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
            node = self.ex.nodes[k] if k < len(self.ex.nodes) else None
            where = f" (built at {node.source})" if node is not None and node.source else ""
            texts = {self.rank: _shown(mine, k), r: _shown(theirs, k)}
            ranks = "; ".join(f"rank {q}: {texts[q]}" for q in sorted(texts))
            return GraphMismatchError(f"{self._mismatch} The first node that differs{where}: {ranks}")
        return self._mismatch

    def _mismatch_message(self, other: int, records: tuple) -> str:
        mine = self._records[1]
        k = next(j for j, (a, b) in enumerate(zip(mine, records, strict=True)) if a != b)
        tensor = self.ex.feeds[k][1]
        where = f" (created at {tensor.node.source})" if tensor.node.source else ""
        values = {self.rank: mine[k].show(), other: records[k].show()}
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
        Raises FeedMismatchError when the feeds differed (GraphMismatchError, the graphs: then the ranks
        exchange nothing more, since what one sends the other may not expect), else this rank's `error`,
        else the error of a rank whose part failed before computing a fetch this rank needs."""
        self._send_results(results if error is None else None)
        self._wait()  # the others' graphs and feeds, sent as their runs began
        if isinstance(self._mismatch, GraphMismatchError):  # (what this rank sent, the others do not read)
            raise self._first_difference() from None
        for k, device in self.ex.fetches:
            if device not in self.mine:
                self._expect(_key(task_of(device), self.rank, f"fetch:{k}"))
        for j, (device, _) in enumerate(self.ex.variables):
            if device not in self.mine:
                self._expect(_key(task_of(device), self.rank, f"variable:{j}"))
        self._wait()
        self._store_variables()
        if self._mismatch is not None:
            raise self._mismatch from None  # `error` is the abort it caused, here or there
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
