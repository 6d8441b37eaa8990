"""Errors of cond / while_loop name the output or loop variable that is wrong, at any nesting depth,
with the user's line, and never an internal tensor name."""
import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph as G
from graph import nest
from graph.errors import GraphError

Pair = collections.namedtuple("Pair", "h c")

# nested structures of leaves (None marks a leaf)
structures = st.recursive(st.just(None), lambda inner: st.one_of(
    st.lists(inner, min_size=1, max_size=3).map(tuple),
    st.lists(inner, min_size=1, max_size=3),
    st.dictionaries(st.sampled_from("abc"), inner, min_size=1, max_size=3),
), max_leaves=8)


def _build(structure):
    return nest.pack_as(structure, [G.constant(np.float32(k)) for k in range(len(nest.flatten(structure)))])


@settings(max_examples=60, deadline=None)
@given(structures, structures)
def test_first_difference_points_at_a_real_difference(a, b):
    diff = nest.first_difference(a, b)
    assert (diff is None) == nest.same_structure(a, b)
    if diff is not None:  # the path leads into both structures, to parts that differ
        path, in_a, in_b = diff
        assert in_a != in_b
        assert any(p.startswith(path) for p in nest.paths(a)) and any(p.startswith(path) for p in nest.paths(b))


@pytest.mark.parametrize("before,after,label,was,now", [
    ((0.0, (0.0, 0.0)), (0.0, (0.0,)), "'b'", "(value, value)", "(value,)"),
    ((0.0, {"h": 0.0}), (0.0, {"h": 0.0, "c": 0.0}), "'b'", "{'h': value}", "{'h': value, 'c': value}"),
    ((0.0, {"h": (0.0, 0.0)}), (0.0, {"h": (0.0,)}), "\"b['h']\"", "(value, value)", "(value,)"),
    ((0.0, Pair(0.0, (0.0, 0.0))), (0.0, Pair(0.0, (0.0,))), "'b.c'", "(value, value)", "(value,)"),
])
def test_while_loop_structure_change_names_the_variable_and_path(before, after, label, was, now):
    with G.Graph().as_default():
        init = nest.map_structure(lambda v: G.constant(np.float32(v)), before)
        with pytest.raises(GraphError) as info:
            G.while_loop(lambda a, b: G.less(a, 3.0),
                         lambda a, b: nest.map_structure(lambda v: G.add(a, v), after),
                         init, names=["a", "b"])
    msg = str(info.value)
    assert f"loop variable {label} is {was} before the loop and {now} after one iteration" in msg, msg
    assert "test_control_flow_errors.py" in msg


def test_while_loop_structure_change_without_names_gives_the_position():
    with G.Graph().as_default():
        with pytest.raises(GraphError, match=r"loop variable loop_vars\[1\]\['k'\] is value before the loop and "
                                             r"\(value, value\) after"):
            G.while_loop(lambda i, d: G.less(i, 3), lambda i, d: (i + 1, {"k": (d["k"], d["k"])}),
                         (G.constant(0), {"k": G.constant(1.0)}))


def test_cond_structure_mismatch_names_the_output():
    p = lambda: G.placeholder(np.bool_, [])  # noqa: E731
    one = lambda: G.constant(1.0)  # noqa: E731
    with G.Graph().as_default():
        with pytest.raises(GraphError, match=r"output \['b'\]\[1\] of the cond is \(value, value\) in the true "
                                             r"branch and value in the false branch"):
            G.cond(p(), lambda: {"a": one(), "b": [one(), (one(), one())]}, lambda: {"a": one(), "b": [one(), one()]})
        with pytest.raises(GraphError, match=r"output 'state\[0\]' of the cond is \[value\] in the true branch"):
            G.cond(p(), lambda: (one(), ([one()], one())), lambda: (one(), (one(), one())), names=["x", "state"])


def test_loop_condition_error_shows_no_internal_names():
    with G.Graph().as_default():
        with pytest.raises(GraphError) as info:
            G.while_loop(lambda x: x, lambda x: x + 1, (G.constant(1.0),))
    assert "scalar bool, got a float64[] tensor" in str(info.value) and "Merge" not in str(info.value)
