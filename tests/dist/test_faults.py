"""A failure on one device stops the run on every device: the first error is raised, naming the node, its
device and the user's line, and no device waits for a value that will not come."""
import time

import numpy as np
import pytest

import graph as G
from exec import RunError, Session
from tests.dist.helpers import within


def _loop_failing_at(k: int, fail_device: str, par: int):
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, (), name="n")

        def cond(i, x):
            return i < n

        def body(i, x):
            with G.device(fail_device):
                G.assert_(G.not_equal(i, np.int64(k)), "iteration k reached")  # the line the error names
                y = x * 0.5 + 1.0
            with G.device("/cpu:0"):
                j = i + 1
            return j, y
        with G.device("/cpu:0"):
            i, x = G.while_loop(cond, body, [G.constant(np.int64(0)), G.constant(1.0)], parallel_iterations=par)
    return g, n, i, x


@pytest.mark.parametrize("par", [1, 2, 32])
@pytest.mark.parametrize("fail_device", ["/cpu:1", "/task:1/cpu:0"])
def test_error_in_iteration_k_on_one_device(par, fail_device):
    g, n, i, x = _loop_failing_at(5, fail_device, par)
    sess = Session(g, inter_op_threads=0)
    assert within(20, sess.run, [i, x], {n: 3})[0] == 3  # fewer iterations: no failure
    start = time.perf_counter()
    with pytest.raises(RunError) as info:
        within(20, sess.run, [i, x], {n: 100})
    assert time.perf_counter() - start < 10
    message = str(info.value)
    assert "iteration k reached" in message
    assert "in iteration 5 of the while loop" in message
    canonical = "/task:0/cpu:1" if fail_device == "/cpu:1" else "/task:1/cpu:0"
    assert f"on device {canonical}" in message
    assert "test_faults.py" in message
    assert within(20, sess.run, [i, x], {n: 4})[0] == 4  # the session still runs


def test_error_on_the_predicate_device_stops_the_others():
    """The device that computes the loop predicate fails: the devices waiting for it stop too."""
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, (), name="n")

        def cond(i, x):
            with G.device("/cpu:1"):
                G.assert_(G.less(i, np.int64(7)), "predicate device fails")
                return i < n

        def body(i, x):
            with G.device("/cpu:0"):
                return i + 1, x + 1.0
        with G.device("/cpu:0"):
            out = G.while_loop(cond, body, [G.constant(np.int64(0)), G.constant(0.0)])
    with pytest.raises(RunError, match="predicate device fails") as info:
        within(20, Session(g, inter_op_threads=0).run, out, {n: 50})
    assert "on device /task:0/cpu:1" in str(info.value)


def test_fetched_dead_value_across_devices_is_an_error_not_a_hang():
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, (), name="p")
        x = G.placeholder(np.float64, (), name="x")
        with G.device("/cpu:1"):
            sw_false, sw_true = G.make_op("Switch", [x, p]).outputs
        with G.device("/cpu:0"):
            y = sw_true * 2.0
    with pytest.raises(RunError, match="dead"):
        within(20, Session(g, inter_op_threads=0).run, y, {p: False, x: 1.0})
    assert within(20, Session(g, inter_op_threads=0).run, y, {p: True, x: 1.0}) == 2.0


def test_a_process_that_holds_none_of_the_devices_returns_at_once():
    """In a multi-process job a rank may host none of a run's devices (they are all on other tasks): its
    part of the run is empty and must return, leaving the fetches to the ranks that compute them."""
    from exec import multi_device
    from exec.multi_device import DevicesPlan
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [], name="x")
        with G.device("/cpu:0"):
            y = x * 2.0
        with G.device("/cpu:1"):
            z = y + 1.0
    sess = Session(g)
    assert within(30, sess.run, z, {x: 1.0}) == 3.0
    plan = next(p for p in sess._plans.values() if isinstance(p, DevicesPlan))
    got = within(30, multi_device.execute, plan, [np.float64(1.0)], None, None, set())
    assert got == [None] * plan.num_fetches
