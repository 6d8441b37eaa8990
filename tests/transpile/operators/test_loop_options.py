"""loop_options.py: options are checked as graph.while_loop checks them, and apply only inside a graph
loop's body."""
import pytest

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
