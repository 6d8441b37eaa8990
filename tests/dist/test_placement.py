"""dist.place: the user's device scopes, the colocation rules and their conflicts; dist.partition's cuts."""
import re

import numpy as np
import pytest

import grad
import graph as G
from dist import PlacementError, partition, place
from exec import Session
from exec.multi_device import DevicesPlan
from graph.devices import canonical_device
from tests.dist.helpers import within


def test_device_names_are_canonical():
    assert canonical_device("/cpu:1") == "/task:0/cpu:1"
    assert canonical_device("/TASK:0/CPU:1") == "/task:0/cpu:1"
    assert canonical_device("/job:worker/cpu:0") == "/job:worker/task:0/cpu:0"
    assert canonical_device("") == ""
    with pytest.raises(ValueError, match="bad device name 'cpu1'"):
        G.Graph().device("cpu1").__enter__()


def test_unplaced_nodes_follow_their_producers_then_consumers():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (), name="x")
        with G.device("/cpu:1"):
            y = x * 2.0
        z = y + 1.0
    where = place(g)
    assert where[z.node] == "/task:0/cpu:1"  # from its producer
    assert where[x.node] == "/task:0/cpu:1"  # from its consumer
    assert set(where.values()) == {"/task:0/cpu:1"}


def test_a_loop_variable_structure_stays_with_its_initial_value():
    g = G.Graph()
    with g.as_default():
        with G.device("/cpu:0"):
            x0 = G.constant(1.0)

        def body(x):
            with G.device("/cpu:1"):
                return x * 0.5
        out = G.while_loop(lambda x: x > 0.1, body, [x0])
    where = place(g)
    plumbing = [n for n in g.nodes if n.op in ("Enter", "Merge", "Switch", "NextIteration", "Exit")
                and not n.attrs.get("is_constant")]
    assert {where[n] for n in plumbing} == {"/task:0/cpu:0"}
    assert where[G.nest.flatten(out)[0].node] == "/task:0/cpu:0"


def test_a_loop_variable_split_across_devices_by_the_user_is_refused():
    g = G.Graph()
    with g.as_default():
        with G.device("/cpu:0"):
            x = G.while_loop(lambda x: x > 0.1, lambda x: x * 0.5, [G.constant(1.0)])
    nxt = next(n for n in g.nodes if n.op == "NextIteration")
    nxt.device = "/cpu:1"
    with pytest.raises(PlacementError, match=r"control structure .* of a loop variable of the while loop at "
                                             r"\S*test_placement.py:\d+ \(frame while\) must be on one device"):
        place(g)
    del x


def test_variable_reads_and_assigns_share_a_device():
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.zeros(2), name="W")
        with G.device("/cpu:1"):
            r = v.read()
        a = v.assign_add(np.ones(2))
    assert place(g)[a.node] == "/task:0/cpu:1"
    del r


def test_variable_conflict_names_both_lines():
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.zeros(2), name="W")
        with G.device("/cpu:0"):
            v.read()
        with G.device("/cpu:1"):
            v.assign(np.ones(2))  # the conflicting line
    with pytest.raises(PlacementError) as info:
        place(g)
    message = str(info.value)
    assert re.search(r"Variable 'W(_\d+)?' and its reads and assigns must be on one device", message)
    assert "/task:0/cpu:0" in message and "/task:0/cpu:1" in message
    assert message.count("test_placement.py:") >= 2


def test_tensor_array_ops_follow_their_handle():
    g = G.Graph()
    with g.as_default():
        with G.device("/cpu:1"):
            ta = G.TensorArray(np.float64, size=2, element_shape=[])
        ta = ta.write(0, 1.0).write(1, 2.0)
        s = ta.stack()
    assert place(g)[s.node] == "/task:0/cpu:1"


def test_gradients_follow_their_forward_nodes_unless_placed():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (), name="x")
        with G.device("/cpu:1"):
            y = G.tanh(x)
        with G.device("/cpu:0"):
            z = y * 3.0
        (dx,) = grad.gradients(z, [x])
        with G.device("/cpu:0"):
            (dx0,) = grad.gradients(G.tanh(x), [x])
    where = place(g)
    tanh_grad = [n for n in g.nodes if g.colocation.get(n) is y.node]
    assert tanh_grad and {where[n] for n in tanh_grad} == {"/task:0/cpu:1"}
    assert where[dx0.node] == "/task:0/cpu:0"
    got = within(20, Session(g).run, dx, {x: 0.3})
    np.testing.assert_allclose(got, 3.0 * (1 - np.tanh(0.3) ** 2))


def test_one_send_per_tensor_and_destination():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (), name="x")
        with G.device("/cpu:0"):
            y = x + 1.0
        with G.device("/cpu:1"):
            a, b = y * 2.0, y * 3.0
            with G.control_dependencies([y]):
                c = G.identity(a)
        with G.device("/cpu:2"):
            d = y - 1.0
    parts = partition(g, place(g))
    sends = [n for n in parts.graph.nodes if n.op == "Send" and n.attrs["tensor_name"] == y.name]
    assert sorted(n.attrs["recv_device"] for n in sends) == ["/task:0/cpu:1", "/task:0/cpu:2"]
    control = [n for n in parts.graph.nodes if n.op == "Recv" and n.attrs["tensor_name"] == "^" + y.node.name]
    assert len(control) == 1 and parts.copies[c.node].control_inputs == control
    listing = str(parts)
    assert "# /task:0/cpu:2: " in listing and "= Recv[" in listing
    sess = Session(g)
    assert within(20, sess.run, [a, b, c, d], {x: 1.0}) == [4.0, 6.0, 4.0, 1.0]
    assert any(isinstance(p, DevicesPlan) for p in sess._plans.values())


def test_dead_tokens_cross_devices_and_recvs_on_untaken_branches_do_not_block():
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, (), name="p")
        x = G.placeholder(np.float64, (), name="x")

        def yes():
            with G.device("/cpu:1"):
                return G.sin(x) * 2.0

        def no():
            with G.device("/task:1/cpu:0"):
                return G.cos(x) + 1.0
        with G.device("/cpu:0"):
            out = G.cond(p, yes, no)
    sess = Session(g, inter_op_threads=0)
    for taken in (True, False, True):
        want = np.sin(0.5) * 2.0 if taken else np.cos(0.5) + 1.0
        assert within(20, sess.run, out, {p: taken, x: 0.5}) == want


def test_a_multi_device_plan_runs_on_the_dataflow_executor_in_every_mode():
    from exec.compiled import Unstructured
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, (), name="n")
        with G.device("/cpu:0"):
            i, x = G.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, _on("/cpu:1", lambda: x * 2.0)),
                                [G.constant(np.int64(0)), G.constant(1.0)])
    for mode in ("compiled", "auto", "dataflow"):
        sess = Session(g, mode=mode)
        assert within(20, sess.run, [i, x], {n: 4}) == [4, 16.0]
    with pytest.raises(Unstructured, match="several devices"):
        Session(g, mode="compiled").compiled_source([i, x], {n: 4})


def _on(device, fn):
    with G.device(device):
        return fn()
