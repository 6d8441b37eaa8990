"""py_builtins.py: the builtins on tensors, and the map from each builtin to its version."""
import builtins
import numbers

import numpy as np
import pytest

import graph
from graph.node import Tensor
from tests.transpile.operators.conftest import run
from transpile.operators.arrays import MutableArray
from transpile.operators.data_structures import TensorList
from transpile.operators.leaves import weak_type
from transpile.operators.py_builtins import (
    BUILTIN_FUNCTIONS,
    abs_,
    bool_,
    float_,
    int_,
    isinstance_,
    len_,
    max_,
    min_,
    sum_,
)
from transpile.operators.trace_state import tracing


def test_python_values_get_python_s_builtins():
    assert len_([1, 2]) == 2 and abs_(-2) == 2 and min_(3, 1) == 1 and max_([1, 5]) == 5
    assert sum_([1, 2], 3) == 6 and int_("12", 8) == 10 and float_("1.5") == 1.5 and bool_([]) is False
    assert isinstance_(1, int)


def test_len(g):
    assert len_(graph.constant(np.zeros((4, 2)))) == 4
    unknown = graph.placeholder(np.float32, (None,))
    assert isinstance(len_(unknown), Tensor)
    assert run(g, len_(TensorList.from_list([1, 2, 3]))) == 3
    with pytest.raises(TypeError, match="len\\(\\) of a scalar"):
        len_(graph.constant(1.0))


def test_reductions_over_the_first_axis(g):
    t = graph.constant(np.array([[1, 5], [4, 2]]))
    got = run(g, [min_(t), max_(t), sum_(t), sum_(t, 10), max_(t, 3), abs_(-t)])
    assert [v.tolist() for v in got] == [[1, 2], [4, 5], [5, 7], [15, 17], [[3, 5], [4, 3]], [[1, 5], [4, 2]]]


def test_scalar_conversions_stand_for_python_numbers(g):
    with tracing():
        x = graph.constant(np.array([-2.7]))
        i, f, b = int_(x), float_(graph.constant(np.int32(3))), bool_(graph.constant(0.0))
        assert (i.dtype, f.dtype, b.dtype) == (np.int64, np.float64, np.bool_)
        assert weak_type(i) is int and weak_type(f) is float and weak_type(b) is bool
        assert run(g, [i, f, b]) == [-2, 3.0, False]
        with pytest.raises(TypeError, match="only a tensor with one element"):
            int_(graph.constant(np.zeros(3)))


@pytest.mark.parametrize("value, cls, want", [
    (np.int32(1), int, True), (np.int32(1), float, False), (np.float64(1), float, True),
    (np.float32(1), float, False), (np.float32(1), numbers.Real, True), (np.zeros(2), np.ndarray, True),
    (np.float32(1), np.floating, True), (True, bool, True), (np.zeros(2), int, False)])
def test_isinstance_of_a_tensor_is_that_of_the_value_it_stands_for(g, value, cls, want):
    assert isinstance_(graph.constant(value), cls) is want
    assert isinstance_(graph.constant(value), (str, cls)) is want


def test_isinstance_of_an_array_of_converted_code():
    assert isinstance_(MutableArray(np.zeros(2)), np.ndarray) and not isinstance_(MutableArray(np.zeros(2)), list)


def test_every_builtin_maps_to_its_version():
    for builtin, version in BUILTIN_FUNCTIONS.items():
        assert version.__name__.rstrip("_") == builtin.__name__ or builtin is builtins.print
