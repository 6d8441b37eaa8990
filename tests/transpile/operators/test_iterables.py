"""iterables.py: range/enumerate/zip of tensors, and the count and items a graph `for` loop reads."""
import builtins

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph
from exec import Session
from tests.transpile.operators.conftest import run
from transpile.operators.data_structures import TensorList
from transpile.operators.iterables import (
    GraphEnumerate,
    GraphRange,
    GraphZip,
    enumerate_,
    graph_source,
    is_graph_iterable,
    range_,
    zip_,
)


def test_python_values_give_python_s_iterables():
    assert range_(3) == builtins.range(3)
    assert list(enumerate_("ab", 1)) == [(1, "a"), (2, "b")]
    assert list(zip_([1, 2], "ab")) == [(1, "a"), (2, "b")]


def test_tensor_bounds_give_graph_iterables(g):
    n = graph.placeholder(np.int64, ())
    r = range_(1, n)
    assert isinstance(r, GraphRange) and is_graph_iterable(r)
    assert isinstance(enumerate_(r), GraphEnumerate) and isinstance(zip_(r, [1, 2]), GraphZip)
    with pytest.raises(TypeError, match="range\\(\\) needs integers"):
        range_(graph.constant(1.5))


@settings(max_examples=30, deadline=None)
@given(st.integers(-6, 6), st.integers(-6, 6), st.integers(-3, 3).filter(bool), st.integers(-8, 8),
       st.one_of(st.none(), st.integers(-8, 8)), st.one_of(st.none(), st.integers(-8, 8)),
       st.sampled_from([None, 1, 2, -1, -2]))
def test_graph_ranges_are_python_s(start, stop, step, index, lo, hi, by):
    want = builtins.range(start, stop, step)
    g = graph.Graph()
    with g.as_default():
        bounds = [graph.placeholder(np.int64, ()) for _ in range(3)]
        r = range_(*bounds)
        source = graph_source(r)
        n = source.n()
        fetches = [n, graph.convert(r[lo:hi:by])]
        if -len(want) <= index < len(want):
            fetches.append(r[index])
        got = Session(g).run(fetches, dict(zip(bounds, [np.int64(start), np.int64(stop), np.int64(step)])))
    assert got[0] == len(want)
    assert got[1].tolist() == list(want[lo:hi:by])
    if len(got) == 3:
        assert got[2] == want[index]


def test_sources_of_tensors_lists_enumerate_and_zip(g):
    t = graph.constant(np.array([[1, 2], [3, 4], [5, 6]]))
    tl = TensorList.from_list([10, 20])
    src = graph_source(zip_(t, enumerate_(tl, 5)))
    k = graph.constant(np.int64(1))
    n, (row, (i, item)) = run(g, [src.n(), src.item(k)])
    assert n == 2 and row.tolist() == [3, 4] and i == 6 and item == 20
    assert graph_source([1, 2]) is None


def test_a_scalar_tensor_cannot_be_iterated(g):
    with pytest.raises(Exception, match="cannot iterate over a scalar"):
        graph_source(graph.constant(1.0))
