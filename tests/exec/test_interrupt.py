"""Ctrl-C during a run: it stops with RunInterrupted (a KeyboardInterrupt) naming the loop and the iteration
it was in, in both execution modes; no kernel runs after it, Variables hold whole writes, and the session
runs again afterwards."""
import _thread
import sys
import threading

import numpy as np
import pytest

import graph as G
from exec import RunInterrupted, Session

MODES = ["dataflow", "compiled"]


def _interrupt_after(seconds: float) -> threading.Timer:
    """Ctrl-C as the main thread receives it (`_thread.interrupt_main` raises KeyboardInterrupt there)."""
    timer = threading.Timer(seconds, _thread.interrupt_main)
    timer.start()
    return timer


def _endless_loops():
    """A loop that never ends, inside one that would run once; each inner iteration adds 1 to every
    element of a Variable (and does a matmul, heavy enough for the worker pool)."""
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.zeros(4), name="v")
        w = G.constant(np.eye(96))

        def inner(j, x):
            y = x @ w
            with G.control_dependencies([v.assign_add(np.ones(4))]):
                return j + 1, G.identity(y)
        lines = {"inner": sys._getframe().f_lineno + 3, "outer": sys._getframe().f_lineno + 5}

        def outer(i, x):
            _, x = G.while_loop(lambda j, x: j >= 0, inner, (G.constant(0), x))
            return i + 1, x
        out = G.while_loop(lambda i, x: i < 1, outer, (G.constant(0), G.constant(np.ones((96, 96)))))
    return g, v, out, lines


@pytest.mark.parametrize("mode", MODES)
def test_ctrl_c_names_the_loops_and_iterations_and_leaves_variables_whole(mode):
    g, v, out, lines = _endless_loops()
    session = Session(g, mode=mode, inter_op_threads=2)
    timer = _interrupt_after(0.5)
    with pytest.raises(RunInterrupted) as info:
        session.run(out)
    timer.join()
    assert isinstance(info.value, KeyboardInterrupt)  # it still stops a program as Ctrl-C does
    message = str(info.value)
    assert message.startswith("the run was interrupted (Ctrl-C) in iteration ")
    inner = f"of the while loop at {__file__}:{lines['inner']}"
    outer = f"in iteration 0 of the while loop at {__file__}:{lines['outer']}"
    assert inner in message and outer in message and message.index(inner) < message.index(outer), message
    value = v.value.copy()
    assert value[0] > 0 and np.all(value == value[0]) and value[0] == int(value[0])  # whole writes only
    assert not v.value.flags.writeable
    # nothing of the interrupted run goes on: the Variable stays as it was, and the session runs again
    assert np.array_equal(session.run(v), value)
    assert np.array_equal(v.value, value)


@pytest.mark.parametrize("mode", MODES)
def test_ctrl_c_outside_loops_still_stops_the_run(mode):
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [None], name="x")
        y = G.reduce_sum(x * x)
    session = Session(g, mode=mode)
    timer = _interrupt_after(0.2)
    with pytest.raises(KeyboardInterrupt) as info:
        for _ in range(10_000_000):   # many short runs: the interrupt lands in one, or between two
            session.run(y, {x: np.arange(1000.0)})
    timer.join()
    if isinstance(info.value, RunInterrupted):
        assert "in iteration" not in str(info.value)
