"""The rendezvous protocol (exec/rendezvous.py), checked on LocalRendezvous. A transport for other
processes passes the same checks: add its factory to RENDEZVOUS."""
import threading

import numpy as np
import pytest

import graph
from exec import Session
from exec.rendezvous import Aborted, DuplicateKeyError, LocalRendezvous, describe_key, frame_tag, rendezvous_key

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


def _two_task_loop():
    """A loop whose predicate and counter are on task 0 and whose body's value is computed on task 1."""
    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, (), name="n")

        def body(i, x):
            with graph.device("/task:1/cpu:0"):
                x = x * 0.5 + 1.0  # _BODY_LINE
            return i + 1, x
        with graph.device("/task:0/cpu:0"):
            i, x = graph.while_loop(lambda i, x: i < n, body, (graph.constant(np.int64(0)), graph.constant(3.0)))
    session = Session(g, inter_op_threads=0)
    session.run(x, {n: 3})
    (plan,) = session._plans.values()
    return plan.partitioned.graph


def _line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(k for k, line in enumerate(f, 1) if line.rstrip().endswith(marker))


def test_a_key_is_described_by_the_users_op_line_and_loop_iteration():
    """Errors about a value that did not come (an MPI rank that exited or hung) name it so, not by its key."""
    parted = _two_task_loop()
    recvs = [r for r in parted.nodes if r.op == "Recv" and r.attrs["send_device"] == "/task:1/cpu:0"]
    assert recvs
    a = recvs[0].attrs
    key = rendezvous_key(a["send_device"], a["recv_device"], a["tensor_name"], frame_tag([("while", 12)]))
    text = describe_key(key, parted)
    assert f"test_rendezvous.py:{_line_of('# _BODY_LINE')}" in text
    assert "sent from /task:1/cpu:0 to /task:0/cpu:0, in iteration 12 of the while loop at" in text
    assert a["tensor_name"] not in text and "while@12" not in text
    assert describe_key("not;a key", parted) == "the value under rendezvous key 'not;a key'"
