"""Ctrl-C during a run on two devices in one process (a Session over a graph placed on two devices, or a
converted function with `graph.device` blocks) raises RunInterrupted naming the loops and iterations, as on
one device (tests/exec/test_interrupt.py): every device's part stops, whether the caller's thread was
running a loop or waiting for the other device's value, and the session runs again afterwards.

Ctrl-C comes as `_thread.interrupt_main` (what the one-device tests and IDEs use; it wakes no blocked wait)
or as a real SIGINT to the main thread. A run that would hang instead ends the test process after
`_HANG_S` with every thread's traceback (faulthandler), rather than hanging the suite.
"""
import _thread
import faulthandler
import signal
import threading
import time

import numpy as np
import pytest

import graph as G
import transpile
from exec import RunInterrupted, Session

_HANG_S = 60
INTERRUPTS = {
    "interrupt_main": _thread.interrupt_main,
    "SIGINT": lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT),
}


@pytest.fixture(autouse=True)
def _no_hang():
    faulthandler.dump_traceback_later(_HANG_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def _line(marker: str) -> int:
    with open(__file__) as f:
        return next(k for k, text in enumerate(f, 1) if text.rstrip().endswith(marker))


def _interrupted(how: str, run, after: float = 0.5) -> RunInterrupted:
    timer = threading.Timer(after, INTERRUPTS[how])
    timer.start()
    try:
        with pytest.raises(RunInterrupted) as info:
            run()
    finally:
        timer.cancel()
        timer.join()
    return info.value


def _nested_loops(body_device: str, counter_device: str):
    """An endless inner loop inside an outer loop that would run once; each inner iteration adds 1 to every
    element of a Variable on `body_device`, its counter on `counter_device`; `y` (on /cpu:0) doubles the
    result, so the caller's thread waits for /cpu:1's value when the loops are all there."""
    g = G.Graph()
    v = G.Variable(np.zeros(4), name="v")
    with g.as_default():
        n = G.placeholder(np.int64, (), name="n")

        def inner(j, x):
            with G.device(body_device):
                with G.control_dependencies([v.assign_add(np.ones(4))]):
                    y = x * 1.0 + 1.0
            with G.device(counter_device):
                return j + 1, y

        def outer(i, x):
            with G.device(counter_device):
                _, x = G.while_loop(lambda j, x: j < n, inner, (G.constant(0), x))  # inner loop
                return i + 1, x
        with G.device(counter_device):
            _, x = G.while_loop(lambda i, x: i < 1, outer, (G.constant(0), G.constant(np.ones(4))))  # outer loop
        with G.device("/cpu:0"):
            y = x * 2.0
    return g, v, n, y


def _check_stopped(error: RunInterrupted, v, where_device: str) -> np.ndarray:
    assert isinstance(error, KeyboardInterrupt)
    message = str(error)
    assert message.startswith("the run was interrupted (Ctrl-C) in iteration "), message
    inner = f"of the while loop at {__file__}:{_line('# inner loop')}"
    outer = f"in iteration 0 of the while loop at {__file__}:{_line('# outer loop')}"
    assert inner in message and outer in message and message.index(inner) < message.index(outer), message
    assert f"(on {where_device})" in message, message
    value = v.value.copy()
    assert value[0] > 0 and np.all(value == value[0])  # whole writes only
    time.sleep(0.2)
    np.testing.assert_array_equal(v.value, value)  # no device's executor goes on
    return value


@pytest.mark.parametrize("how", sorted(INTERRUPTS))
@pytest.mark.parametrize("counter_device", ["/cpu:0", "/cpu:1"])
def test_ctrl_c_stops_every_device_and_the_session_runs_again(how, counter_device):
    g, v, n, y = _nested_loops("/cpu:1", counter_device)
    session = Session(g)
    np.testing.assert_array_equal(session.run(y, {n: 3}), np.full(4, 8.0))
    assert len(session._plans) == 1 and len(next(iter(session._plans.values())).devices) == 2
    error = _interrupted(how, lambda: session.run(y, {n: 1 << 60}))
    value = _check_stopped(error, v, "/task:0/cpu:1")
    np.testing.assert_array_equal(session.run(y, {n: 3}), np.full(4, 8.0))
    np.testing.assert_array_equal(v.value, value + 3)


@pytest.mark.parametrize("how", sorted(INTERRUPTS))
def test_ctrl_c_stops_a_converted_function_on_two_devices(how):
    total = G.Variable(np.zeros(3), name="total")

    @transpile.function
    def accumulate(n):
        x = np.ones(3)
        i = 0
        while i < n:  # the loop
            with G.device("/cpu:1"):
                total.assign_add(x)
                x = x * 1.0
            with G.device("/cpu:0"):
                i += 1
        return x

    np.testing.assert_array_equal(accumulate(2), np.ones(3))
    error = _interrupted(how, lambda: accumulate(1 << 60))
    message = str(error)
    assert f"of the while loop at {__file__}:{_line('# the loop')}" in message, message
    value = total.value.copy()
    assert value[0] > 2 and np.all(value == value[0])
    time.sleep(0.2)
    np.testing.assert_array_equal(total.value, value)
    np.testing.assert_array_equal(accumulate(2), np.ones(3))
    np.testing.assert_array_equal(total.value, value + 2)

