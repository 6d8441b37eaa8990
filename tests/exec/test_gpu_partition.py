"""Nodes placed on "/gpu:0" compute on the session's device (exec/device/kernels.py), values crossing to
the host are copied on its copy streams (exec/device/transfer.py), and host-memory nodes (counters,
predicates) run on the host: random programs and gradients give what they give on the CPU, on the
simulated device, on CupyDevice over the numpy stand-in for CuPy, and on a GPU where cupy sees one."""
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grad
import graph
from exec import Session
from exec.device.transfer import DeviceRendezvous
from exec.multi_device import DevicesPlan
from tests.dist.helpers import scatter, within
from tests.exec import programs as P
from tests.exec.device_fixtures import KINDS, make_device
from tests.grad import programs as GP

GPU_AND_HOST = ("/cpu:0", "/gpu:0")
seeds = st.integers(0, 2 ** 31)


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


def _devices_plan(sess) -> DevicesPlan:
    plans = [p for p in sess._plans.values() if isinstance(p, DevicesPlan)]
    assert plans, "the run was not partitioned"
    return plans[-1]


def _loop_graph():
    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, (), name="n")
        w = graph.placeholder(np.float64, (3,), name="w")
        with graph.device("/gpu:0"):
            i, x = graph.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, graph.tanh(x * 1.5) + w),
                                    (graph.constant(0), graph.constant(np.ones(3))))
            y = graph.sigmoid(x) * 2.0
    return g, n, w, i, x, y


def test_a_loop_on_the_gpu_computes_there_and_its_counter_stays_on_the_host(kind):
    g, n, w, i, x, y = _loop_graph()
    device = make_device(kind)
    sess = Session(g, device=device)
    got = sess.run([i, x, y], {n: 4, w: np.arange(3.0)})
    ref = np.ones(3)
    for _ in range(4):
        ref = np.tanh(ref * 1.5) + np.arange(3.0)
    assert got[0] == 4
    np.testing.assert_allclose(got[1], ref, rtol=1e-12)
    np.testing.assert_allclose(got[2], 2 / (1 + np.exp(-ref)), rtol=1e-12)
    assert all(isinstance(v, (np.ndarray, np.generic)) for v in got)  # fetches come back as numpy
    plan = _devices_plan(sess)
    placement = plan.partitioned.placement
    on_gpu = {m.op for m, d in placement.items() if d.endswith("gpu:0")}
    on_host = {m.op for m, d in placement.items() if d.endswith("cpu:0")}
    assert {"Tanh", "Mul", "Sigmoid"} <= on_gpu and {"Less", "LoopCond"} <= on_host


def test_a_host_computed_predicate_costs_no_copy_per_iteration(kind):
    g, n, w, i, x, y = _loop_graph()
    device = make_device(kind)
    sess = Session(g, device=device)
    copies = []
    for iterations in (3, 30):
        before = (device.d2h.count, device.h2d.count)
        sess.run([i, y], {n: iterations, w: np.arange(3.0)})
        copies.append((device.d2h.count - before[0], device.h2d.count - before[1]))
    assert copies[0] == copies[1], f"copies grow with the iterations: {copies}"
    assert _devices_plan(sess).copies == {"d2h": copies[1][0], "h2d": copies[1][1]}


def test_a_gpu_value_read_by_the_host_each_iteration_is_copied_once_per_iteration(kind):
    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, (), name="n")

        def body(i, x, s):
            with graph.device("/gpu:0"):
                x = graph.tanh(x) + 0.5
            with graph.device("/cpu:0"):
                s = s + x * 2.0
            return i + 1, x, s
        i, x, s = graph.while_loop(lambda i, x, s: i < n, body,
                                   (graph.constant(0), graph.constant(np.ones(4)), graph.constant(np.zeros(4))))
    device = make_device(kind)
    sess = Session(g, device=device)
    got = sess.run(s, {n: 5})
    want = Session(_strip(g)).run(s, {n: 5})
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert _devices_plan(sess).copies["d2h"] == 5  # x, once an iteration


def _wait_for(condition, seconds: float = 10.0) -> None:
    """Until `condition()` holds: a copy's callback runs on a device thread (CupyDevice's poller) after
    its event completes, so synchronizing the streams does not wait for it."""
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "a copy's completion callback never ran"
        time.sleep(0.001)


def _strip(g):
    for m in g.nodes:
        m.device = ""
    return g


def test_a_kernel_that_needs_numpy_names_the_node_and_says_where_to_place_it():
    from exec.device.kernels import device_kernel
    from tests.exec.device_fixtures import make_device as make
    device = make("cupy-over-numpy")
    g = graph.Graph()
    with g.as_default():
        node = graph.tanh(graph.constant(1.0)).node

    def needs_numpy(x):
        return np.asarray(x) + 1
    fn = device_kernel(node, needs_numpy, device)
    with pytest.raises(TypeError, match=r"Tanh .*test_gpu_partition.py:\d+.* cannot run on /gpu:0.*graph.device"):
        fn(device.upload(np.ones(2)))


def test_the_send_of_a_device_value_waits_for_its_producer(kind):
    """A Send's copy is ordered after the producer through a compute-stream event: the checker sees no
    violation, and the host gets the value only from the copy's completion callback."""
    from exec.rendezvous import LocalRendezvous
    device = make_device(kind)
    inner = LocalRendezvous()
    rv = DeviceRendezvous(inner, device)
    value = device.upload(np.arange(5.0))
    rv.send("a;b;t:0;", value, False)
    got = []
    inner.recv("a;b;t:0;", lambda v, dead: got.append(v))
    _wait_for(lambda: got)
    np.testing.assert_array_equal(got[0], np.arange(5.0))
    assert rv.copies == {"d2h": 1, "h2d": 0}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(P.programs, P.inputs, seeds, st.sampled_from(["simulated", "cupy-over-numpy"]))
def test_random_programs_with_nodes_on_the_gpu_match_python(program, values, seed, kind):
    env, out = P.run_python(program, values)
    g, ph, fetches = P.build_graph(program, parallel_iterations=2)
    scatter(g, seed, devices=GPU_AND_HOST)
    sess = Session(g, inter_op_threads=0, device=make_device(kind))
    got = within(30, sess.run, fetches, P.feed(ph, values))
    for k in ("i0", "i1", "f0", "v0"):
        np.testing.assert_array_equal(got[k], env[k], err_msg=f"variable {k}")
    np.testing.assert_array_equal(got["out"], np.asarray(out, np.float64).reshape(-1))


floats = st.floats(-1.5, 1.5, allow_nan=False).map(lambda v: round(v, 3))
vec = st.tuples(floats, floats).map(lambda t: np.array(t, dtype=np.float64))


def _loss_and_gradients(prog, x0, w0, seed, kind):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (2,), name="x")
        w = graph.placeholder(np.float64, (2,), name="w")
        loss = GP.build_graph(prog, x, w, 2)
        if seed is not None:
            scatter(g, seed, devices=GPU_AND_HOST)  # gradients follow their forward nodes
        grads = grad.gradients(loss, [x, w], non_differentiable="ignore")
    sess = Session(g, inter_op_threads=0, mode="dataflow", device=make_device(kind) if kind else None)
    return within(30, sess.run, (loss, grads), {x: x0, w: w0})


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GP.programs(depth=2), vec, vec, seeds, st.sampled_from(["simulated", "cupy-over-numpy"]))
def test_gradients_with_nodes_on_the_gpu_match_the_cpu(prog, x0, w0, seed, kind):
    want = _loss_and_gradients(prog, x0, w0, None, None)
    got = _loss_and_gradients(prog, x0, w0, seed, kind)
    for a, b in zip(graph.nest.flatten(got), graph.nest.flatten(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_a_send_whose_copy_does_not_wait_for_the_producer_is_caught(kind, monkeypatch):
    """A seeded protocol bug: the d2h stream not made to wait for the compute stream's event."""
    from exec.device import HappensBeforeError
    from exec.rendezvous import LocalRendezvous
    device = make_device(kind)
    monkeypatch.setattr(device.d2h, "wait", lambda event: None)
    rv = DeviceRendezvous(LocalRendezvous(), device)
    with pytest.raises(HappensBeforeError, match="without waiting"):
        rv.send("a;b;t:0;", device.upload(np.arange(5.0)), False)


def test_a_received_value_reaches_the_kernels_through_an_h2d_copy(kind):
    from exec.rendezvous import LocalRendezvous
    device = make_device(kind)
    inner = LocalRendezvous()
    rv = DeviceRendezvous(inner, device)
    got = {}
    rv.recv("a;b;t:0;", lambda v, dead: got.setdefault("t", (v, dead)))
    inner.send("a;b;t:0;", np.arange(4.0), False)
    inner.send("a;b;i:0;", np.int64(3), False)  # a host-memory value: no copy
    rv.recv("a;b;i:0;", lambda v, dead: got.setdefault("i", (v, dead)))
    _wait_for(lambda: len(got) == 2)
    assert rv.copies == {"d2h": 0, "h2d": 1}
    assert device.holds(got["t"][0]) and not got["t"][1]
    np.testing.assert_array_equal(device.download(got["t"][0]), np.arange(4.0))
    assert got["i"] == (3, False)
