"""Stack memory: a gradient loop saves exactly what its backward pass reads, and frees it as it pops."""
import numpy as np
import pytest

import graph
import grad
from exec import Session
from exec.memory import memory_manager


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
