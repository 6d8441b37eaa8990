"""MpiRendezvous between 2 ranks: values of several dtypes and shapes, dead tokens, keys out of
order, abort, timeout, steps. Runs under `mpiexec -n 2` (see conftest.py)."""
import threading

import numpy as np
import pytest

from exec.rendezvous import Aborted, rendezvous_key

WAIT_S = 30  # far above what any exchange here takes; a failure must not hang the job


def _key(src: int, dst: int, name: str, tag: str = "") -> str:
    return rendezvous_key(f"/task:{src}/cpu:0", f"/task:{dst}/cpu:0", name, tag)


class Inbox:
    """Recvs posted on a rendezvous, waited for together."""

    def __init__(self, rdv):
        self.rdv, self.got, self._lock, self._cv = rdv, {}, threading.Lock(), threading.Condition()

    def post(self, key):
        def arrived(value, is_dead):
            with self._cv:
                assert key not in self.got, f"{key} called back twice"
                self.got[key] = (value, is_dead)
                self._cv.notify_all()
        self.rdv.recv(key, arrived)

    def wait(self, keys):
        with self._cv:
            assert self._cv.wait_for(lambda: all(k in self.got for k in keys), WAIT_S), \
                f"still waiting for {[k for k in keys if k not in self.got]}"
        return [self.got[k] for k in keys]


@pytest.fixture
def rdv(comm):
    from dist.mpi import MpiRendezvous
    r = MpiRendezvous(comm, timeout=WAIT_S)  # a new step: numbered alike on both ranks
    yield r
    comm.Barrier()
    r.close()


def _values():
    rng = np.random.default_rng(0)
    return {
        "f32_scalar": np.float32(2.5),
        "f64_matrix": rng.standard_normal((3, 4)),
        "int8_empty": np.zeros((0, 5), np.int8),
        "bool_0d": np.array(True),
        "complex": np.array([1 + 2j, -3j]),
        "uint16": np.arange(7, dtype=np.uint16),
        "big": rng.standard_normal((300, 200)),  # 480 KB: travels as a buffer message of its own
        "strided": np.arange(40.0).reshape(5, 8)[:, ::3],
        "float16_3d": rng.standard_normal((2, 3, 4)).astype(np.float16),
        "int64_scalar": np.int64(-7),
        "py_object": {"a": [1, 2]},
    }


def test_values_of_several_dtypes_and_shapes_round_trip(comm, rdv):
    me, other = comm.Get_rank(), 1 - comm.Get_rank()
    values = _values()
    inbox = Inbox(rdv)
    if me == 1:
        keys = [_key(0, 1, n) for n in values]
        for k in keys:
            inbox.post(k)
        for (name, _), (value, is_dead) in zip(values.items(), inbox.wait(keys), strict=True):
            assert not is_dead
            rdv.send(_key(1, 0, name, "back"), value, False)  # straight back, as received
    else:
        for name, v in values.items():
            rdv.send(_key(0, other, name), v, False)
        keys = [_key(1, 0, n, "back") for n in values]
        for k in keys:
            inbox.post(k)
        for (name, sent), (got, is_dead) in zip(values.items(), inbox.wait(keys), strict=True):
            assert not is_dead
            assert type(got) is type(sent), name
            if isinstance(sent, (np.ndarray, np.generic)):
                assert got.dtype == sent.dtype and got.shape == sent.shape, name
                np.testing.assert_array_equal(got, sent)
                # kernels may write into an input they own (exec/donation.py)
                assert not isinstance(got, np.ndarray) or got.flags.writeable, name
            else:
                assert got == sent


def test_dead_tokens_travel(comm, rdv):
    inbox = Inbox(rdv)
    if comm.Get_rank() == 0:
        rdv.send(_key(0, 1, "untaken", "while@3"), None, True)
        k = _key(1, 0, "untaken")
        inbox.post(k)
        assert inbox.wait([k]) == [(None, True)]
    else:
        k = _key(0, 1, "untaken", "while@3")
        inbox.post(k)
        assert inbox.wait([k]) == [(None, True)]
        rdv.send(_key(1, 0, "untaken"), None, True)


def test_many_keys_out_of_order_and_before_or_after_their_sends(comm, rdv):
    n = 300
    keys = [_key(0, 1, "x", f"while@{i}") for i in range(n)]
    inbox = Inbox(rdv)
    if comm.Get_rank() == 1:
        for k in keys[::-2]:  # half the recvs are waiting before anything is sent
            inbox.post(k)
    comm.Barrier()
    if comm.Get_rank() == 0:
        for i in np.random.default_rng(1).permutation(n):
            rdv.send(keys[i], np.array([i], np.int32), False)
    comm.Barrier()
    if comm.Get_rank() == 1:
        for k in keys[-2::-2]:  # the other half after
            inbox.post(k)
        got = inbox.wait(keys)
        assert [int(v[0]) for v, _ in got] == list(range(n))


def test_a_local_key_stays_in_this_rank(comm, rdv):
    me = comm.Get_rank()
    k = rendezvous_key(f"/task:{me}/cpu:0", f"/task:{me}/cpu:1", "local", "")
    value = np.ones(3)
    rdv.send(k, value, False)
    inbox = Inbox(rdv)
    inbox.post(k)
    assert inbox.wait([k])[0][0] is value  # the very object: nothing was serialised


def test_a_key_for_a_task_outside_the_job_is_refused(comm, rdv):
    with pytest.raises(RuntimeError, match=r"task 5.*mpiexec -n 6"):
        rdv.send(_key(comm.Get_rank(), 5, "far"), np.ones(1), False)


def test_abort_on_one_rank_fails_pending_and_later_recvs_on_the_other(comm, rdv):
    from dist.mpi import RemoteRunError
    inbox = Inbox(rdv)
    pending = _key(1, 0, "never")
    if comm.Get_rank() == 0:
        inbox.post(pending)
    comm.Barrier()
    if comm.Get_rank() == 1:
        rdv.abort(ValueError("node 'loss' (f.py:12) failed in iteration 3"))
    comm.Barrier()
    if comm.Get_rank() == 0:
        (value, is_dead), = inbox.wait([pending])
        assert is_dead and isinstance(value, Aborted)
        assert isinstance(value.error, RemoteRunError) and value.error.rank == 1
        assert "rank 1" in str(value.error) and "f.py:12" in str(value.error)
        later = _key(1, 0, "later")
        inbox.post(later)
        assert isinstance(inbox.wait([later])[0][0], Aborted)
    else:
        assert isinstance(rdv.aborted, ValueError)  # the rank that aborted keeps its own error


def test_a_recv_that_never_comes_times_out_and_aborts_both_ranks(comm):
    from dist.mpi import MpiRendezvous, RemoteRunError, RendezvousTimeout
    rdv = MpiRendezvous(comm, timeout=0.5)
    if comm.Get_rank() == 0:
        inbox = Inbox(rdv)
        k = _key(1, 0, "lost")
        inbox.post(k)
        (value, is_dead), = inbox.wait([k])
        assert is_dead and isinstance(value.error, RendezvousTimeout)
        assert "rank 0" in str(value.error) and "lost" in str(value.error)
    else:
        ended = threading.Event()
        for _ in range(100):  # the abort message comes within the timeout and a bit
            if rdv.aborted is not None:
                break
            ended.wait(0.05)
        assert isinstance(rdv.aborted, RemoteRunError) and rdv.aborted.rank == 0
    comm.Barrier()
    rdv.close()


def test_values_of_a_later_step_wait_for_it(comm):
    from dist.mpi import MpiRendezvous
    first = MpiRendezvous(comm)
    k = _key(0, 1, "x")
    if comm.Get_rank() == 0:
        second = MpiRendezvous(comm)
        second.send(k, np.array(2.0), False)  # before rank 1 has begun the second step
        first.send(k, np.array(1.0), False)
    else:
        inbox = Inbox(first)
        inbox.post(k)
        assert inbox.wait([k])[0][0] == 1.0
        second = MpiRendezvous(comm)
        inbox = Inbox(second)
        inbox.post(k)
        assert inbox.wait([k])[0][0] == 2.0
    assert second.step == first.step + 1
    comm.Barrier()
    first.close()
    second.close()
