"""Each `graph.constant` (and `graph.convert` of a value) is a node of its own: one can be fed or
differentiated with respect to alone, whatever other constants equal it, as in TensorFlow. Literals
that op builders convert (`x * 2.0`) may share a node: nothing outside can reach those."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import grad
import graph as G
from exec import Session

_SCALARS = st.one_of(st.integers(-3, 3), st.floats(-2, 2, allow_nan=False), st.booleans())


@settings(max_examples=30, deadline=None)
@given(_SCALARS)
def test_equal_constants_are_distinct_nodes(value):
    g = G.Graph()
    with g.as_default():
        a, b = G.constant(value), G.constant(value)
        c, d = G.convert(value), G.convert(np.asarray(value))
    assert len({id(t.node) for t in (a, b, c, d)}) == 4


@settings(max_examples=30, deadline=None)
@given(st.floats(-3, 3, allow_nan=False), st.floats(-3, 3, allow_nan=False))
def test_gradient_with_respect_to_one_of_two_equal_constants(value, fed):
    g = G.Graph()
    with g.as_default():
        a, b = G.constant(value), G.constant(value)
        da, db = grad.gradients(a * b, [a, b])
    sess = Session(g)
    assert sess.run([da, db]) == [value, value]
    assert sess.run([da, db], {a: fed}) == [value, fed]


def test_literals_of_op_arguments_share_a_node():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, ())
        y, z = x * 2.0, x + 2.0
    assert y.node.inputs[1] is z.node.inputs[1]
