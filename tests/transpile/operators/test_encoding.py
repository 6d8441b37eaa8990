"""encoding.py: state tuples, specs and placeholders, and the paths of items inside a variable's value."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph
from graph import nest
from graph.node import Tensor
from tests.transpile.operators.conftest import run
from transpile.operators.carry import LeafSpec
from transpile.operators.data_structures import TensorList
from transpile.operators.encoding import (
    LIST_HANDLE,
    ListSlot,
    added_keys,
    fresh_containers,
    insert_at,
    list_paths,
    pack_result,
    replace_at,
    spec_of,
    stand_in,
    unpack_outputs,
    value_at,
    zeros_like_spec,
)
from transpile.operators.leaves import leaf_dtype
from transpile.operators.staging import StagingError
from transpile.operators.values import MaybeDefined

leaves = st.one_of(st.integers(-5, 5), st.floats(-2, 2, allow_nan=False), st.booleans())
values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.tuples(inner, inner),
    st.dictionaries(st.sampled_from("abc"), inner, max_size=3)), max_leaves=12)


def _paths(value, path=()):
    """Every path in `value` (to containers and leaves)."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _paths(v, path + (i,))


def _containers(value):
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _containers(v)
    elif isinstance(value, list):
        yield value
        for v in value:
            yield from _containers(v)
    elif isinstance(value, tuple):
        for v in value:
            yield from _containers(v)


def test_state_tuples():
    assert unpack_outputs(5, ("x",)) == (5,)
    assert unpack_outputs((1, 2), ("x",)) == ((1, 2),)
    assert unpack_outputs([1, 2], ("x", "y")) == (1, 2)
    assert unpack_outputs(None, ()) == ()
    assert pack_result((5,), ("x",)) == 5
    assert pack_result([1, 2], ("x", "y")) == (1, 2)


@settings(max_examples=60, deadline=None)
@given(st.lists(values, max_size=3))
def test_fresh_containers_never_alias_a_mutable_container(state):
    fresh = fresh_containers(tuple(state))
    assert len(fresh) == len(state)
    for old, new in zip(state, fresh):
        assert new == old
        assert nest.flatten(new) == nest.flatten(old)
        old_ids = {id(c) for c in _containers(old)}
        assert not old_ids & {id(c) for c in _containers(new)}


def test_fresh_containers_keep_the_leaves():
    leaf = object()
    (new,) = fresh_containers(([leaf],))
    assert new[0] is leaf


@settings(max_examples=60, deadline=None)
@given(values, st.data())
def test_replace_at_then_value_at_round_trips(value, data):
    path = data.draw(st.sampled_from(list(_paths(value))))
    marker = object()
    before = repr(value)
    replaced = replace_at(value, path, lambda item: (marker, item))
    assert value_at(replaced, path) == (marker, value_at(value, path))
    assert repr(value) == before                          # containers are rebuilt, not changed
    assert replace_at(value, path, lambda item: item) == value
    for other in _paths(value):                            # elsewhere nothing moved
        if other[:len(path)] != path and path[:len(other)] != other:
            assert value_at(replaced, other) == value_at(value, other)


def test_replace_at_keeps_named_tuples():
    from collections import namedtuple
    Pair = namedtuple("Pair", "a b")
    out = replace_at({"p": Pair(1, [2, 3])}, ("p", 1, 1), lambda v: v * 10)
    assert out == {"p": Pair(1, [2, 30])} and type(out["p"]) is Pair


def test_insert_at_adds_a_key_without_changing_the_value():
    value = {"a": {"b": 1}, "l": [{"c": 2}]}
    assert insert_at(value, ("a", "z"), 9) == {"a": {"b": 1, "z": 9}, "l": [{"c": 2}]}
    assert insert_at(value, ("l", 0, "d"), 4)["l"][0] == {"c": 2, "d": 4}
    assert value == {"a": {"b": 1}, "l": [{"c": 2}]}


def test_added_keys_finds_the_new_keys_at_their_paths():
    before = {"a": 1, "d": {"x": 1}, "l": [{"k": 1}], "t": (1, {})}
    after = {"a": 1, "b": 2, "d": {"x": 1, "y": 3}, "l": [{"k": 1, "m": 4}], "t": (1, {"n": 5})}
    assert added_keys(before, after) == {("b",): 2, ("d", "y"): 3, ("l", 0, "m"): 4, ("t", 1, "n"): 5}
    assert added_keys(after, after) == {}
    assert added_keys({"a": 1}, {"b": 1}) == {}   # a key removed: not keys added
    assert added_keys([1], [1, 2]) == {}


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from("abcd"), st.integers(), max_size=4),
       st.dictionaries(st.sampled_from("wxyz"), st.integers(), max_size=3))
def test_added_keys_inverts_insert_at(before, new):
    after = before
    for k, v in new.items():
        after = insert_at(after, (k,), v)
    assert added_keys(before, after) == {(k,): v for k, v in new.items()}


def test_spec_of_numbers_arrays_and_tensors(g):
    t = graph.placeholder(np.float32, (None, 3))
    spec = spec_of({"t": t, "a": np.zeros((2,), np.int16), "n": 1.5})
    by_key = dict(zip(sorted(["t", "a", "n"]), spec.leaves))
    assert by_key["t"] == LeafSpec(np.dtype(np.float32), (None, 3))
    assert by_key["a"] == LeafSpec(np.dtype(np.int16), (2,))
    assert by_key["n"].dtype == np.float64 and by_key["n"].shape == ()
    assert spec_of({"t": t, "a": np.ones((2,), np.int16), "n": -3.0}) == spec


def test_zeros_like_spec_is_zeros_of_the_spec_with_unknown_dims_empty(g):
    t = graph.placeholder(np.float32, (None, 3))
    keep = object()
    placeholder = zeros_like_spec(spec_of((t, [np.int64(7)], keep, None)), "variable 'x'")
    tensor, (number,), kept, none = placeholder
    assert isinstance(tensor, Tensor) and tensor.dtype == np.float32
    assert kept is keep and none is None
    got_t, got_n = run(g, [tensor, number])
    assert got_t.shape == (0, 3) and got_n == 0 and got_n.dtype == np.int64


def test_zeros_like_spec_of_a_str_leaf(g):
    out = zeros_like_spec(spec_of(("label", 1.0)), "variable 's'")
    assert isinstance(out[0], Tensor) and out[0].dtype == leaf_dtype("label")
    assert run(g, out[0]) == ""


def test_zeros_like_spec_of_a_maybe_defined_value_is_undefined(g):
    maybe = MaybeDefined("y", graph.constant(np.float32(2.0)), graph.constant(True), "somewhere")
    out = zeros_like_spec(spec_of(maybe), "variable 'y'")
    assert isinstance(out, MaybeDefined) and out.name == "y"
    assert run(g, out.defined) == False  # noqa: E712  (a numpy bool)


def test_zeros_like_spec_refuses_a_tensor_array(g):
    class Composite:
        def _flat_tensors(self):
            return []

        def _with_flat_tensors(self, tensors):
            return self

    with pytest.raises(StagingError, match="variable 'z' holds a Composite"):
        zeros_like_spec(spec_of(Composite()), "variable 'z'")


def test_list_paths_of_a_list_that_grows_in_one_branch(g):
    x = graph.constant(np.float32(1))
    (path,) = list_paths({"l": [x]}, {"l": [x, x]})
    assert path.path == ("l",) and path.dtype == np.float32 and path.stack_after
    assert list(list_paths({"l": [x]}, {"l": [x]})) == []


def test_list_paths_of_a_list_built_in_a_graph_loop(g):
    built = TensorList.from_list([np.float32(1)], name="xs")
    (path,) = list_paths((1, []), (1, built))
    assert path.path == (1,) and path.dtype == np.float32 and not path.stack_after


def test_stand_in_puts_a_list_slot_at_each_path(g):
    built = TensorList.from_list([np.float32(1)], name="xs")
    paths = tuple(list_paths({"a": 1, "l": []}, {"a": 1, "l": built}))
    slotted = stand_in({"a": 1, "l": built}, paths)
    assert isinstance(slotted["l"], ListSlot) and slotted["a"] == 1
    assert nest.flatten(slotted) == [1, LIST_HANDLE]
