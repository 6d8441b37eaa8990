"""A while loop's `iteration_limit`: a run whose loop condition still holds after that many iterations
fails with an error naming the loop, in both execution modes; the limit comes from the loop, from the
`Graph.iteration_limit` block it is built in, or from `set_iteration_limit` called in its body."""
import sys

import numpy as np
import pytest

import graph as G
from exec import IterationLimitExceeded, RunError, Session
from graph.errors import GraphError

MODES = ["dataflow", "compiled"]


def _counting_loop(**options):
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [], name="n")
        line = sys._getframe().f_lineno + 1
        i, s = G.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + 2.0), (G.constant(0), 0.0), **options)
    return g, n, (i, s), line


@pytest.mark.parametrize("mode", MODES)
def test_a_loop_may_run_up_to_its_limit_and_fails_beyond_it(mode):
    g, n, out, line = _counting_loop(iteration_limit=5)
    session = Session(g, mode=mode)
    assert session.run(out, {n: 5}) == (5, 10.0)
    assert session.run(out, {n: 0}) == (0, 0.0)
    with pytest.raises(RunError) as info:
        session.run(out, {n: 6})
    assert isinstance(info.value.cause, IterationLimitExceeded)
    message = str(info.value)
    assert f"the while loop at {__file__}:{line}" in message and "ran 5 iterations" in message
    assert f"in iteration 5 of the while loop at {__file__}:{line}" in message


@pytest.mark.parametrize("mode", MODES)
def test_maximum_iterations_stops_the_loop_before_a_larger_limit_fails_it(mode):
    g, n, out, _ = _counting_loop(iteration_limit=5, maximum_iterations=3)
    assert Session(g, mode=mode).run(out, {n: 100}) == (3, 6.0)
    g, n, out, _ = _counting_loop(iteration_limit=2, maximum_iterations=3)
    with pytest.raises(RunError, match="ran 2 iterations"):
        Session(g, mode=mode).run(out, {n: 100})


def test_a_graph_block_sets_the_limit_of_the_loops_built_in_it_and_a_loop_may_set_its_own():
    g = G.Graph()
    with g.as_default(), g.iteration_limit(3):
        n = G.placeholder(np.int64, [], name="n")
        (a,) = G.while_loop(lambda i: i < n, lambda i: (i + 1,), (G.constant(0),))
        (b,) = G.while_loop(lambda i: i < n, lambda i: (i + 1,), (G.constant(0),), iteration_limit=10)
    assert g.default_iteration_limit is None
    limits = [nd.attrs["limit"] for nd in g.nodes if nd.op == "CheckIterationLimit"]
    assert limits == [3, 10]
    session = Session(g)
    assert session.run(b, {n: 4}) == 4
    with pytest.raises(RunError, match="ran 3 iterations"):
        session.run(a, {n: 4})


@pytest.mark.parametrize("mode", MODES)
def test_the_body_sets_the_limit_of_its_own_loop_only(mode):
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [], name="n")
        m = G.placeholder(np.int64, [], name="m")

        def outer_body(i, total):
            G.set_iteration_limit(4)
            (j,) = G.while_loop(lambda j: j < m, lambda j: (j + 1,), (G.constant(0),))
            return i + 1, total + j
        out = G.while_loop(lambda i, t: i < n, outer_body, (G.constant(0), G.constant(0)))
    assert [nd.name for nd in g.nodes if nd.op == "CheckIterationLimit"] == ["while/CheckIterationLimit"]
    session = Session(g, mode=mode)
    assert session.run(out, {n: 4, m: 100}) == (4, 400)
    with pytest.raises(RunError, match="ran 4 iterations"):
        session.run(out, {n: 5, m: 1})


def test_set_iteration_limit_outside_a_loop_and_bad_limits_are_refused():
    with G.Graph().as_default():
        with pytest.raises(GraphError, match="no loop is being built"):
            G.set_iteration_limit(3)
        for bad in (-1, 2.5, True):
            with pytest.raises(GraphError, match="an iteration limit must be a Python int"):
                G.while_loop(lambda i: i < 3, lambda i: (i + 1,), (G.constant(0),), iteration_limit=bad)
