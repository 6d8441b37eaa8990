"""carried_state.py: CarriedWrites finds the arrays a branch or body writes, starts each trace from the
contents before it, puts them back after it, and carries the places once settled."""
import numpy as np

import graph
from tests.transpile.operators.conftest import run
from transpile.operators.arrays import MutableArray
from transpile.operators.carried_state import CarriedWrites
from transpile.operators.trace_state import tracing


def test_a_written_array_is_found_then_carried(g):
    with tracing():
        a = MutableArray(np.zeros(2))
        untouched = MutableArray(np.ones(2))
        writes = CarriedWrites()

        def branch():
            a[0] = graph.constant(5.0)
            return "out"

        out, contents = writes.traced(branch)
        assert out == "out" and contents == ()
        assert a.is_known and a.value.tolist() == [0, 0]       # put back as it was before the branch
        assert writes.settle() and not writes.settle()         # found once, then carried
        out, (after,) = writes.traced(branch)
        assert run(g, after).tolist() == [5, 0]
        assert a.value.tolist() == [0, 0] and untouched.value.tolist() == [1, 1]
        (before,) = writes.contents()
        assert run(g, before).tolist() == [0, 0]


def test_a_trace_starts_from_the_values_inside(g):
    with tracing():
        a = MutableArray(np.zeros(2))
        writes = CarriedWrites()
        writes.traced(lambda: a.__setitem__(0, graph.constant(1.0)))
        writes.settle()
        seen = []
        writes.traced(lambda: seen.append(a.tensor()), inside=[graph.constant(np.full(2, 9.0))])
        assert run(g, seen[0]).tolist() == [9, 9]
        writes.write([graph.constant(np.full(2, 3.0))])
        assert run(g, a.tensor()).tolist() == [3, 3]


def test_arrays_made_inside_are_not_carried(g):
    with tracing():
        writes = CarriedWrites()

        def body():
            inner = MutableArray(np.zeros(2))
            inner[0] = graph.constant(1.0)

        writes.traced(body)
        assert not writes.settle()
