"""loop_options.py: options are checked as graph.while_loop checks them, and apply only inside a graph
loop's body."""
import numpy as np
import pytest

import transpile
from exec.device import SimulatedDevice
from transpile.operators.loop_options import loop_options, memory_policy_options
from transpile.operators.trace_state import LoopFrame, trace_state


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_a_bad_iteration_limit_is_refused(bad):
    with pytest.raises(ValueError, match="maximum_iterations must be an int >= 0"):
        loop_options(maximum_iterations=bad)


def test_memory_policies():
    assert memory_policy_options("recompute", 4) == ("recompute", 4)
    assert memory_policy_options("keep", None)[1] is None
    with pytest.raises(ValueError):
        memory_policy_options("forget", None)
    with pytest.raises(ValueError):
        loop_options(memory_policy="forget")


def test_outside_a_graph_loop_the_options_do_nothing():
    assert loop_options(maximum_iterations=3) is None
    frame = LoopFrame(object(), staged=False)     # a loop running in Python
    trace_state().loops.append(frame)
    try:
        assert loop_options(maximum_iterations=3, memory_policy="keep") is None
    finally:
        trace_state().loops.remove(frame)


def _swapping_loop(x, n):
    i = 0
    while i < n:
        transpile.loop_options(memory_policy="swap")
        x = x * 0.5
        i += 1
    return x


def test_swap_in_a_loop_body_without_a_device_is_refused_naming_the_line():
    """Swapping moves a loop's saved values off a device: a function without one would silently keep them
    (as transpile.function(memory_policy='swap') and exec.Session(memory_policy='swap') refuse it)."""
    line = _swapping_loop.__code__.co_firstlineno + 3
    with pytest.raises(ValueError, match=rf"test_loop_options\.py:{line}: transpile\.loop_options\(memory_policy="
                                         r"'swap'\) needs a device.*transpile\.function\(_swapping_loop, "
                                         r"device=SimulatedDevice"):
        transpile.function(_swapping_loop)(np.ones(2), 3)
    assert _swapping_loop(np.ones(2), 3)[0] == 0.125   # plain Python: the option does nothing
    on_device = transpile.function(_swapping_loop, device=SimulatedDevice(memory_limit=1 << 20))
    np.testing.assert_array_equal(on_device(np.ones(2), 3), [0.125, 0.125])
