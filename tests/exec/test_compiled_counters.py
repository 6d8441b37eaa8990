"""Loop counters kept as Python ints in compiled code (exec/compiled/counters.py): only where nothing sees
their type. Each program runs in both modes with the same values and types; the source says which
counters became Python ints."""
import numpy as np
import pytest

import graph as G
from exec import Session


def _counter_loop(read_by: str):
    """`for i in range(5)` over a TensorArray of a fed vector, summing its rows, by hand: the counter
    `i` is also read as `read_by` says."""
    g = G.Graph()
    with g.as_default():
        xs = G.placeholder(np.float64, [5], name="xs")
        ta = G.TensorArray(np.float64).unstack(xs)

        def cond(i, total, extra):
            below = G.less(i, 5)
            return below if read_by != "comparison fetched" else G.logical_and(below, G.less(i, 99))

        def body(i, total, extra):
            total = total + ta.read(i)
            step = G.add(i, 1)
            if read_by == "arithmetic":
                extra = extra + G.cast(i, np.float64)
            elif read_by == "step read twice":
                extra = extra + G.cast(step, np.float64)
            elif read_by == "comparison fetched":
                extra = extra + G.cast(G.less(i, 3), np.float64)
            return step, total, extra
        i, total, extra = G.while_loop(cond, body, (G.constant(np.int64(0)), G.constant(0.0), G.constant(0.0)),
                                       names=["i", "total", "extra"])
    fetches = [total, extra] + ([i] if read_by == "fetched" else [])
    return g, xs, fetches


@pytest.mark.parametrize("read_by", ["nothing else", "fetched", "arithmetic", "step read twice",
                                     "comparison fetched"])
def test_a_counter_is_a_python_int_only_where_its_type_is_never_seen(read_by):
    g, xs, fetches = _counter_loop(read_by)
    source = Session(g, mode="compiled").compiled_source(fetches, [xs])
    python_int = read_by == "nothing else"
    assert ("i = 0\n" in source and "i < 5" in source and "i + 1" in source) == python_int, source
    assert "tensorarrayunstack[i]" in source
    feed = {xs: np.array([1.0, -2.0, 3.5, 4.0, 0.25])}
    got, want = Session(g, mode="compiled").run(fetches, feed), Session(g, mode="dataflow").run(fetches, feed)
    for a, b in zip(got, want, strict=True):
        assert type(a) is type(b) and a == b


def test_nested_loops_restart_their_counters():
    g = G.Graph()
    with g.as_default():
        m = G.placeholder(np.float64, [3, 4], name="m")
        rows = G.TensorArray(np.float64).unstack(m)

        def outer(i, total):
            cols = G.TensorArray(np.float64).unstack(rows.read(i))
            _, inner = G.while_loop(lambda j, s: G.less(j, 4), lambda j, s: (G.add(j, 1), s + cols.read(j) * 2.0),
                                    (G.constant(np.int64(0)), total))
            return G.add(i, 1), inner
        _, total = G.while_loop(lambda i, t: G.less(i, 3), outer, (G.constant(np.int64(0)), G.constant(0.0)))
    source = Session(g, mode="compiled").compiled_source(total, [m])
    counters = [line.split()[0] for line in source.splitlines() if line.endswith(" = 0") and "n_while" not in line]
    assert len(counters) == 2 and "TensorArray" not in source, source
    feed = {m: np.arange(12.0).reshape(3, 4)}
    assert Session(g, mode="compiled").run(total, feed) == Session(g, mode="dataflow").run(total, feed) == 132.0
