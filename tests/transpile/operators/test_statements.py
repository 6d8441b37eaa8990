"""statements.py: `assert` and `print` of Python values are Python's; of tensors, graph ops."""
import numpy as np
import pytest

import graph
from exec import Session
from transpile.operators.statements import assert_stmt, print_
from transpile.operators.trace_state import tracing


def test_python_asserts():
    assert assert_stmt(True, "never") is None
    with pytest.raises(AssertionError, match="lazy message"):
        assert_stmt(0, lambda: "lazy message")


def test_a_tensor_assert_is_checked_when_the_graph_runs(g):
    x = graph.placeholder(np.float32, ())
    check = assert_stmt(x > 0, lambda: "x must be positive")
    session = Session(g)
    session.run(check, {x: 1.0})
    with pytest.raises(Exception, match="x must be positive"):
        session.run(check, {x: -1.0})


def test_print_of_python_values_outside_a_trace_is_python_s(capsys):
    print_("a", 1, sep="-", end="!\n")
    assert capsys.readouterr().out == "a-1!\n"


def test_print_of_tensors_prints_when_the_graph_runs(g, capsys):
    x = graph.placeholder(np.int64, ())
    with tracing():
        print_("x is", x, [x, 2], {"k": x})
    assert capsys.readouterr().out == ""
    Session(g).run(g.last_effect(None), {x: 3})
    assert capsys.readouterr().out == "x is 3 [3, 2] {'k': 3}\n"
