"""data_structures.py: lists appended to in graph loops (TensorList), list.append and item assignment."""
import numpy as np
import pytest

import graph
from graph.node import Tensor
from tests.transpile.operators.conftest import run
from transpile.operators.carry import Appended
from transpile.operators.data_structures import (
    NO_ITEMS,
    TensorList,
    as_tensor_list,
    list_append,
    list_builder,
    list_truth,
    set_item,
    stacked_list,
)
from transpile.operators.graph_lists import GraphList
from transpile.operators.staging import StagingError
from transpile.operators.trace_state import LoopFrame, trace_state


def test_a_tensor_list_appends_and_stacks(g):
    tl = TensorList.from_list([np.float32(1), np.float32(2)], name="xs")
    grown = tl.append(np.float32(5))
    assert grown is not tl
    assert run(g, grown.stack()).tolist() == [1, 2, 5]
    assert run(g, tl.stack()).tolist() == [1, 2]
    assert run(g, [grown[-1], grown[0], grown.size()]) == [5, 1, 3]


def test_a_tensor_list_remembers_whether_its_items_are_python_numbers(g):
    assert TensorList.from_list([], dtype=np.int64).python_type is NO_ITEMS
    ints = TensorList.from_list([1, 2])
    assert ints.python_type is int
    assert ints.append(3).python_type is int
    assert ints.append(np.int64(3)).python_type is None


def test_a_list_read_before_its_first_append_outside_a_loop_is_an_error(g):
    empty = TensorList(graph.TensorArray(None, name="xs"))
    with pytest.raises(StagingError, match="list 'xs' is read before anything is appended"):
        empty.read(0)


def test_stacked_list_is_a_graph_list_that_continues_its_builder(g):
    tl = TensorList.from_list([1, 2])
    stacked = stacked_list(tl)
    assert isinstance(stacked, GraphList) and list_builder(stacked) is tl and stacked.python_type is int
    assert run(g, stacked.items).tolist() == [1, 2]
    more = list_append(stacked, 3)
    assert isinstance(more, GraphList) and run(g, more.items).tolist() == [1, 2, 3]
    assert stacked_list(TensorList(graph.TensorArray(None))) == []
    assert list_builder([1]) is None


def test_list_truth_of_a_built_list_is_its_length(g):
    assert list_truth([]) == []
    t = list_truth(TensorList.from_list([1.0]))
    assert isinstance(t, Tensor) and run(g, t) == True  # noqa: E712


def test_list_append_to_a_python_list(g):
    items = [1]
    assert list_append(items, 2) is items and items == [1, 2]


def test_list_append_in_a_graph_loop_that_carries_the_list_asks_for_a_tensor_list():
    items = []
    frame = LoopFrame(object(), lists={id(items): 3}, staged=True)
    trace_state().loops.append(frame)
    try:
        list_append(items, 1.0)
    finally:
        trace_state().loops.remove(frame)
    assert frame.requests == {3: Appended()}


def test_as_tensor_list_of_a_python_list(g):
    tl = as_tensor_list([1, 2], np.dtype(np.float32), (), "xs")
    assert tl.array.dtype == np.float32 and run(g, tl.stack()).tolist() == [1.0, 2.0]
    assert as_tensor_list(tl, np.dtype(np.float32), (), "xs") is tl


def test_set_item(g):
    d = {}
    assert set_item(d, "k", 1) is d and d == {"k": 1}
    t = graph.constant(np.zeros(3, np.float32))
    written = set_item(t, 1, 5.0)
    assert written is not t and run(g, written).tolist() == [0, 5, 0]
    with pytest.raises(StagingError, match="cannot change graph tensor 't'"):
        set_item(t, 1, 5.0, in_place="t")
    with pytest.raises(StagingError, match="dict item is assigned with a graph-tensor key"):
        set_item({}, graph.constant(1), 1)
    with pytest.raises(StagingError, match="cannot assign an item of a list built in a graph loop"):
        set_item(TensorList.from_list([1]), 0, 2)


def test_set_item_of_a_numpy_array_with_a_graph_value_gives_a_new_array(g):
    a = np.zeros(3)
    written = set_item(a, 0, graph.constant(2.0))
    assert written is not a and a.tolist() == [0, 0, 0]
    assert run(g, written.tensor()).tolist() == [2, 0, 0]
