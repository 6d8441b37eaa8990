"""Stack memory: a gradient loop saves exactly what its backward pass reads, and frees it as it pops."""
import numpy as np
import pytest

import grad
import graph
from exec import Session
from exec.memory import memory_manager
from graph.control_flow.stack import stack_of


def _peak(build, n):
    g = graph.Graph()
    with g.as_default():
        w = graph.placeholder(np.float64, (), name="w")
        x0 = graph.constant(np.linspace(0.0, 1.0, 100))
        _, x = graph.while_loop(lambda i, x: i < n, lambda i, x: (i + 1, build(x, w)), (graph.constant(0), x0))
        (gw,) = grad.gradients(graph.reduce_sum(x), [w])
    sess = Session(g)
    mem = memory_manager(sess.runtime)
    mem.reset_peak()
    value = sess.run(gw, {w: 0.999})
    assert mem.bytes_in_use == 0  # every saved value was popped
    return mem.peak_bytes, mem.saves, value


def test_ten_thousand_iterations_save_what_the_backward_reads():
    # sin(x) * w: Sin's gradient reads x, Mul's gradient for w reads sin(x); w itself is a
    # loop constant and is never saved. Two 100-element float64 vectors per iteration.
    peak, saves, value = _peak(lambda x, w: graph.sin(x) * w, 10_000)
    assert saves == 2 * 10_000
    assert peak == 10_000 * 2 * 100 * 8
    assert np.isfinite(value)


def test_saved_memory_is_proportional_to_the_trip_count():
    small, _, _ = _peak(lambda x, w: graph.sin(x) * w, 1_000)
    large, _, _ = _peak(lambda x, w: graph.sin(x) * w, 4_000)
    assert large == 4 * small


def test_backward_that_needs_no_value_stacks_nothing():
    peak, saves, value = _peak(lambda x, w: x + w * 2.0, 10_000)
    assert (peak, saves) == (0, 0)
    assert value == pytest.approx(2.0 * 100 * 10_000)


def test_values_needed_only_for_their_shape_are_not_saved():
    """With a dynamic shape, broadcasting's gradient saves the shape (8 bytes per dim), not the value."""
    g = graph.Graph()
    with g.as_default():
        x0 = graph.placeholder(np.float64, (None,), name="x0")
        w = graph.placeholder(np.float64, (), name="w")
        _, x = graph.while_loop(lambda i, x: i < 50, lambda i, x: (i + 1, x + w), (graph.constant(0), x0))
        (gw,) = grad.gradients(graph.reduce_sum(x), [w])
    sess = Session(g)
    mem = memory_manager(sess.runtime)
    mem.reset_peak()
    assert sess.run(gw, {x0: np.zeros(1000), w: 1.0}) == 50 * 1000
    assert mem.peak_bytes <= 50 * 8


def test_swap_memory_flag_reaches_the_memory_manager():
    g = graph.Graph()
    with g.as_default():
        w = graph.placeholder(np.float64, (), name="w")
        _, x = graph.while_loop(lambda i, x: i < 10, lambda i, x: (i + 1, graph.sin(x) * w),
                                (graph.constant(0), graph.constant(np.ones(4))), swap_memory=True)
        (gw,) = grad.gradients(graph.reduce_sum(x), [w])
    pushes = [n for n in g.nodes if n.op == "StackPush"]
    assert pushes and all(n.attrs["swap_memory"] for n in pushes)
    sess = Session(g)
    sess.run(gw, {w: 0.5})
    assert memory_manager(sess.runtime).stats()["swappable_bytes"] == 0


def test_values_computed_from_loop_constants_only_are_not_saved():
    """`w * 2.0` is the same in every iteration: the backward computes it once from w instead of
    popping a copy per iteration. Saved: x (for sin's gradient) and sin(x) (for w's)."""
    n = 1_000
    peak, saves, value = _peak(lambda x, w: graph.sin(x) * (w * 2.0), n)
    assert saves == 2 * n
    assert peak == n * 2 * 100 * 8
    x, dx, w = np.linspace(0.0, 1.0, 100), np.zeros(100), 0.999  # forward-mode reference
    for _ in range(n):
        x, dx = np.sin(x) * 2 * w, np.cos(x) * dx * 2 * w + np.sin(x) * 2
    np.testing.assert_allclose(value, dx.sum(), rtol=1e-10)


def test_loop_invariant_values_feed_second_order_gradients():
    g = graph.Graph()
    with g.as_default():
        w = graph.placeholder(np.float64, (3, 3), name="w")
        h0 = graph.constant(np.linspace(-1.0, 1.0, 6).reshape(2, 3))
        _, h = graph.while_loop(lambda i, h: i < 4, lambda i, h: (i + 1, graph.tanh(h @ graph.transpose(w * 2.0))),
                                (graph.constant(0), h0))
        (gw,) = grad.gradients(graph.reduce_sum(h * h), [w])
        (hw,) = grad.gradients(graph.reduce_sum(gw * gw), [w])
        hu = h0
        for _ in range(4):
            hu = graph.tanh(hu @ graph.transpose(w * 2.0))
        (gu,) = grad.gradients(graph.reduce_sum(hu * hu), [w])
        (hu2,) = grad.gradients(graph.reduce_sum(gu * gu), [w])
    transposes = [n for n in g.nodes if n.op == "Transpose" and n.frame is not None
                  and n.frame.frame_name == "while"]
    pushed = {p.inputs[1].node for p in g.nodes if p.op == "StackPush"}
    assert transposes and not pushed & set(transposes)
    w0 = np.arange(9.0).reshape(3, 3) / 20
    a, b, c, d = Session(g).run([gw, hw, gu, hu2], {w: w0})
    np.testing.assert_allclose(a, c, rtol=1e-12)
    np.testing.assert_allclose(b, d, rtol=1e-10)


def test_one_push_and_one_pop_per_iteration_whatever_the_number_of_saved_values():
    g = graph.Graph()
    with g.as_default():
        w = graph.placeholder(np.float64, (), name="w")
        x0 = graph.constant(np.linspace(0.0, 1.0, 10))

        def body(i, x):
            for _ in range(4):
                x = graph.sin(x) * w  # saves x and sin(x), four times
            return i + 1, x
        _, x = graph.while_loop(lambda i, x: i < 7, body, (graph.constant(0), x0))
        (gw,) = grad.gradients(graph.reduce_sum(x), [w])
        (hw,) = grad.gradients(gw, [w])  # the gradient loop's own saves are batched too
    by_stack = {}
    for n in g.nodes:
        if n.op in ("StackPush", "StackPop"):
            by_stack.setdefault(stack_of(n.inputs[0]), []).append(n)
    # each stack: one push in one loop and one pop in its gradient loop. The first computation saves 8
    # values per iteration in one slot; the second saves 8 in the forward loop, 21 in the first gradient
    # loop, and the 8 gradients of the first computation's saved values
    assert all(sorted(n.op for n in ns) == ["StackPop", "StackPush"] for ns in by_stack.values())
    assert sorted(n.attrs["num_values"] for ns in by_stack.values() for n in ns if n.op == "StackPush") \
        == [8, 8, 8, 21]
    sess = Session(g)
    mem = memory_manager(sess.runtime)
    a, b = sess.run([gw, hw], {w: 0.9})
    assert mem.bytes_in_use == 0
    eps = 1e-6  # the second derivative against central differences of the first
    ga, gb = sess.run(gw, {w: 0.9 + eps}), sess.run(gw, {w: 0.9 - eps})
    assert b == pytest.approx((ga - gb) / (2 * eps), rel=1e-6)
