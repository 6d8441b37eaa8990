"""Values a loop saves for its gradient stay on the device that computes them: a loop partitioned by
layer sends each iteration only what the other layer reads (and the predicate), never the saved
activations, and its gradient equals one device's."""
import contextlib

import numpy as np
import pytest

import grad
import graph as G
from dist import partition, place
from exec import Session
from tests.dist.helpers import within


def _two_layer_loop(devices, par=32):
    """h1 <- tanh(x_t w1 + h1 w1) on devices[0], h2 <- tanh(h1 w2 + h2 w2) on devices[1]; the loss and
    the gradients of w1, w2."""
    g = G.Graph()
    with g.as_default():
        xs = G.placeholder(np.float64, (5, 3, 4), name="xs")
        n = G.placeholder(np.int64, (), name="n")
        w1 = G.constant(np.random.default_rng(0).standard_normal((4, 4)) / 2)
        w2 = G.constant(np.random.default_rng(1).standard_normal((4, 4)) / 2)

        def scope(k):
            return G.device(devices[k]) if devices else contextlib.nullcontext()

        def body(t, h1, h2):
            with scope(0):
                h1 = G.tanh(G.matmul(xs[t], w1) + G.matmul(h1, w1))
            with scope(1):
                h2 = G.tanh(G.matmul(h1, w2) + G.matmul(h2, w2))
            return t + 1, h1, h2
        zero = G.constant(np.zeros((3, 4)))
        _, _, h2 = G.while_loop(lambda t, h1, h2: t < n, body, [G.constant(np.int64(0)), zero, zero],
                                parallel_iterations=par)
        loss = G.reduce_sum(h2 * h2)
        grads = grad.gradients(loss, [w1, w2])
    return g, xs, n, loss, grads


def _stack_ops(part_graph, op):
    return [node for node in part_graph.nodes if node.op == op]


def test_each_device_saves_its_own_values():
    g, *_ = _two_layer_loop(("/cpu:0", "/cpu:1"))
    parted = partition(g, place(g))
    readers = {}  # tensor -> the nodes reading it
    for node in parted.graph.nodes:
        for t in node.inputs:
            readers.setdefault(t, []).append(node)
    pushes = _stack_ops(parted.graph, "StackPush")
    assert {p.device for p in pushes} == {"/task:0/cpu:0", "/task:0/cpu:1"}
    for push in pushes:
        # a value received from another device is saved only where the forward ops read it anyway
        # (the second layer's input h1, kept for its weight's gradient): no Recv exists for saving alone
        values = push.inputs[1:1 + push.attrs["num_values"]]
        received = [t.node.name for t in values if t.node.op == "Recv"
                    and not any(c.op != "StackPush" for c in readers[t])]
        assert not received, f"{push.name} on {push.device} saves values received only to be saved: {received}"
    for pop in _stack_ops(parted.graph, "StackPop"):
        sent = [c.name for t in pop.outputs for c in readers.get(t, []) if c.op == "Send"]
        assert not sent, f"{pop.name} on {pop.device} sends saved values to another device: {sent}"
    # the forward loop sends one activation per iteration (h1, to the second layer), besides its
    # predicate and control tokens
    forward_values = [s for s in parted.graph.nodes if s.op == "Send" and s.frame is not None
                      and s.frame.frame_name == "while" and s.inputs[0].shape == (3, 4)]
    assert len(forward_values) == 1


@pytest.mark.parametrize("par", [1, 32])
def test_gradients_equal_one_devices(par):
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((5, 3, 4))
    results = []
    for devices in (None, ("/cpu:0", "/cpu:1")):
        g, x_ph, n, loss, grads = _two_layer_loop(devices, par)
        results.append(within(30, Session(g, inter_op_threads=0).run, [loss, *grads], {x_ph: xs, n: 5}))
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
