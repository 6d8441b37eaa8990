"""conditionals.py: `if` and conditional expressions run Python's branch for a Python test, and build a
graph cond (CondTracer, rebuilt until the branches' modes settle) for a tensor test."""
import warnings

import numpy as np
import pytest

import graph
from exec import Session
from transpile.operators.arrays import MutableArray
from transpile.operators.conditionals import graph_cond, if_exp, if_stmt
from transpile.operators.facts import BranchFacts, IfFacts
from transpile.operators.staging import StagingError
from transpile.operators.trace_state import tracing
from transpile.operators.values import ConditionallyDefinedError, Undefined, UndefinedReturn


def test_a_python_test_runs_one_branch():
    ran = []
    out = if_stmt(1, lambda a: ran.append("t") or a + 1, lambda a: ran.append("f") or a - 1, (10,), ("a",))
    assert out == 11 and ran == ["t"]
    assert if_exp([], lambda: "yes", lambda: "no") == "no"


@pytest.mark.parametrize("flag", [True, False])
def test_a_tensor_test_picks_the_branch_when_the_graph_runs(g, flag):
    p = graph.placeholder(np.bool_, ())
    a, b = if_stmt(p, lambda a, b: (a + 1, b), lambda a, b: (a - 1, b * 2), (1, graph.constant(3.0)), ("a", "b"))
    assert Session(g).run([a, b], {p: flag}) == ([2, 3.0] if flag else [0, 6.0])
    value = if_exp(p, lambda: 1, lambda: 2.5)
    assert value.dtype == np.float64 and Session(g).run(value, {p: flag}) == (1 if flag else 2.5)


def test_the_true_branch_is_rebuilt_when_the_false_branch_shows_another_dtype(g):
    p = graph.placeholder(np.bool_, ())
    x = if_stmt(p, lambda x: 1, lambda x: graph.constant(np.float32(0.5)), (0,), ("x",))
    assert x.dtype == np.float32
    assert Session(g).run(x, {p: True}) == 1.0


def test_a_variable_assigned_in_one_branch_is_partially_defined(g):
    p = graph.placeholder(np.bool_, ())
    facts = IfFacts(5, BranchFacts(6, {"y": 6}), BranchFacts(8))
    y = if_stmt(p, lambda y: 1.0, lambda y: y, (Undefined("y"),), ("y",), facts)
    with pytest.raises(ConditionallyDefinedError, match="variable 'y' is assigned in the true branch"):
        raise y.error()


def test_the_return_value_of_one_branch_becomes_a_placeholder_in_the_other(g):
    p = graph.placeholder(np.bool_, ())
    r = if_stmt(p, lambda r: graph.constant(np.float32(4.0)), lambda r: r, (UndefinedReturn(),), ("r",))
    assert r.dtype == np.float32 and Session(g).run(r, {p: True}) == 4.0


def test_arrays_written_in_a_branch_are_extra_outputs(g):
    p = graph.placeholder(np.bool_, ())
    with tracing():
        a = MutableArray(np.zeros(2))

        def true_fn():
            a[0] = graph.constant(1.0)
        graph_cond(p, true_fn, lambda: None, (), (), "an `if`")
        for flag, want in ((True, [1, 0]), (False, [0, 0])):
            assert Session(g).run(a.tensor(), {p: flag}).tolist() == want


def test_branches_of_different_structures_are_an_error(g):
    p = graph.placeholder(np.bool_, ())
    with pytest.raises(StagingError, match="both branches must give it the same structure") as info:
        if_stmt(p, lambda x: (1, 2), lambda x: 1, (0,), ("x",))
    assert info.value.graph_conditions == [p]


def test_a_predicate_of_several_elements_is_an_error(g):
    with pytest.raises(StagingError, match="ambiguous"):
        if_stmt(graph.constant(np.ones(3)), lambda: None, lambda: None)


def test_dtypes_of_two_arrays_are_promoted_with_a_warning(g):
    p = graph.placeholder(np.bool_, ())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = if_stmt(p, lambda x: graph.constant(np.float32(1)), lambda x: graph.constant(np.float64(2)), (0,),
                    ("x",))
    assert x.dtype == np.float64 and any("both become float64" in str(w.message) for w in caught)
