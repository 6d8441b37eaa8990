"""trace_state.py: one TraceState per thread; loop frames collect requests; `tracing` blocks nest and
raise what an UncatchableError carries when the outermost one ends."""
import threading

import pytest

from transpile.errors import UncatchableError
from transpile.operators.trace_state import (
    LoopFrame,
    is_tracing,
    note_conditions,
    trace_state,
    tracing,
    trial_build,
)


def test_each_thread_has_its_own_state():
    mine = trace_state()
    assert trace_state() is mine
    seen = []
    thread = threading.Thread(target=lambda: seen.append(trace_state()))
    thread.start()
    thread.join()
    assert seen[0] is not mine


def test_tracing_blocks_nest():
    assert not is_tracing()
    with tracing():
        assert is_tracing()
        with tracing():
            assert trace_state().tracing == 2
        assert is_tracing()
    assert not is_tracing()


def test_tracing_forgets_weak_numbers_of_the_trace_it_ends():
    with tracing():
        trace_state().weak_numbers[1] = (object(), int)
    assert trace_state().weak_numbers == {}


def test_the_outermost_tracing_block_raises_the_carried_error():
    inner = ValueError("raised when the graph runs")
    with pytest.raises(ValueError) as info:
        with tracing():
            with pytest.raises(UncatchableError):   # an inner block lets it pass as it is
                with tracing():
                    raise UncatchableError(inner)
            raise UncatchableError(inner)
    assert info.value is inner
    assert not is_tracing()


def test_frame_requests_accumulate_and_make_a_rebuild_pending():
    state = trace_state()
    frame = LoopFrame(object())
    state.loops.append(frame)
    try:
        assert state.innermost_loop() is frame and not state.rebuild_pending()
        frame.request({0: "a"})
        frame.request({1: "b", 0: "c"})
        assert frame.requests == {0: "c", 1: "b"}
        assert state.rebuild_pending()
    finally:
        state.loops.remove(frame)
    assert state.innermost_loop() is None


def test_a_promotion_makes_a_rebuild_pending():
    state = trace_state()
    outer, inner = LoopFrame(object(), promotable=True), LoopFrame(object())
    state.loops.extend([outer, inner])
    try:
        assert state.innermost_loop() is inner
        outer.promote = True
        assert state.rebuild_pending()
    finally:
        del state.loops[-2:]


def test_trial_builds_count_while_active():
    assert trace_state().trial_builds == 0
    with trial_build():
        with trial_build(active=False):
            assert trace_state().trial_builds == 1
        with trial_build():
            assert trace_state().trial_builds == 2
    assert trace_state().trial_builds == 0


def test_note_conditions_keeps_the_innermost():
    error = RuntimeError("x")
    note_conditions(error, iter(["inner", "outer"]))
    note_conditions(error, ["later"])
    assert error.graph_conditions == ["inner", "outer"]
