"""list_items.py: `lists[k].append(v)`, with k a Python value or a graph tensor."""
import numpy as np
import pytest

import graph
from exec import Session
from transpile.operators.list_items import append_at
from transpile.operators.staging import StagingError


def test_a_python_index_appends_to_that_list():
    lists = [[1], [2]]
    assert append_at(lists, 1, 3) is lists and lists == [[1], [2, 3]]


def test_a_graph_index_grows_the_list_it_picks_when_the_graph_runs(g):
    k = graph.placeholder(np.int64, ())
    grown = append_at([[], []], k, graph.constant(np.float32(5)), "groups")
    assert len(grown) == 2
    session = Session(g)
    for pick in (0, 1):
        sizes = session.run([item.size() for item in grown], {k: pick})
        assert list(sizes) == [int(pick == 0), int(pick == 1)]


def test_a_graph_index_needs_a_list_of_lists(g):
    with pytest.raises(StagingError, match="`groups\\[k\\].append\\(...\\)` with a graph-tensor index"):
        append_at(({}, {}), graph.constant(np.int64(0)), 1, "groups")
