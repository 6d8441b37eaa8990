"""The rendezvous protocol (exec/rendezvous.py), checked on LocalRendezvous. A transport for other
processes passes the same checks: add its factory to RENDEZVOUS."""
import threading

import numpy as np
import pytest

from exec.rendezvous import Aborted, DuplicateKeyError, LocalRendezvous, frame_tag, rendezvous_key

RENDEZVOUS = {"local": LocalRendezvous}


@pytest.fixture(params=sorted(RENDEZVOUS))
def rv(request):
    return RENDEZVOUS[request.param]()


def _collector():
    got = []
    return got, lambda value, is_dead: got.append((value, is_dead))


def test_send_then_recv(rv):
    rv.send("k", np.float32(2.5), False)
    got, cb = _collector()
    rv.recv("k", cb)
    assert got == [(np.float32(2.5), False)]


def test_recv_then_send_calls_back_once(rv):
    got, cb = _collector()
    rv.recv("k", cb)
    assert got == []
    rv.send("k", 7, False)
    assert got == [(7, False)]


def test_dead_token_travels(rv):
    got, cb = _collector()
    rv.recv("k", cb)
    rv.send("k", None, True)
    assert got == [(None, True)]


def test_keys_out_of_order(rv):
    keys = [rendezvous_key("/task:0/cpu:0", "/task:0/cpu:1", "x:0", frame_tag([("while", n)])) for n in range(50)]
    got = {}
    for k in keys:
        rv.recv(k, lambda v, d, k=k: got.__setitem__(k, v))
    for n, k in reversed(list(enumerate(keys))):
        rv.send(k, n, False)
    assert [got[k] for k in keys] == list(range(50))


def test_key_sent_twice_is_an_error(rv):
    rv.send("k", 1, False)
    with pytest.raises(DuplicateKeyError, match="'k'"):
        rv.send("k", 2, False)


def test_abort_fails_pending_and_later_recvs(rv):
    got, cb = _collector()
    rv.recv("pending", cb)
    error = RuntimeError("node x failed")
    rv.abort(error)
    rv.recv("later", cb)
    rv.send("later", 1, False)  # dropped
    assert [type(v) for v, _ in got] == [Aborted, Aborted]
    assert all(v.error is error and d for v, d in got)
    assert rv.aborted is error
    rv.abort(ValueError("second"))
    assert rv.aborted is error


def test_threads_meet(rv):
    n = 2000
    done = threading.Event()
    got = []

    def on_value(v, d):
        got.append(v)
        if len(got) == n:
            done.set()

    def sender():
        for k in range(n):
            rv.send(f"k{k}", k, False)

    t = threading.Thread(target=sender)
    t.start()
    for k in range(n):
        rv.recv(f"k{k}", on_value)
    t.join(10)
    assert done.wait(10)
    assert sorted(got) == list(range(n))


def test_keys_name_the_iteration():
    assert frame_tag([]) == ""
    a = rendezvous_key("/task:0/cpu:0", "/task:1/cpu:0", "add:0", frame_tag([("outer", 1), ("inner", 0)]))
    b = rendezvous_key("/task:0/cpu:0", "/task:1/cpu:0", "add:0", frame_tag([("outer", 0), ("inner", 1)]))
    assert a != b


def test_take_is_an_optional_recv_of_a_value_already_there(rv):
    if not hasattr(rv, "take"):
        pytest.skip("this transport has no take")
    assert rv.take("k") is None
    rv.send("k", 3, False)
    assert rv.take("k") == (3, False)
    assert rv.take("k") is None  # consumed
    got, cb = _collector()
    rv.recv("k2", cb)
    assert rv.take("k2") is None  # a waiting recv is not a value
