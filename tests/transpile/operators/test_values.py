"""values.py: variables without a value, reading them (`ld`), and global assignment."""
import numpy as np
import pytest

import graph
from exec import Session
from transpile.operators.facts import BranchFacts, IfFacts
from transpile.operators.staging import StagingError
from transpile.operators.values import (
    ConditionallyDefinedError,
    MaybeDefined,
    PartiallyDefined,
    Undefined,
    UndefinedReturn,
    ld,
    one_sided_message,
    to_global,
    undefined_return,
)


def test_reading_an_undefined_variable_is_python_s_error():
    with pytest.raises(UnboundLocalError, match="local variable 'x' is used before it is assigned"):
        ld(Undefined("x"))
    assert ld(3) == 3
    assert isinstance(undefined_return(), UndefinedReturn) and isinstance(undefined_return(), Undefined)


def test_a_partially_defined_variable_raises_its_message_with_the_condition(g):
    cond = graph.placeholder(np.bool_, ())
    value = PartiallyDefined("y", 1.0, "y is assigned in one branch", cond)
    with pytest.raises(ConditionallyDefinedError, match="y is assigned in one branch") as info:
        ld(value)
    assert info.value.graph_conditions == [cond]
    assert isinstance(info.value, NameError)


def test_one_sided_messages_name_both_branches():
    facts = IfFacts(3, BranchFacts(4, {"y": 5}), BranchFacts(7), filename="p.py")
    text = one_sided_message("y", "true", facts)
    assert "assigned in the true branch of the `if` at p.py:3 (line 5) but not in the false branch (line 7)" in text
    no_else = IfFacts(3, BranchFacts(4, {"y": 5}), BranchFacts(0), has_else=False, filename="p.py")
    assert "and the `if` has no else branch" in one_sided_message("y", "true", no_else)
    assert "in the false branch" in one_sided_message("y", "false", facts)


def test_a_maybe_defined_value_is_checked_when_the_graph_runs(g):
    flag = graph.placeholder(np.bool_, ())
    value = ld(MaybeDefined("z", graph.constant(np.float32(2.0)), flag, "the loop at p.py:9, which ran zero times"))
    session = Session(g)
    assert session.run(value, {flag: True}) == 2.0
    with pytest.raises(Exception, match="variable 'z' is used.*but was never assigned: the loop at p.py:9"):
        session.run(value, {flag: False})


def test_maybe_defined_is_a_composite_of_its_value_and_flag(g):
    maybe = MaybeDefined("z", (graph.constant(1.0), graph.constant(2.0)), graph.constant(True), "w")
    flat = maybe._flat_tensors()
    assert len(flat) == 3 and flat[-1] is maybe.defined
    again = maybe._with_flat_tensors(flat[::-1])
    assert again.defined is flat[0] and again.value == (flat[2], flat[1]) and again.name == "z"


def test_a_global_cannot_hold_a_graph_value_outside_a_trace(g):
    assert to_global("G", [1, 2]) == [1, 2]
    with pytest.raises(StagingError, match="cannot assign a graph tensor to the global variable G"):
        to_global("G", graph.constant(1.0))
