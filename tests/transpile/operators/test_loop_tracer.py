"""loop_tracer.py: LoopTracer builds one graph loop, tracing the body again while it learns how its
variables must be carried (a dtype, a first assignment, a list appended to), up to MAX_ATTEMPTS."""
import numpy as np
import pytest

import graph
from exec import Session
from transpile.operators.data_structures import list_append
from transpile.operators.facts import LoopFacts
from transpile.operators.graph_lists import GraphList
from transpile.operators.loop_tracer import LoopSpec, LoopTracer, graph_loop
from transpile.operators.staging import StagingError
from transpile.operators.values import MaybeDefined, Undefined


def _spec(body, state, names, limit, facts=LoopFacts(7, 8), **kwargs):
    """A `while k < limit` loop over user state, with a counter of its own."""
    return LoopSpec(lambda internal, current: internal[0] < limit,
                    lambda internal, current: ((internal[0] + np.int64(1),), body(*current)),
                    (graph.constant(np.int64(0)),), state, names, facts, "the while loop at p.py:7", "while",
                    **kwargs)


def test_the_spec_names_its_loop_and_variables():
    spec = LoopSpec(None, None, (), (1, 2), ("a", "r"), LoopFacts(7, 8, return_vars=("r",)), "the loop", "while")
    assert spec.label(0) == "variable 'a'" and spec.label(1) == "the return value"
    assert spec.zero_trips == "the loop, which ran zero times"


@pytest.mark.parametrize("n", [0, 4])
def test_a_python_number_takes_the_dtype_the_body_gives_it(g, n):
    limit = graph.placeholder(np.int64, ())
    step = graph.constant(np.float32(0.5))
    (k,), (s,) = graph_loop(_spec(lambda s: s + step, (0,), ("s",), limit))
    assert s.dtype == np.float32           # numpy: 0 + float32 stays float32
    assert Session(g).run([k, s], {limit: n}) == [n, 0.5 * n]


def test_a_variable_first_assigned_in_the_body_may_be_undefined_after_it(g):
    limit = graph.placeholder(np.int64, ())
    _, (y,) = graph_loop(_spec(lambda y: graph.constant(np.float32(2.0)), (Undefined("y"),), ("y",), limit))
    assert isinstance(y, MaybeDefined)
    session = Session(g)
    assert session.run(y.read(), {limit: 2}) == 2.0
    with pytest.raises(Exception, match="variable 'y' is used.*never assigned: the while loop at p.py:7"):
        session.run(y.read(), {limit: 0})


def test_a_list_the_body_appends_to_is_carried_as_a_tensor_list(g):
    limit = graph.placeholder(np.int64, ())
    _, (xs,) = graph_loop(_spec(lambda xs: list_append(xs, np.float32(1)), ([],), ("xs",), limit))
    assert isinstance(xs, GraphList) and xs.items.dtype == np.float32   # a list of the stacked items after it
    assert Session(g).run(xs.items, {limit: 3}).tolist() == [1.0, 1.0, 1.0]


def test_a_dict_key_the_body_adds_is_carried(g):
    limit = graph.placeholder(np.int64, ())

    def body(d):
        return {**d, "extra": d["a"] * 2}
    _, (d,) = graph_loop(_spec(body, ({"a": 1.5},), ("d",), limit))
    assert d["a"].dtype == np.float64
    session = Session(g)
    assert session.run(d["extra"], {limit: 1}) == 3.0
    with pytest.raises(Exception, match=r"d\['extra'\] is used.*never assigned"):
        session.run(d["extra"], {limit: 0})


def test_a_loop_that_never_settles_gives_up(g):
    limit = graph.placeholder(np.int64, ())
    depth = [0]

    def body(v):   # a new structure each attempt: the loop must give up, not run forever
        depth[0] += 1
        return {f"k{depth[0]}": 1.0, **v}
    with pytest.raises(StagingError, match="could not build the graph loop the while loop at p.py:7: its variables "
                                           "kept changing"):
        LoopTracer(_spec(body, ({},), ("v",), limit)).run()


def test_a_variable_that_changes_structure_is_an_error(g):
    limit = graph.placeholder(np.int64, ())
    with pytest.raises(StagingError, match=r"variable 'v' is .* before the loop and .* after one iteration "
                                           r"\(loop body at line 8\)"):
        graph_loop(_spec(lambda v: (v, v), (graph.constant(1.0),), ("v",), limit))
