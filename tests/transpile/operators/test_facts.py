"""facts.py: what the converters tell the operators, and how errors name variables and places."""
import dataclasses

import pytest

from transpile.operators.facts import (
    NO_FACTS,
    NO_IF_FACTS,
    BranchFacts,
    IfFacts,
    LoopFacts,
    filename_of,
    variable_label,
)


def _user_function():
    return 1


def test_variable_labels():
    assert variable_label("x") == "variable 'x'"
    assert variable_label("r", ("r",)) == "the return value"
    assert variable_label("<the value of the `and` expression>") == "the value of the `and` expression"


def test_filename_of_a_function_and_of_other_callables():
    assert filename_of(_user_function) == __file__
    assert filename_of(len) is None


def test_if_facts_name_their_place_only_when_known():
    facts = IfFacts(7, BranchFacts(8, {"y": 8}), BranchFacts(10))
    assert facts.at == ""
    placed = facts.in_file(_user_function)
    assert placed.at == f" at {__file__}:7"
    assert facts.filename is None   # in_file is a new record
    assert IfFacts(0, BranchFacts(0), BranchFacts(0), filename="f.py").at == ""


def test_branch_picks_the_side():
    facts = IfFacts(1, BranchFacts(2), BranchFacts(4))
    assert facts.branch("true").line == 2 and facts.branch("false").line == 4


def test_facts_are_frozen_and_the_defaults_are_empty():
    with pytest.raises(dataclasses.FrozenInstanceError):
        NO_FACTS.line = 3
    assert NO_FACTS.appends == () and NO_FACTS.resizes == () and NO_FACTS.return_vars == ()
    assert NO_IF_FACTS.has_else and NO_IF_FACTS.return_vars == ()
    assert LoopFacts(3, 4, appends=("l",)) == LoopFacts(3, 4, ("l",))
