"""loops.py: `while` and `for` run in Python for Python values and become graph loops for tensors; a
Python loop whose test becomes a tensor is rebuilt as a graph loop."""
import numpy as np
import pytest

import graph
import transpile
from exec import Session
from transpile.operators.data_structures import list_append
from transpile.operators.facts import LoopFacts
from transpile.operators.iterables import range_
from transpile.operators.logical import or_
from transpile.operators.loop_options import loop_options
from transpile.operators.loops import for_stmt, while_stmt


def test_python_loops_run_in_python():
    i, s = while_stmt(lambda i, s: i < 4, lambda i, s: (i + 1, s + i), (0, 0), ("i", "s"))
    assert (i, s) == (4, 6)
    assert for_stmt([1, 2, 3], lambda x, s: s + x, (0,), ("s",)) == 6
    assert for_stmt(range(10), lambda x, s: s + x, (0,), ("s",), loop_test=lambda s: s < 5) == 6


@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_tensor_while_loop(g, n):
    limit = graph.placeholder(np.int64, ())
    i, s = while_stmt(lambda i, s: i < limit, lambda i, s: (i + 1, s + 0.5), (0, 0), ("i", "s"))
    assert Session(g).run([i, s], {limit: n}) == [n, 0.5 * n]


@pytest.mark.parametrize("n", [0, 3])
def test_a_tensor_for_loop_appends_to_a_list(g, n):
    limit = graph.placeholder(np.int64, ())
    xs = for_stmt(range_(limit), lambda k, xs: list_append(xs, k * 2), ([],), ("xs",),
                  facts=LoopFacts(1, 2, appends=("xs",)))
    assert Session(g).run(xs.items, {limit: n}).tolist() == [2 * k for k in range(n)]


def test_a_for_loop_over_the_rows_of_a_tensor_with_an_early_stop(g):
    rows = graph.placeholder(np.float64, (None, 2))
    total = for_stmt(rows, lambda r, t: t + r[0], (0.0,), ("t",), loop_test=lambda t: t < 3)
    assert Session(g).run(total, {rows: np.ones((6, 2))}) == 3.0


def test_a_python_loop_whose_test_becomes_a_tensor_becomes_a_graph_loop(g):
    limit = graph.placeholder(np.int64, ())
    # `i` starts as a Python int; the test reads a tensor after the first iteration
    i = while_stmt(lambda i: or_(i < 1, lambda: i < limit), lambda i: i + 1, (0,), ("i",))
    session = Session(g)
    assert session.run(i, {limit: 5}) == 5 and session.run(i, {limit: 0}) == 1


def test_an_iteration_limit_from_the_body_fails_the_run(g):
    limit = graph.placeholder(np.int64, ())

    def body(i):
        loop_options(maximum_iterations=3)
        return i + 1
    i = while_stmt(lambda i: i < limit, body, (0,), ("i",))
    session = Session(g)
    assert session.run(i, {limit: 3}) == 3
    with pytest.raises(Exception, match="3"):
        session.run(i, {limit: 10})


def test_a_python_loop_whose_body_raises_leaves_no_frame_behind():
    """A frame left on the thread's loop stack (here: by an error in a Python loop's body) would make
    every later graph loop wait for a rebuild it asked for, and build an empty body."""
    from transpile.operators.trace_state import trace_state

    def raises_in_a_python_loop(x):
        i = 0
        while i < 3:
            if i == 1:
                raise ValueError("stop")
            i += 1
        return x

    before = list(trace_state().loops)
    with pytest.raises(ValueError, match="stop"):
        transpile.function(raises_in_a_python_loop)(np.float64(1.0))
    assert trace_state().loops == before


def test_a_trace_does_not_see_the_loop_frames_of_another():
    from transpile.operators.trace_state import LoopFrame, trace_state

    def count(x, n):
        i = 0
        while i < n:
            x = x + 1.0
            i += 1
        return x

    stale = LoopFrame(object())
    stale.promote = True  # a frame that asks for a rebuild no one will make
    trace_state().loops.append(stale)
    try:
        assert transpile.function(count, maximum_iterations=100)(np.float64(0.0), 3) == 3.0
    finally:
        trace_state().loops.remove(stale)
