"""variable_creator_scope: what `Variable(...)` gives inside it is what its creator returns."""
import threading

import numpy as np
import pytest

import graph as G


def test_without_a_scope_each_construction_makes_a_new_variable():
    a, b = G.Variable(1.0, name="v"), G.Variable(1.0, name="v")
    assert a is not b and a.name != b.name


def test_the_creator_gets_the_constructor_arguments_by_name_with_their_defaults():
    seen = []

    def creator(next_creator, **kwargs):
        seen.append(kwargs)
        return next_creator(**kwargs)

    with G.variable_creator_scope(creator):
        v = G.Variable(np.zeros(3), "w", dtype=np.float32)
    assert seen == [{"initial_value": seen[0]["initial_value"], "name": "w", "trainable": True,
                     "dtype": np.float32}]
    assert isinstance(v, G.Variable) and v.dtype == np.float32 and v.shape == (3,)


def test_a_creator_may_return_an_existing_variable_unchanged():
    existing = G.Variable(5.0, name="kept")
    existing.load(7.0)
    with G.variable_creator_scope(lambda next_creator, **kwargs: existing):
        v = G.Variable(1.0, name="other")
    assert v is existing
    assert v.name == existing.name and float(v.value) == 7.0  # not initialised again


def test_a_creator_may_change_the_arguments():
    def frozen(next_creator, **kwargs):
        return next_creator(**{**kwargs, "trainable": False})

    with G.variable_creator_scope(frozen):
        v = G.Variable(1.0)
    assert not v.trainable


def test_nested_scopes_call_the_innermost_creator_first_and_chain_outwards():
    calls = []

    def named(tag):
        def creator(next_creator, **kwargs):
            calls.append(tag)
            return next_creator(**kwargs)
        return creator

    with G.variable_creator_scope(named("outer")), G.variable_creator_scope(named("inner")):
        G.Variable(1.0)
    assert calls == ["inner", "outer"]
    calls.clear()
    G.Variable(1.0)
    assert calls == []


def test_the_scope_ends_when_its_block_raises():
    calls = []

    def creator(next_creator, **kwargs):
        calls.append(1)
        return next_creator(**kwargs)

    with pytest.raises(RuntimeError):
        with G.variable_creator_scope(creator):
            raise RuntimeError("boom")
    G.Variable(1.0)
    assert calls == []


def test_construction_errors_reach_the_caller_through_the_creator():
    with G.variable_creator_scope(lambda next_creator, **kwargs: next_creator(**kwargs)):
        with pytest.raises(TypeError, match="concrete value"):
            G.Variable(G.constant(1.0))


def test_scopes_are_per_thread():
    calls = []

    def creator(next_creator, **kwargs):
        calls.append(threading.current_thread().name)
        return next_creator(**kwargs)

    with G.variable_creator_scope(creator):
        worker = threading.Thread(target=lambda: G.Variable(1.0), name="worker")
        worker.start()
        worker.join()
        G.Variable(1.0)
    assert calls == [threading.current_thread().name]
