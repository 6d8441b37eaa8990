"""Errors an op's inference raises are classes of graph.errors: named, caught by name and pickled whole."""
import pickle
import traceback

import numpy as np
import pytest

import graph as G
from graph.errors import GraphError, OpTypeError, OpValueError, ShapeError


def _mismatched_matmul():
    g = G.Graph()
    with g.as_default():
        return G.matmul(G.placeholder(np.float64, [2, 3]), G.placeholder(np.float64, [4, 5]))


def test_an_inference_value_error_is_an_op_value_error():
    with pytest.raises(OpValueError, match=r"MatMul\(float64\[2,3\], float64\[4,5\]\)") as info:
        _mismatched_matmul()
    assert isinstance(info.value, GraphError) and isinstance(info.value, ValueError)
    assert __file__ in str(info.value)  # located at the user's line
    last_line = traceback.format_exception_only(info.value)[-1]
    assert last_line.startswith("graph.errors.OpValueError: ")


def test_the_same_error_twice_is_of_one_class():
    classes = set()
    for _ in range(2):
        with pytest.raises(GraphError) as info:
            _mismatched_matmul()
        classes.add(type(info.value))
    assert classes == {OpValueError}


def test_op_type_error_is_a_type_error():
    assert issubclass(OpTypeError, GraphError) and issubclass(OpTypeError, TypeError)


@pytest.mark.parametrize("make", [lambda: _mismatched_matmul(), lambda: (_ for _ in ()).throw(ShapeError("bad"))])
def test_a_located_error_pickles_with_its_message_and_location(make):
    with pytest.raises(GraphError) as info:
        make()
    error = info.value
    error.add_note("a note")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error) and copy.location == error.location and copy.bare_message == error.bare_message
    assert copy.__notes__ == ["a note"]
