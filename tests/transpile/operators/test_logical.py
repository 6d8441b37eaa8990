"""logical.py: `and`, `or`, `not` short-circuit in Python and build graph conds for tensors."""
import numpy as np
import pytest

import graph
from exec import Session
from transpile.operators.logical import and_, not_, or_


def test_python_operands_short_circuit():
    calls = []

    def later(value):
        return lambda: calls.append(value) or value

    assert and_(0, later(1)) == 0 and or_(5, later(2)) == 5 and calls == []
    assert and_(1, later(3), later(4)) == 4 and calls == [3, 4]
    assert or_(0, later(""), later(7)) == 7
    assert not_([]) is True and not_(3) is False


@pytest.mark.parametrize("a, b", [(True, True), (True, False), (False, True), (False, False)])
def test_tensor_operands_are_python_s_results_when_the_graph_runs(g, a, b):
    x, y = graph.placeholder(np.bool_, ()), graph.placeholder(np.bool_, ())
    session = Session(g)
    fetches = [and_(x, lambda: y), or_(x, lambda: y), not_(x)]
    assert session.run(fetches, {x: a, y: b}) == [a and b, a or b, not a]


def test_the_second_operand_is_computed_only_when_needed(g):
    x = graph.placeholder(np.float32, ())
    # `x != 0 and 1 / x > 0.5`: the division's check would fail for x == 0 if it ran
    result = and_(x != 0, lambda: graph.assert_(x != 0, "divided by zero") is not None and 1 / x > 0.5)
    session = Session(g)
    assert session.run(result, {x: 0.0}) == False  # noqa: E712
    assert session.run(result, {x: 1.0}) == True  # noqa: E712


def test_not_of_a_number_tensor_is_its_truth(g):
    x = graph.placeholder(np.int32, ())
    assert Session(g).run(not_(x), {x: 0}) == True  # noqa: E712
