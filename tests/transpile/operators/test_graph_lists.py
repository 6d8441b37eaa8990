"""graph_lists.py: a GraphList changes its stacked items as Python's list methods change a list."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph
from exec import Session
from tests.transpile.operators.conftest import run
from transpile.operators.graph_lists import GraphList, ItemSpec
from transpile.operators.staging import StagingError

OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(-9, 9)),
    st.tuples(st.just("insert"), st.integers(-4, 4), st.integers(-9, 9)),
    st.tuples(st.just("pop"), st.integers(-1, 0)),
    st.tuples(st.just("extend"), st.lists(st.integers(-9, 9), max_size=2)),
    st.tuples(st.just("reverse")), st.tuples(st.just("sort")), st.tuples(st.just("set"), st.integers(-1, 0),
                                                                           st.integers(-9, 9))),
    max_size=6)


def _apply(target, op):
    name, *args = op
    if name == "set":
        target[args[0]] = args[1]
    else:
        getattr(target, name)(*args)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-9, 9), min_size=1, max_size=4), OPS)
def test_graph_list_methods_are_python_s(start, ops):
    want = list(start)
    g = graph.Graph()
    with g.as_default():
        gl = GraphList.from_list(start, "xs")
        popped = []
        for op in ops:
            if op[0] in ("pop", "set") and not want:
                continue
            if op[0] == "pop":
                popped.append((want.pop(*op[1:]), gl.pop(*op[1:])))
            else:
                _apply(want, op)
                _apply(gl, op)
        got, got_popped = Session(g).run([gl.items, [p for _, p in popped]])
    assert got.tolist() == want
    assert [int(p) for p in got_popped] == [p for p, _ in popped]


def test_pop_of_an_empty_list_fails_when_the_graph_runs(g):
    gl = GraphList.from_list([1], "xs")
    gl.pop()
    item = gl.pop()
    with pytest.raises(Exception, match="pop from empty list"):
        run(g, item)


def test_an_empty_list_learns_its_items_from_the_first(g):
    gl = GraphList.from_list([], "xs")
    assert gl.guessed
    gl.append(np.float32(2))
    assert not gl.guessed and gl.items.dtype == np.float32 and gl.spec == ItemSpec(np.dtype(np.float32), (), None)
    assert run(g, gl.items).tolist() == [2.0]


def test_items_keep_one_dtype(g):
    ints = GraphList.from_list([np.int32(1)], "xs")
    ints.append(7)                  # a Python number takes the items' dtype
    assert ints.items.dtype == np.int32
    with pytest.raises(StagingError, match="is added to a list of int32 items"):
        ints.append(np.float64(0.5))


def test_python_numbers_stay_python_numbers(g):
    gl = GraphList.from_list([1, 2], "xs")
    assert gl.python_type is int and gl.spec.python_type is int
    gl.append(np.int64(3))
    assert gl.python_type is None


def test_what_plain_python_cannot_do_with_it(g):
    gl = GraphList.from_list([1.0], "xs")
    with pytest.raises(TypeError, match="len\\(\\) of a list whose length changes"):
        len(gl)
    with pytest.raises(TypeError):
        iter(gl)
    with pytest.raises(StagingError):
        gl.sort(key=abs)


def test_index_count_and_slices(g):
    gl = GraphList.from_list([3, 1, 3], "xs")
    assert run(g, gl.index(1)) == 1
    got = run(g, [gl.count(3), gl[1:].items, gl[-1], (gl * 2).items])
    assert got[0] == 2 and got[1].tolist() == [1, 3] and got[2] == 3 and got[3].tolist() == [3, 1, 3] * 2


def test_item_specs_compare_dtype_shape_and_python_type():
    assert ItemSpec(np.dtype(np.float32), (2,), None) == ItemSpec(np.dtype("float32"), (2,), None)
    assert ItemSpec(np.dtype(np.float32), (2,), None) != ItemSpec(np.dtype(np.float32), (2,), float)
    assert ItemSpec(np.dtype(np.float32), (2,), None) != ItemSpec(np.dtype(np.float32), (3,), None)
