"""leaves.py: what each leaf of a value is, its dtype as a tensor, its conversion, and numpy's
weak-scalar rule (NEP 50) for tensors that stand for Python numbers."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph
from graph.node import Tensor
from transpile.operators.leaves import (
    cast_leaves,
    convert_leaf,
    describe,
    has_graph_values,
    is_composite,
    is_convertible,
    is_flat_numeric_list,
    is_numeric,
    is_tensor,
    is_weak,
    leaf_dtype,
    mark_weak,
    mark_weak_type,
    same_leaves,
    weak_type,
)
from transpile.operators.trace_state import tracing

DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16,
                                np.float32, np.float64)]


def test_kinds_of_leaves(g):
    t = graph.constant(np.float32(1))
    assert is_tensor(t) and not is_tensor(np.float32(1))
    assert is_weak(1) and is_weak(True) and is_weak(1.5) and not is_weak(np.float64(1.5)) and not is_weak("1")
    assert is_numeric("text") and is_numeric(np.zeros(2)) and not is_numeric(None) and not is_numeric([1])
    assert is_convertible([1, None, (2.0, t)]) and not is_convertible([object()])
    assert not is_convertible(np.array(["a"]))
    assert is_flat_numeric_list([1, t, np.int8(2)]) and not is_flat_numeric_list([[1]])
    assert has_graph_values({"a": [1, t]}) and not has_graph_values({"a": [1, 2.0]})
    assert not is_composite(t) and is_composite(graph.TensorArray(np.float32))


def test_leaf_dtypes(g):
    assert leaf_dtype(1) == np.int64 and leaf_dtype(1.0) == np.float64 and leaf_dtype(True) == np.bool_
    assert leaf_dtype(np.float16(1)) == np.float16 and leaf_dtype(np.zeros(2, np.int8)) == np.int8
    assert leaf_dtype(graph.constant(np.int32(1))) == np.int32
    assert leaf_dtype(None) is None


def test_convert_leaf(g):
    assert convert_leaf(None) is None
    assert convert_leaf(3).dtype == np.int64 and convert_leaf(3, np.float32).dtype == np.float32
    t = graph.constant(np.float32(1))
    assert convert_leaf(t) is t and convert_leaf(t, np.float64).dtype == np.float64
    with pytest.raises(TypeError):
        convert_leaf(object())


def test_cast_leaves_keeps_structure_and_marks_non_numeric_leaves(g):
    out = cast_leaves({"a": 1, "b": ("s", 2.0)}, [np.dtype(np.float32), None, np.dtype(np.float16)])
    assert out["a"].dtype == np.float32 and out["b"][0] is None and out["b"][1].dtype == np.float16
    single = cast_leaves(1, [np.dtype(np.int8)])
    assert isinstance(single, Tensor) and single.dtype == np.int8
    with pytest.raises(ValueError):
        cast_leaves((1, 2), [np.dtype(np.int8)])


def test_same_leaves():
    a, b = object(), object()
    assert same_leaves([a, {"k": b}], [a, {"k": b}])
    assert not same_leaves([a, b], [a, object()])
    assert not same_leaves([a, [b]], [a, b])
    assert not same_leaves(np.float64(1.0), np.float64(1.0))   # equal numbers, other objects


def test_describe(g):
    assert describe(graph.placeholder(np.float32, (None, 3))) == "a float32[?,3] tensor"
    assert describe(None) == "None" and describe("s") == "a str"
    assert describe([1, 2]).startswith("list ")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DTYPES), st.sampled_from([True, 2, 1.5]))
def test_a_tensor_that_stands_for_a_python_number_is_weak_as_numpy_s_scalars(dtype, number):
    """NEP 50: a Python number takes an array's dtype; so does a tensor marked as standing for one."""
    want = (np.zeros(2, dtype) + number).dtype
    g = graph.Graph()
    with g.as_default(), tracing():
        t = graph.constant(np.asarray(number, dtype=leaf_dtype(number)))
        mark_weak_type(t, type(number))
        assert weak_type(t) is type(number)
        got = graph.add(graph.constant(np.zeros(2, dtype)), t)
        assert got.dtype == want
        unmarked = graph.add(graph.constant(np.zeros(2, dtype)), graph.constant(np.asarray(number,
                                                                                 leaf_dtype(number))))
        assert unmarked.dtype == np.result_type(dtype, leaf_dtype(number))


def test_arithmetic_of_weak_tensors_and_python_numbers_is_weak(g):
    with tracing():
        s = graph.placeholder(np.int64, ())
        mark_weak_type(s, int)
        assert weak_type(s * 2) is int
        assert weak_type(-(s + 1)) is int
        f = graph.placeholder(np.float64, ())
        mark_weak_type(f, float)
        assert weak_type(f * 0.5 + s) is float
        assert weak_type(s * graph.placeholder(np.int64, ())) is None   # (an array's: not a Python number)
        assert weak_type(s * np.float32(2)) is None                     # a numpy scalar is not weak


def test_a_weak_int_times_a_python_float_is_a_weak_float(g):
    with tracing():
        s = graph.placeholder(np.int64, ())
        mark_weak_type(s, int)
        assert weak_type(s * 0.5) is float
        assert graph.add(graph.constant(np.ones(2, np.float32)), s * 0.5).dtype == np.float32


def test_mark_weak_takes_the_widest_python_type(g):
    with tracing():
        t = graph.constant(np.float64(0))
        mark_weak(t, 1, 2.5)
        assert weak_type(t) is float
        u = graph.constant(np.float64(0))
        mark_weak(u, 1, np.float64(2))
        assert weak_type(u) is None


def test_weak_marks_end_with_the_trace(g):
    with tracing():
        t = graph.constant(np.int64(1))
        mark_weak_type(t, int)
    assert weak_type(t) is None
