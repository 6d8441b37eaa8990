"""arrays.py: MutableArray is written in place as a numpy array is, its views write through to their base,
and while tracing every write is journaled so that it can be found (written_since) and undone."""
import numpy as np
import pytest

import graph
from graph.node import Tensor
from tests.transpile.operators.conftest import run
from transpile.operators.arrays import (
    MutableArray,
    fresh,
    frozen,
    journal_mark,
    new_array,
    set_array_item,
    undo_writes,
    write_into,
    written_since,
)
from transpile.operators.trace_state import tracing


def test_known_contents_change_in_place_as_numpy(g):
    contents = np.zeros(3)
    a = MutableArray(contents)
    a[1] = 5.0
    a += 1
    assert a.value is contents and contents.tolist() == [1, 6, 1]
    assert a.is_known and a.dtype == np.float64 and len(a) == 3


def test_a_graph_value_makes_the_contents_a_tensor_of_the_array_s_dtype(g):
    a = MutableArray(np.zeros(3, np.float32))
    a[0] = graph.constant(2.0)          # numpy's item assignment casts
    assert not a.is_known and isinstance(a.value, Tensor) and a.dtype == np.float32
    a += graph.constant(np.float32(1))
    assert run(g, a.tensor()).tolist() == [3, 1, 1]


def test_in_place_results_cast_with_same_kind(g):
    a = MutableArray(np.zeros(2, np.int64))
    with pytest.raises(TypeError, match="cannot cast the result from float64 to the array's dtype int64"):
        a += graph.constant(1.5)


def test_views_write_through_to_their_base(g):
    base = MutableArray(np.zeros((2, 3)))
    row = base[1]
    assert row.base is base and row.root is base
    row[2] = graph.constant(7.0)
    flat = base.reshape(6)
    assert run(g, [base.tensor(), flat.tensor(), base.T.tensor()])[0].tolist() == [[0, 0, 0], [0, 0, 7]]
    assert run(g, flat.tensor()).tolist() == [0, 0, 0, 0, 0, 7]
    base[0] = graph.constant(1.0)       # a write into the base is seen through the view
    assert run(g, row.tensor()).tolist() == [0, 0, 7] and run(g, base.T.tensor())[0].tolist() == [1, 0]


def test_the_journal_undoes_writes_and_names_the_arrays_written(g):
    with tracing():
        before = MutableArray(np.zeros(2))
        mark = journal_mark()
        before[0] = graph.constant(1.0)
        made = MutableArray(np.ones(2))   # made after the mark: not "written since"
        made[0] = graph.constant(3.0)
        before[1] = graph.constant(2.0)
        assert written_since(mark) == [before]
        undo_writes(mark)
        assert before.is_known and before.value.tolist() == [0, 0]
        assert journal_mark() == mark


def test_fresh_and_new_array_only_while_tracing(g):
    result = np.arange(3.0)
    assert fresh(result) is result
    assert new_array(np.copy, result) is result
    with tracing():
        assert isinstance(fresh(result), MutableArray)
        assert fresh(np.float64(1)) == 1 and not isinstance(fresh(np.float64(1)), MutableArray)
        pair = fresh((result, 2))
        assert isinstance(pair[0], MutableArray) and pair[1] == 2
        assert isinstance(new_array(np.copy, result), MutableArray)
        assert new_array(np.asarray, result, (result,)) is result   # np.asarray(a) is a
        assert not isinstance(new_array(np.sum, result), MutableArray)


def test_frozen_replaces_arrays_by_their_contents_now(g):
    a = MutableArray(np.zeros(2))
    value = {"a": a, "n": [1, a]}
    out = frozen(value)
    assert isinstance(out["a"], Tensor) and isinstance(out["n"][1], Tensor) and out["n"][0] == 1
    plain = {"x": [1, 2]}
    assert frozen(plain) is plain


def test_set_array_item_copies_a_numpy_array_that_receives_a_graph_value(g):
    target = np.zeros(2)
    written = set_array_item(target, 0, graph.constant(4.0))
    assert isinstance(written, MutableArray) and target.tolist() == [0, 0]
    assert run(g, written.tensor()).tolist() == [4, 0]
    same = np.zeros(2)
    assert set_array_item(same, 0, 1.0) is same and same.tolist() == [1, 0]


def test_write_into_an_out_argument(g):
    out = MutableArray(np.zeros(2))
    assert write_into(out, graph.constant(np.ones(2)), "np.add(..., out=...)") is out
    assert run(g, out.tensor()).tolist() == [1, 1]
    with pytest.raises(TypeError, match="out= must be an array"):
        write_into([0, 0], graph.constant(np.ones(2)), "np.add(..., out=...)")
