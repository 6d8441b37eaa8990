"""uncatchable.py: an exception that happens only when the graph runs, inside a `try` of converted
code whose `except` would catch it in Python, is refused naming the raise and the except."""
import numpy as np
import pytest

import transpile
from tests.transpile.test_exact_semantics import raise_in_a_tensor_branch_caught_by_except as _caught_raise
from tests.transpile.test_exact_semantics import raise_in_a_tensor_branch_that_no_except_catches as _uncaught_type
from transpile.operators.staging import StagingError
from transpile.operators.uncatchable import refuse_if_caught


def test_outside_converted_code_nothing_is_refused():
    try:
        refuse_if_caught(ValueError("v"), "when the graph runs")
    except ValueError:  # (a plain Python except is not converted code's)
        pytest.fail("refused outside converted code")


def test_a_raise_in_a_graph_branch_that_an_except_would_catch_is_refused():
    with pytest.raises(StagingError, match=r"ValueError\('positive'\) at .* happens only when the graph takes "
                                           r"that branch .* so the `except ValueError` at .* cannot catch it"):
        transpile.function(_caught_raise)(np.float64(1.0))


def test_an_except_of_another_type_does_not_catch_it():
    f = transpile.function(_uncaught_type)
    assert f(np.float64(-2.0)) == -2.0
    with pytest.raises(Exception, match="positive"):
        f(np.float64(1.0))
