"""Logical ops that compiled code writes as Python's `not`/`and`/`or` (exec/compiled/truth.py): only where
their value is only tested; a value also fetched, carried by a loop or given to a kernel keeps numpy's
operator and its np.bool_. Results against the dataflow executor on every combination of inputs."""
import itertools

import numpy as np
import pytest

import graph as G
from exec import Session


def _bools(*names):
    return [G.placeholder(np.bool_, [], name=n) for n in names]


def _same_in_both_modes(g, fetches, feeds_list):
    compiled, dataflow = Session(g, mode="compiled"), Session(g, mode="dataflow")
    for feeds in feeds_list:
        got, want = compiled.run(fetches, feeds), dataflow.run(fetches, feeds)
        for a, b in zip(got, want, strict=True):
            assert type(a) is type(b) and np.array_equal(a, b), (feeds, got, want)


def _all_feeds(placeholders):
    return [dict(zip(placeholders, values)) for values in itertools.product([True, False], repeat=len(placeholders))]


def test_a_condition_of_logical_ops_is_written_with_python_operators():
    g = G.Graph()
    with g.as_default():
        a, b, c = _bools("a", "b", "c")
        x = G.placeholder(np.float64, [], name="x")
        test = G.logical_or(G.logical_and(a, G.logical_not(b)), c)
        out = G.cond(test, lambda: x + 1.0, lambda: x - 1.0)
    source = Session(g, mode="compiled").compiled_source(out, [a, b, c, x])
    assert "not b" in source and " and " in source and " or " in source and "^ TRUE" not in source
    _same_in_both_modes(g, [out], [{**f, x: 2.0} for f in _all_feeds([a, b, c])])


@pytest.mark.parametrize("use", ["fetched", "kernel", "cond result fetched"])
def test_a_logical_value_read_otherwise_keeps_numpys_operator(use):
    g = G.Graph()
    with g.as_default():
        a, b = _bools("a", "b")
        x = G.placeholder(np.float64, [], name="x")
        value = G.logical_and(a, G.logical_not(b))
        tested = G.cond(value, lambda: x + 1.0, lambda: x - 1.0)
        if use == "fetched":
            fetches = [tested, value]
        elif use == "kernel":
            fetches = [tested, G.cast(value, np.float64) * x]
        else:
            fetches = [tested, G.cond(a, lambda: value, lambda: G.logical_not(value))]
    source = Session(g, mode="compiled").compiled_source(fetches, [a, b, x])
    assert "^ TRUE" in source and "&" in source
    _same_in_both_modes(g, fetches, [{**f, x: 2.0} for f in _all_feeds([a, b])])


def test_a_loop_with_a_break_flag_tests_it_with_python_operators():
    g = G.Graph()
    with g.as_default():
        xs = G.placeholder(np.float64, [6], name="xs")
        limit = G.placeholder(np.float64, [], name="limit")
        ta = G.TensorArray(np.float64).unstack(xs)

        def body(i, total, broke):
            total = total + ta.read(i)
            return G.add(i, 1), total, G.greater_equal(total, limit)
        n, total, broke = G.while_loop(lambda i, t, b: G.logical_and(G.less(i, 6), G.logical_not(b)), body,
                                       (G.constant(np.int64(0)), G.constant(0.0), G.constant(False)))
    source = Session(g, mode="compiled").compiled_source([n, total, broke], [xs, limit])
    assert "= (less and logicalnot)" in source and "logicalnot = not " in source
    feeds = [{xs: np.arange(6.0), limit: v} for v in (-1.0, 0.0, 3.0, 14.0, 100.0)]
    _same_in_both_modes(g, [n, total, broke], feeds)
