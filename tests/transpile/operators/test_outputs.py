"""outputs.py: what a trace hands out: tensors as they are, lists built in graph control flow as
ListOutput, tensors that stand for Python numbers as NumberOutput, arrays as their contents."""
import numpy as np
import pytest

import graph
from graph.node import Tensor
from transpile.operators.arrays import MutableArray
from transpile.operators.data_structures import TensorList
from transpile.operators.graph_lists import GraphList
from transpile.operators.iterables import range_
from transpile.operators.leaves import mark_weak_type
from transpile.operators.outputs import ListOutput, NumberOutput, output_value
from transpile.operators.trace_state import tracing
from transpile.operators.values import MaybeDefined, Undefined


def test_lists_built_in_graph_control_flow_are_list_outputs(g):
    out = output_value(TensorList.from_list([1, 2]))
    assert isinstance(out, ListOutput) and out.python_type is int and out.kind == "int"
    assert out.finish(np.array([1, 2])) == [1, 2] and all(type(v) is int for v in out.finish(np.array([1, 2])))
    floats = output_value(GraphList.from_list([np.float32(1)], "xs"))
    assert floats.kind == "items" and floats.tensor is floats.items


def test_a_tensor_that_stands_for_a_python_number_is_a_number_output(g):
    with tracing():
        t = graph.placeholder(np.float64, ())
        mark_weak_type(t, float)
        out = output_value(t)
        assert isinstance(out, NumberOutput) and out.kind == "float"
        assert out.finish(np.float64(2.5)) == 2.5 and type(out.finish(np.float64(2.5))) is float
        plain = graph.placeholder(np.float64, ())
        assert output_value(plain) is plain


def test_other_values(g):
    contents = np.zeros(2)
    assert output_value(MutableArray(contents)) is contents
    assert output_value(3) == 3
    n = graph.placeholder(np.int64, ())
    assert isinstance(output_value(range_(n)), Tensor)
    maybe = output_value(MaybeDefined("m", graph.constant(1.0), graph.constant(True), "w"))
    assert isinstance(maybe, Tensor)
    with pytest.raises(UnboundLocalError):
        output_value(Undefined("r"))
