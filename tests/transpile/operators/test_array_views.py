"""array_views.py: a view's `read` and `put` agree between numpy contents and graph contents, and never
change the contents they are given."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph
from exec import Session
from transpile.operators.array_views import (
    Index,
    Reshape,
    Transpose,
    holds_graph_value,
    indexes_one_element,
    is_basic_index,
    swapped_axes,
    transpose_axes,
)

VIEWS = [Index((1, slice(None))), Index((slice(0, 2), 2)), Index(slice(None, None, -1)), Reshape((4, 3)),
         Reshape((12,)), Transpose((1, 0))]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(VIEWS), st.integers(0, 2 ** 16))
def test_views_read_and_write_as_numpy_views_do(view, seed):
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((3, 4))
    kept = base.copy()
    want_read = view.read(base)
    new = rng.standard_normal(np.shape(want_read))
    want_base = base.copy()
    # numpy's own view, written through
    np_view = {Index: lambda: want_base[view.key] if isinstance(view, Index) else None,
               Reshape: lambda: want_base.reshape(view.shape),
               Transpose: lambda: want_base.transpose(view.axes)}[type(view)]()
    np_view[...] = new
    put = view.put(base, new)
    np.testing.assert_array_equal(put, want_base)
    np.testing.assert_array_equal(base, kept)       # the given contents are not changed
    g = graph.Graph()
    with g.as_default():
        t = graph.constant(base)
        got_read, got_put = Session(g).run([view.read(t), view.put(t, graph.constant(new))])
    np.testing.assert_array_equal(got_read, want_read)
    np.testing.assert_array_equal(got_put, want_base)


def test_basic_indexes(g):
    assert is_basic_index((1, slice(None), None, Ellipsis))
    assert is_basic_index(graph.constant(np.int64(1)))
    assert not is_basic_index([0, 1]) and not is_basic_index(True) and not is_basic_index(np.array([1]))
    assert not is_basic_index(graph.constant(np.float32(1)))
    assert indexes_one_element((1, 2), 2) and not indexes_one_element((1,), 2)
    assert not indexes_one_element((1, slice(None)), 2) and not indexes_one_element(1, None)


def test_axes():
    assert transpose_axes(3, None) == (2, 1, 0) and transpose_axes(3, ()) == (2, 1, 0)
    assert transpose_axes(3, ((1, 0, 2),)) == (1, 0, 2) and transpose_axes(3, (-1, 0, 1)) == (2, 0, 1)
    assert swapped_axes(3, 0, -1) == (2, 1, 0)


def test_holds_graph_value(g):
    assert holds_graph_value([1, {"k": graph.constant(1)}]) and not holds_graph_value((1, slice(None)))


def test_an_index_with_a_graph_value_is_not_known(g):
    assert Index((1, 2)).known and not Index((graph.constant(np.int64(1)),)).known
    with pytest.raises(Exception):
        Index(5).read(np.zeros(3))   # numpy's IndexError, not a silent value
