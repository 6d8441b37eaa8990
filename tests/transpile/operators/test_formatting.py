"""formatting.py: text made of Python values is Python's; of graph values, a graph string whose value is
Python's text of the values when the graph runs."""
import numpy as np
import pytest

import graph
from exec import Session
from transpile.operators.formatting import fmt, format_, format_method, fstr, join, percent, repr_, str_
from transpile.operators.leaves import mark_weak_type
from transpile.operators.trace_state import tracing


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def test_python_values_are_formatted_by_python():
    assert fstr("a", fmt(1.5, ".2f"), fmt("x", "", ord("r"))) == "a1.50'x'"
    assert str_(3) == "3" and repr_("a") == "'a'" and format_(7, "03d") == "007"
    assert percent("%d-%s", (1, "b")) == "1-b" and format_method("{}+{k}", 1, k=2) == "1+2" and join(",", "ab") == "a,b"


@pytest.mark.parametrize("make, value, want", [
    (lambda x: fstr("v=", fmt(x, ".3f")), 1.5, "v=1.500"),
    (lambda x: str_(x), np.float32(2.5), "2.5"),
    (lambda x: repr_([x, 1]), np.int64(4), repr([np.int64(4), 1])),
    (lambda x: percent("%5.1f|%d", (x, x)), 2.25, "  2.2|2"),
    (lambda x: format_method("{0}/{0:.1f}", x), 3.0, "3.0/3.0"),
    (lambda x: join(", ", ["a", x]), np.int64(7), "a, 7"),
])
def test_graph_values_are_formatted_when_the_graph_runs(g, make, value, want):
    x = graph.placeholder(np.asarray(value).dtype, ())
    text = make(x)
    assert not isinstance(text, str)
    assert _text(Session(g).run(text, {x: value})) == want


def test_a_tensor_that_stands_for_a_python_number_is_formatted_as_that_number(g):
    with tracing():
        x = graph.placeholder(np.float64, ())
        mark_weak_type(x, float)
        text = str_(x)
        assert _text(Session(g).run(text, {x: 3.0})) == "3.0"


def test_printf_formatting_needs_as_many_values_as_specifiers(g):
    with pytest.raises(TypeError, match="not all arguments converted"):
        percent("%d %d", graph.constant(1))
