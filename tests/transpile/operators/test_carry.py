"""carry.py: the loop and cond modes are frozen records whose equality and `key()` say when a
cond or loop must be built again; Spec compares structure and leaves; ElementInference walks its guesses."""
import dataclasses

import numpy as np
import pytest

import graph
from transpile.operators.carry import (
    CARRIED,
    DROPPED,
    FIXED,
    PROBE,
    AddedKey,
    AsLists,
    AsMaybe,
    AsPlaceholder,
    AsValue,
    Carried,
    Dropped,
    ElementInference,
    ElementProbe,
    Fixed,
    LeafSpec,
    ListPath,
    Probe,
    Spec,
)

F32, F64, I64 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64)


def _spec(structure, *dtypes):
    return Spec(structure, tuple(LeafSpec(d, ()) for d in dtypes))


def test_the_singletons_equal_fresh_records():
    assert FIXED == Fixed() and PROBE == Probe() and CARRIED == Carried() and DROPPED == Dropped()
    assert FIXED != PROBE and CARRIED != FIXED


def test_modes_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        CARRIED.dtypes = (F32,)
    assert dataclasses.replace(CARRIED, dtypes=(F32,)) == Carried(dtypes=(F32,))
    assert CARRIED.dtypes is None


def test_carried_is_plain_only_without_dtypes_lists_or_added_keys():
    assert Carried().plain
    assert not Carried(dtypes=(F32,)).plain
    assert not Carried(lists=(ListPath((0,), F32, (), True),)).plain
    assert not Carried(added=(AddedKey(("k",), _spec(0.0, F64)),)).plain


def test_carried_modes_with_different_dtypes_differ():
    assert Carried(dtypes=(F32,)) == Carried(dtypes=(np.dtype("float32"),))
    assert Carried(dtypes=(F32,)) != Carried(dtypes=(F64,))


def test_cond_mode_keys_name_kind_and_dtypes():
    assert Dropped().key() == ("drop",)
    assert AsValue((F32, None)).key() == ("value", ("float32", None))
    assert AsMaybe((I64,)).key() == ("maybe", ("int64",))
    assert AsPlaceholder(_spec((0.0, 1), F64, I64)).key() == ("placeholder", ("float64", "int64"))
    paths = (ListPath(("xs",), F32, (), True),)
    assert AsLists((graph.dtypes.variant,), paths).key() == ("lists", (str(graph.dtypes.variant),), (("xs",),))


def test_a_float64_leaf_and_a_non_numeric_leaf_have_different_keys():
    # np.dtype("float64") == None is True in numpy, so the records compare equal; the keys must not
    assert AsValue((F64,)).key() != AsValue((None,)).key()


def test_keys_of_different_kinds_differ_with_the_same_dtypes():
    keys = {AsValue((F32,)).key(), AsMaybe((F32,)).key(), AsPlaceholder(_spec(0.0, F32)).key(), Dropped().key()}
    assert len(keys) == 4


def test_spec_equality_compares_leaves_and_structure():
    a = _spec({"x": 0.0, "y": 0}, F64, I64)
    assert a == _spec({"x": 1.0, "y": 2}, F64, I64)        # the leaves' values do not matter
    assert a != _spec({"x": 0.0, "z": 0}, F64, I64)        # other keys
    assert a != _spec({"x": 0.0, "y": 0}, F64, F64)        # other dtypes
    assert a != _spec([0.0, 0], F64, I64)
    with pytest.raises(TypeError):
        hash(a)


def test_element_inference_takes_an_independent_append_at_once():
    start = ElementInference()
    probe = start.probe()
    assert isinstance(probe, ElementProbe) and probe.guess == start.guesses[0]
    known = start.after(probe, F32)
    assert known.dtype == F32 and known.probe() is None and not known.exhausted


def test_element_inference_without_appends_is_float64():
    start = ElementInference()
    assert start.after(start.probe(), None).dtype == F64


def test_element_inference_tries_each_guess_then_takes_the_smallest():
    start = ElementInference()
    first = start.probe()
    first.appended.append(np.dtype(np.float64))       # `l[-1] * 2.0` under the int8 guess
    second = start.after(first, None)
    assert second.dtype is None and second.guesses == start.guesses[1:] and second.found == (F64,)
    probe = second.probe()
    assert probe.guess == np.dtype(np.float16)
    probe.appended.append(np.dtype(np.float16))
    done = second.after(probe, None)
    assert done.dtype == np.dtype(np.float16)


def test_element_inference_failures_use_up_the_guesses():
    start = ElementInference()
    once = start.failed()
    assert once.guesses == start.guesses[1:] and once.dtype is None
    twice = once.failed()
    assert twice.exhausted
    found = ElementInference(start.guesses[1:], (I64,)).failed()
    assert found.dtype == I64


def test_element_probe_tracks_what_depends_on_its_stand_ins(g):
    probe = ElementProbe(np.dtype(np.int8))
    x = probe.stand_in()
    assert x.dtype == np.int8
    other = graph.constant(np.float32(1.0))
    assert probe.depends_on_stand_ins(graph.cast(x, np.float32) * 2.0 + other)
    assert not probe.depends_on_stand_ins(other * 3.0)
    assert not probe.depends_on_stand_ins(5)
