"""staging.py: building a construct until what it learns settles (rolling the graph back each time),
graph predicates for Python's truth of a tensor, and warnings only for code that is kept."""
import warnings

import numpy as np
import pytest

import graph
from tests.transpile.operators.conftest import run
from transpile.operators.staging import (
    MAX_ATTEMPTS,
    Rebuild,
    StagingError,
    build_until_settled,
    predicate,
    request_weak_numbers_first,
    warn_at_user_line,
)
from transpile.operators.trace_state import LoopFrame, trace_state, trial_build


def test_build_until_settled_rebuilds_until_an_attempt_returns_a_result(g):
    learned = []

    def attempt():
        graph.constant(np.float32(len(learned)), name="attempt")
        if len(learned) < 3:
            return Rebuild({len(learned): "change"})
        return "built"

    nodes_before = len(g.nodes)
    assert build_until_settled(attempt, learned.append, "never") == "built"
    assert learned == [{0: "change"}, {1: "change"}, {2: "change"}]
    assert len(g.nodes) == nodes_before + 1   # the abandoned attempts were rolled back


def test_build_until_settled_gives_up_after_max_attempts(g):
    calls = []

    def attempt():
        calls.append(1)
        return Rebuild({})

    with pytest.raises(StagingError, match="the loop kept changing"):
        build_until_settled(attempt, lambda changes: None, "the loop kept changing")
    assert len(calls) == MAX_ATTEMPTS


@pytest.mark.parametrize("value, want", [(np.int32(3), True), (np.int32(0), False), (np.float64(0.5), True),
                                         (np.array([[2.0]]), True), (np.array([0]), False)])
def test_predicate_is_python_truth(g, value, want):
    p = predicate(graph.constant(value), "an if")
    assert p.dtype == np.bool_ and p.shape == ()
    assert run(g, p) == want


def test_predicate_of_several_elements_is_ambiguous(g):
    with pytest.raises(StagingError, match=r"the condition of the `if` is a tensor of shape .*ambiguous"):
        predicate(graph.constant(np.zeros(3)), "the `if`")


def test_weak_numbers_are_requested_of_the_innermost_loop_that_has_them():
    state = trace_state()
    outer, inner = LoopFrame(object()), LoopFrame(object())
    outer.weak_probes = {0: "probe"}
    state.loops.extend([outer, inner])
    try:
        assert request_weak_numbers_first()
        assert outer.requests == {0: "probe"} and inner.requests == {}
    finally:
        del state.loops[-2:]
    assert not request_weak_numbers_first()


def test_warnings_of_code_that_is_thrown_away_are_not_shown():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with trial_build():
            warn_at_user_line("hidden")
        warn_at_user_line("shown")
    assert [str(w.message) for w in caught] == ["shown"]
