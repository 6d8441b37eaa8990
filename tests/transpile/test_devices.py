"""`with graph.device(...)` inside a converted function: the body's ops are placed where the block says,
the run is partitioned across the devices (one loop spread over them, conds and gradients included),
and its values equal plain Python's and one device's."""
import contextlib

import numpy as np
import pytest

import dist
import grad
import graph
import transpile
from exec import RunError
from tests.dist.helpers import within

DEVICES = ("/cpu:0", "/cpu:1")
with open(__file__) as _fh:
    _LINES = _fh.read().splitlines()


def _scope(devices, k):
    return graph.device(devices[k]) if devices else contextlib.nullcontext()


def _two_stage(devices):
    """A time loop whose first stage runs on devices[0] and second on devices[1], with a branch on
    a tensor in the second stage (a graph cond, its ops on that device too)."""
    def f(x, w, n):
        h1 = np.zeros_like(x[0])
        h2 = np.zeros_like(x[0])
        for t in range(n):
            with _scope(devices, 0):
                h1 = np.tanh(x[t] @ w + h1)
            with _scope(devices, 1):
                if np.sum(h1) > 0:
                    h2 = np.tanh(h1 @ w) + h2
                else:
                    h2 = h2 - h1
        return h2
    return f


def _inputs(seed=0, steps=6, batch=3, width=4):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((steps, batch, width)), rng.standard_normal((width, width)) / 2)


@pytest.mark.parametrize("inter_op_threads", [0, 2])
def test_device_blocks_in_a_loop_body_place_its_ops_and_give_pythons_values(inter_op_threads):
    f = _two_stage(DEVICES)
    converted = transpile.function(f, inter_op_threads=inter_op_threads)
    x, w = _inputs()
    for n in (0, 1, 6):
        np.testing.assert_allclose(within(30, converted, x, w, n), f(x, w, n), rtol=1e-12)
    g = converted.get_graph(x, w, 6)
    assert {node.device for node in g.nodes if node.device} == set(DEVICES)
    # the ops of each stage carry their block's device, the branch's ops included; the loop's own
    # counter, built outside both blocks, is left to placement
    by_line = {}
    for node in g.nodes:
        if node.source is not None and node.source.filename == __file__:
            by_line.setdefault(_LINES[node.source.lineno - 1].strip(), set()).add(node.device)
    assert by_line["h1 = np.tanh(x[t] @ w + h1)"] == {"/cpu:0"}
    for text in ("if np.sum(h1) > 0:", "h2 = np.tanh(h1 @ w) + h2", "h2 = h2 - h1"):
        assert by_line[text] == {"/cpu:1"}, text
    assert by_line["for t in range(n):"] == {""}


def test_an_error_on_one_device_names_it_and_the_line_in_the_converted_function():
    def f(x, n):
        total = x[0]
        for t in range(n):
            with graph.device("/cpu:0"):
                total = total + x[t]
            with graph.device("/cpu:1"):
                graph.assert_(t < 3, "t reached 3")  # the line the error names
        return total
    converted = transpile.function(f, inter_op_threads=0)
    x = np.ones((8, 2))
    np.testing.assert_allclose(within(30, converted, x, 3), np.full(2, 4.0))
    with pytest.raises(RunError) as info:
        within(30, converted, x, 8)
    message = str(info.value)
    assert "t reached 3" in message and "on device /task:0/cpu:1" in message
    assert "test_devices.py" in message


@pytest.mark.parametrize("inter_op_threads", [0, 2])
def test_training_step_across_devices_equals_one_device(inter_op_threads):
    """Gradients through the partitioned loop (each gradient op placed with its forward op) and an
    optimizer update: the same losses and weights as the same step on one device."""
    def make(devices):
        rng = np.random.default_rng(3)
        w1 = graph.Variable(rng.standard_normal((4, 4)) / 2)
        w2 = graph.Variable(rng.standard_normal((4, 4)) / 2)
        opt = grad.SGD(0.05)

        def step(x, n):
            h1 = np.zeros_like(x[0])
            h2 = np.zeros_like(x[0])
            for t in range(n):
                with _scope(devices, 0):
                    h1 = np.tanh(x[t] @ w1 + h1)
                with _scope(devices, 1):
                    h2 = np.tanh(h1 @ w2 + h2)
            loss = np.mean(h2 ** 2)
            opt.apply(grad.gradients(loss, [w1, w2]), [w1, w2])
            return loss
        return transpile.function(step, inter_op_threads=inter_op_threads), (w1, w2)

    (one, w_one), (two, w_two) = make(None), make(DEVICES)
    x, _ = _inputs(seed=5, steps=7)
    for _ in range(3):
        np.testing.assert_allclose(within(30, two, x, 7), one(x, 7), rtol=1e-12)
    for p, q in zip(w_one, w_two, strict=True):
        np.testing.assert_allclose(q.value, p.value, rtol=1e-12)
    placement = dist.place(two.get_graph(x, 7))
    grad_devices = {device for node, device in placement.items()
                    if node.name.startswith("gradients") and node.op == "MatMul"}
    assert grad_devices == {"/task:0/cpu:0", "/task:0/cpu:1"}


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_inter_op_threads_must_be_a_count(bad):
    with pytest.raises(ValueError, match="inter_op_threads"):
        transpile.function(lambda x: x, inter_op_threads=bad)
