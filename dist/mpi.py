"""The rendezvous across MPI ranks: task k of a device name ("/task:k/cpu:0") is rank k.

`MpiRendezvous(comm)` implements the rendezvous protocol of exec/rendezvous.py (send, recv with
a callback, abort) for one run ("step") of a partitioned graph on this rank:

- a value whose receiving device is on this rank stays in memory (the local table);
- any other goes to the owning rank as one small header message, followed, for an array over
  `wire.INLINE_LIMIT` bytes, by the raw buffer (dist/wire.py); dead tokens travel as a header;
- one communication thread per process (`MpiTransport`) receives everything addressed to this
  rank and feeds the table of the message's step, so a Recv posted before its Send and a Send
  arriving before its Recv both meet; values of a step this rank has not begun wait in a table
  created on arrival.

Sends go out from the thread that sends (MPI_THREAD_MULTIPLE), with nonblocking Isends whose
buffers are kept until MPI is done with them: nothing on the sending side waits for the
receiver. The receive thread polls with a nonblocking matched probe, yielding the GIL between
polls, and backs off to short sleeps when no message came for a while. (A thread parked in a
blocking probe was 4-10x slower per message here: MPICH's blocking progress holds the lock
that the sending threads' Isends need.)

Failure. `abort(error)` fails every pending and later recv of the step on this rank and sends an
abort message to every other rank, whose rendezvous fail the same way with a `RemoteRunError`
naming the rank and carrying the first error's text (which names the node and the user's line).
A recv waiting longer than `timeout` seconds aborts the step with a `RendezvousTimeout` naming
the key, so a rank whose peer hangs fails instead of waiting for ever; a rank that dies takes the
job down through mpiexec (`dist.launch` and a plain `mpiexec` both do that), which the timeout
backs up. A process that exits says goodbye to the others and waits (a few seconds at most) until
each has seen it: a rank still waiting for one of its values fails, naming the value, before the
launcher can end it.
"""
from __future__ import annotations

import atexit
import itertools
import os
import pickle
import sys
import threading
import time
from collections import deque
from typing import Callable

import numpy as np

from dist import wire
from dist.exchange import Exchange, exchange_of
from exec import multi_device
from exec.rendezvous import LocalRendezvous, Rendezvous, describe_key
from graph.devices import task_of

# MPI tags: a value's header, an abort of a step, the message that stops the receive thread, a
# rank's goodbye as its process exits and the answer that it was seen; payload buffers take tags
# from _FIRST_PAYLOAD_TAG on, one per message in flight
_VALUE, _ABORT, _STOP, _BYE, _BYE_SEEN = 1, 2, 3, 4, 5
_FIRST_PAYLOAD_TAG = 16
# the default for `timeout`; FLOWGRAPH_RECV_TIMEOUT (seconds) overrides it
DEFAULT_TIMEOUT = 600.0
# the receive thread's polling: it spins (yielding the GIL) until _SPIN_S after the last activity (a
# message, a send, a recv posted), then naps, then dozes. Napping while a run goes on cost 3-4x in
# loop iterations/s (bench/dist_loop_mpi.py), so a run counts as activity throughout (`busy`).
_SPIN_S, _NAP_S, _DOZE_AFTER_S, _DOZE_S = 0.05, 0.0002, 0.5, 0.002
# how long an exiting process waits for the other ranks to see its goodbye (a rank killed meanwhile
# never answers)
_FAREWELL_S = 5.0


class RemoteRunError(RuntimeError):
    """The run failed on another rank; the message is that rank's error."""

    def __init__(self, rank: int, message: str):
        super().__init__(f"the run failed on rank {rank}: {message}")
        self.rank = rank


class RendezvousTimeout(RuntimeError):
    """A value this rank waits for did not come within the rendezvous timeout."""


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:  # the dist extra is optional
        raise ImportError("running across processes needs mpi4py and an MPI: pip install -e '.[dist]' "
                          "(mpi4py and the mpich wheel)") from e
    return MPI


def _send_task(key: str) -> int:
    # rendezvous_key(send_device, recv_device, tensor_name, frame_tag) joins its fields with ";"
    return task_of(key.split(";", 1)[0])


def _abort_job_on_uncaught_exception(MPI) -> None:
    """An exception that ends this rank's script ends the whole job, as `python -m mpi4py` makes it.

    Under a plain `mpiexec python script.py`, a rank that exits with an error would otherwise
    leave the others waiting for its values until the rendezvous timeout.
    """
    previous = sys.excepthook
    if getattr(previous, "_flowgraph_mpi", False):
        return

    def hook(kind, value, tb):
        previous(kind, value, tb)
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)

    hook._flowgraph_mpi = True
    sys.excepthook = hook


class MpiTransport:
    """One process's MPI traffic: the receive thread and the tables of the steps it feeds.

    Made once per communicator (`MpiTransport.of(comm)`); closed when the process exits.
    """

    _instances: dict = {}
    _lock = threading.Lock()

    @classmethod
    def of(cls, comm=None) -> MpiTransport:
        MPI = _mpi()
        comm = comm if comm is not None else MPI.COMM_WORLD
        with cls._lock:
            t = cls._instances.get(id(comm))
            if t is None:
                t = cls._instances[id(comm)] = cls(comm)
            return t

    def __init__(self, comm, local_factory=None):
        MPI = _mpi()
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            raise RuntimeError("the MPI rendezvous sends from executor threads and needs MPI_THREAD_MULTIPLE; "
                               "leave mpi4py.rc.thread_level at its default ('multiple')")
        self.MPI = MPI
        # a duplicate, so our tags never meet the user's own messages on COMM_WORLD
        self.comm = comm.Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self._local_factory = local_factory or LocalRendezvous
        self._tables: dict[int, object] = {}
        # the steps ended here: every step up to _finished_below, and those in _finished (the set
        # stays small: steps end in about the order they are made)
        self._finished: set[int] = set()
        self._finished_below = 0
        self._aborted: dict[int, BaseException] = {}
        self._lock = threading.Lock()
        self._inflight: deque = deque()
        self._payload_tags = itertools.cycle(range(_FIRST_PAYLOAD_TAG, min(MPI.TAG_UB, 1 << 28)))
        self._owner_cache: dict[str, int] = {}
        # ranks whose process has exited: everything they sent came before their goodbye, so a
        # value still awaited from one of them will never come
        self.gone: set[int] = set()
        self._saw_goodbye: set[int] = set()  # the ranks that answered this rank's goodbye
        self._farewells = threading.Condition(threading.Lock())
        self._steps = itertools.count(1)
        self.watchdog = _Watchdog(self.rank)
        self.busy = 0  # the runs (steps) going on in this process: the receive thread spins meanwhile
        self.last_activity = time.monotonic()
        self._thread = threading.Thread(target=self._receive_loop, name=f"mpi-receive-{self.rank}", daemon=True)
        self._thread.start()
        # stop the thread before mpi4py finalizes MPI (atexit runs the later registration first)
        atexit.register(self.close)
        if self.size > 1:
            _abort_job_on_uncaught_exception(MPI)

    # -- the steps' tables

    def table(self, step: int, arriving: bool = False):
        """The local table of `step`, made on first use (by this rank or by an arriving message);
        None for a message `arriving` for a step that ended here."""
        with self._lock:
            t = self._tables.get(step)
            if t is None:
                if arriving and self.finished(step):
                    return None
                t = self._tables[step] = self._local_factory()
                if step in self._aborted:
                    t.abort(self._aborted[step])
            return t

    def next_step(self) -> int:
        """The number of the next step made in this process: 1, 2, ... (the same on every rank)."""
        return next(self._steps)

    def running(self, change: int) -> None:
        """Counts the steps going on (+1 as one begins, -1 as it ends)."""
        with self._lock:
            self.busy += change
            self.last_activity = time.monotonic()

    def finish(self, step: int) -> None:
        """Drops the table of a step that ended on this rank; stray messages for it are dropped."""
        with self._lock:
            self._tables.pop(step, None)
            self._finished.add(step)
            while self._finished_below + 1 in self._finished:
                self._finished_below += 1
                self._finished.discard(self._finished_below)
            self._aborted.pop(step, None)

    def finished(self, step: int) -> bool:
        return step <= self._finished_below or step in self._finished

    # -- sending

    def owner(self, key: str) -> int:
        """The rank of the device that receives `key` (cached per device name: keys differ per iteration)."""
        parts = key.split(";", 2)
        if len(parts) < 3:
            raise ValueError(f"{key!r} is not a rendezvous key (exec.rendezvous.rendezvous_key builds them)")
        rank = self._owner_cache.get(parts[1])
        if rank is None:
            rank = self._owner_cache[parts[1]] = task_of(parts[1])
        return rank

    def post(self, dest: int, step: int, key: str, value, is_dead: bool) -> None:
        """Sends (key, value, is_dead) of `step` to rank `dest` without waiting for it to arrive."""
        if not 0 <= dest < self.size:
            raise RuntimeError(f"{key!r} is for task {dest}, but the job has {self.size} rank(s): start it with "
                               f"mpiexec -n {dest + 1} (or more), or place the node on a task below {self.size}")
        tag = next(self._payload_tags)
        head, payload = wire.encode(step, key, value, is_dead, tag)
        comm = self.comm
        reqs = [comm.Isend([head, self.MPI.BYTE], dest, _VALUE)]
        if payload is not None:
            reqs.append(comm.Isend([payload.reshape(-1).view(np.uint8), self.MPI.BYTE], dest, tag))
        self._keep(reqs, (head, payload))

    def _keep(self, reqs, buffers) -> None:
        # a buffer must outlive its Isend; completed ones are let go as later sends come
        self._inflight.append((reqs, buffers))
        self.let_go(8)

    def let_go(self, keep: int = 0) -> None:
        """Drops the buffers of completed sends, oldest first, while more than `keep` are held. Each run
        begins with it: a Variable's array still held for a send of the last run could not be updated in
        place (exec/kernels/variables.py)."""
        inflight = self._inflight
        while len(inflight) > keep:
            try:
                oldest = inflight[0]
            except IndexError:
                break
            try:
                done = self.MPI.Request.Testall(oldest[0])
            except self.MPI.Exception:  # a send to a rank that has gone: it never completes, let it go
                done = True
            if not done:
                break
            try:
                inflight.remove(oldest)
            except ValueError:
                pass

    def broadcast_abort(self, step: int, error: BaseException) -> None:
        data = pickle.dumps((step, self.rank, f"{type(error).__name__}: {error}"))
        reqs = [self.comm.Isend([data, self.MPI.BYTE], r, _ABORT) for r in range(self.size) if r != self.rank]
        self._keep(reqs, data)

    def mark_aborted(self, step: int, error: BaseException) -> bool:
        """Records the step's abort; False when it was already aborted here."""
        with self._lock:
            if step in self._aborted or self.finished(step):
                return False
            self._aborted[step] = error
            t = self._tables.get(step)
        if t is not None:
            t.abort(error)
        return True

    # -- receiving

    def _receive_loop(self) -> None:
        MPI, comm = self.MPI, self.comm
        status = MPI.Status()
        self.last_activity = last = time.monotonic()
        while True:
            msg = comm.Improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)
            if msg is None:
                now = time.monotonic()
                idle = 0.0 if self.busy else now - max(last, self.last_activity)
                # spin while a run goes on or messages came lately; back off when idle, so a rank
                # between runs costs no CPU
                if idle < _SPIN_S:
                    os.sched_yield()
                else:
                    time.sleep(_NAP_S if idle < _DOZE_AFTER_S else _DOZE_S)
                continue
            last = time.monotonic()
            tag, src = status.Get_tag(), status.Get_source()
            buf = bytearray(status.Get_count(MPI.BYTE))
            msg.Recv([buf, MPI.BYTE])
            if tag == _VALUE:
                self._deliver(src, buf)
            elif tag == _ABORT:
                step, rank, text = pickle.loads(buf)
                self.mark_aborted(step, RemoteRunError(rank, text))
            elif tag == _BYE:
                self._goodbye_from(src)
            elif tag == _BYE_SEEN:
                with self._farewells:
                    self._saw_goodbye.add(src)
                    self._farewells.notify()
            elif tag == _STOP:
                return

    def _deliver(self, src: int, buf: bytearray) -> None:
        h = wire.decode_header(buf)
        step = h.step
        if h.payload_tag:
            arr = wire.empty_payload(h)
            self.comm.Recv([arr.reshape(-1).view(np.uint8), self.MPI.BYTE], src, h.payload_tag)
            value = wire.finish(h, arr)
        else:
            value = wire.inline_value(h, buf)
        table = self.table(step, arriving=True)
        if table is not None:  # (None: the step ended here; a straggler of an aborted run)
            table.send(h.key, value, bool(h.flags & wire.DEAD))

    def _goodbye_from(self, src: int) -> None:
        # a step still waiting for a value from `src` fails now, and says so, before the answer lets
        # `src` exit: a launcher ends the whole job as soon as one rank exits with an error
        with self._farewells:
            self.gone.add(src)
            self._farewells.notify()
        self.watchdog.check()
        self._keep([self.comm.Isend([b"", self.MPI.BYTE], src, _BYE_SEEN)], None)

    def close(self) -> None:
        """Says goodbye to the other ranks, waits until each has seen it (or said goodbye too), and stops
        the receive thread (sends it the stop message)."""
        self.watchdog.stop()
        if self._thread.is_alive():
            peers = [r for r in range(self.size) if r != self.rank]
            byes = [self.comm.Isend([b"", self.MPI.BYTE], r, _BYE) for r in peers]
            with self._farewells:
                self._farewells.wait_for(lambda: all(r in self._saw_goodbye or r in self.gone for r in peers),
                                         timeout=_FAREWELL_S)
            self.comm.Isend([b"", self.MPI.BYTE], self.rank, _STOP).Wait()
            self._thread.join()
            self.MPI.Request.Waitall(byes)


class MpiRendezvous(Rendezvous):
    """The rendezvous of one step across the ranks of `comm` (COMM_WORLD by default).

    Every rank makes the same sequence of steps (each multi-device `Session.run` is one), so
    the numbers the transport gives them in order (`step=None`) agree across ranks.
    """

    def __init__(self, comm=None, step: int | None = None, timeout: float | None = None,
                 transport: MpiTransport | None = None, describe: Callable[[str], str] | None = None):
        self.transport = transport or MpiTransport.of(comm)
        # what a key's value is in the user's terms, for the errors about one that did not come
        self.describe = describe if describe is not None else (lambda key: f"its value {key!r}")
        self.rank = self.transport.rank
        self.step = self.transport.next_step() if step is None else step
        if timeout is None:
            timeout = float(os.environ.get("FLOWGRAPH_RECV_TIMEOUT", DEFAULT_TIMEOUT))
        self.timeout = timeout
        self._table = self.transport.table(self.step)
        self.transport.let_go()
        self._waiting: dict[str, float] = {}
        self._watched = False
        self._done = threading.Event()
        self.transport.running(+1)

    def send(self, key: str, value, is_dead: bool) -> None:
        dest = self.transport.owner(key)
        if dest == self.rank:
            self._table.send(key, value, is_dead)
        else:
            self.transport.post(dest, self.step, key, value, is_dead)

    def recv(self, key: str, callback) -> None:
        waiting = self._waiting
        waiting[key] = time.monotonic() + self.timeout

        def arrived(value, is_dead):
            waiting.pop(key, None)
            callback(value, is_dead)

        if not self._watched:
            self._watched = True
            self.transport.watchdog.watch(self)
        self._table.recv(key, arrived)

    def abort(self, error: BaseException) -> None:
        """Fails this step's pending and later recvs here and on every other rank."""
        if self.transport.mark_aborted(self.step, error) and not isinstance(error, RemoteRunError):
            self.transport.broadcast_abort(self.step, error)

    @property
    def aborted(self) -> BaseException | None:
        return self._table.aborted

    def close(self) -> None:
        """Ends the step on this rank: its recvs are no longer watched, and its table is dropped."""
        if not self._done.is_set():
            self._done.set()
            self.transport.watchdog.unwatch(self)
            self.transport.running(-1)
            self.transport.finish(self.step)

    def overdue(self) -> bool:
        """Aborts the step, and says so, when a recv waits for a rank that has exited or for longer than
        the timeout (the watchdog asks every `check_every` seconds)."""
        gone = self.transport.gone
        if gone:
            lost = [k for k in list(self._waiting) if _send_task(k) in gone]
            if lost:
                sender = _send_task(lost[0])
                message = f"rank {sender} exited while rank {self.rank} still waited for {self.describe(lost[0])}"
                # said at once, too: the launcher may end this process before the error reaches the top
                print(f"[rank {self.rank}] {message}", file=sys.stderr, flush=True)
                self.abort(RemoteRunError(sender, message))
                return True
        now = time.monotonic()
        late = [k for k, deadline in list(self._waiting.items()) if deadline < now]
        if late:
            self.abort(RendezvousTimeout(
                f"rank {self.rank} waited more than {self.timeout:g} s for {self.describe(late[0])}; "
                "the rank that sends it may have hung or died. Set FLOWGRAPH_RECV_TIMEOUT (seconds) or "
                "MpiRendezvous(timeout=...) if its work legitimately takes longer"))
            return True
        return False

    @property
    def check_every(self) -> float:
        return min(0.25, self.timeout / 4)


class _Watchdog:
    """One thread per process that checks the recvs of every open step (`MpiRendezvous.overdue`): starting
    a thread per step cost 0.1-0.7 ms here, as much as a small run, and a run has two steps."""

    def __init__(self, rank: int):
        self.rank = rank
        self._cond = threading.Condition(threading.Lock())
        self._watched: set = set()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def watch(self, rdv: MpiRendezvous) -> None:
        with self._cond:
            if self._stopped:
                return
            self._watched.add(rdv)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=f"mpi-recv-timeout-{self.rank}", daemon=True)
                self._thread.start()
            elif len(self._watched) == 1:
                self._cond.notify()  # it sleeps while nothing is watched

    def unwatch(self, rdv: MpiRendezvous) -> None:
        with self._cond:
            self._watched.discard(rdv)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._watched and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                self._cond.wait(min(r.check_every for r in self._watched))
            self.check()

    def check(self) -> None:
        """Checks every watched step now (the watchdog thread does it every `check_every` seconds)."""
        with self._cond:
            watched = list(self._watched)
        for rdv in watched:  # outside the lock: an abort calls the recvs' callbacks
            if rdv.overdue():
                self.unwatch(rdv)


class MpiProcessGroup:
    """Runs this rank's part of every multi-device run (exec/multi_device.py's process group).

    Rank k runs the devices of task k, all ranks meeting in one `MpiRendezvous` per run. Around it,
    in a second step (dist/exchange.py), the ranks compare their feeds (which must agree: else every
    rank raises FeedMismatchError) and, when their parts are done, send each other the values they
    fetched and the Variables their parts write, so `run` returns all the fetches on every rank and
    every rank's Variables hold their owners' values. Every rank must make the same runs in the same
    order, as an SPMD script does; the transport numbers the steps in that order, two a run.
    """

    def __init__(self, comm=None, timeout: float | None = None):
        self._comm, self.timeout = comm, timeout
        self._transport: MpiTransport | None = None

    @property
    def transport(self) -> MpiTransport:
        if self._transport is None:  # at the first run, on every rank alike: it duplicates the communicator
            self._transport = MpiTransport.of(self._comm)
        return self._transport

    def execute(self, plan, feed_values: list, pool=None) -> list:
        transport = self.transport
        rank, size = transport.rank, transport.size
        tasks = {d: task_of(d) for d in plan.devices}
        beyond = sorted(d for d, t in tasks.items() if t >= size)
        if beyond:  # every rank sees the same plan, so every rank stops here alike
            raise RuntimeError(f"the run uses device(s) {', '.join(beyond)}, but this MPI job has {size} rank(s) "
                               f"(tasks 0-{size - 1}): start it with -n {max(tasks.values()) + 1}")
        # two steps a run on every rank, whatever happens: the run, and what the ranks exchange around it
        # a value that does not come is named by the user's op and loop iteration, not by its key
        rdv = MpiRendezvous(timeout=self.timeout, transport=transport,
                            describe=lambda key: describe_key(key, plan.partitioned.graph))
        channel = MpiRendezvous(timeout=self.timeout, transport=transport)
        local = {d for d, t in tasks.items() if t == rank}
        exchange = Exchange(exchange_of(plan), rank, size, local, channel, rdv)
        try:
            exchange.post_feeds(feed_values)
            results, error = None, None
            try:
                results = multi_device.execute(plan, feed_values, pool, rendezvous=rdv, devices=local)
            except BaseException as e:  # noqa: BLE001  (raised by `finish`, once the others have this rank's values)
                error = e
            return exchange.finish(results, error)
        finally:
            channel.close()
            rdv.close()


def _in_mpi_job() -> bool:
    # the launchers' environment: MPICH's hydra (PMI_SIZE), Open MPI; no MPI call before a run needs one
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        if var in os.environ:
            return int(os.environ[var]) > 1
    return False


if _in_mpi_job():
    multi_device.set_process_group(MpiProcessGroup())
