"""`back_prop=False` on a loop (while_loop, scan, map_fn, foldl, foldr) means what it means in TensorFlow:
no gradient flows through the loop's outputs. The gradient equals that of the same program with
`stop_gradient` on the loop's outputs, nothing is saved for a backward pass, and no warning says the path
stops (it is cut on purpose). Gradients taken inside the loop's body still work."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grad
import graph as G
from exec import Session


def _while(x, back_prop):
    return G.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x + 1.0), (G.constant(0), x),
                        back_prop=back_prop)[1]


def _scan(x, back_prop):
    return G.reduce_sum(G.scan(lambda a, r: a * r, G.stack([x, x + 1.0]), initializer=x, back_prop=back_prop))


def _map_fn(x, back_prop):
    return G.reduce_sum(G.map_fn(lambda r: r * r, G.stack([x, 2.0 * x]), back_prop=back_prop))


def _foldl(x, back_prop):
    return G.foldl(lambda a, r: a * r, G.stack([x, x]), initializer=x, back_prop=back_prop)


def _foldr(x, back_prop):
    return G.foldr(lambda a, r: a - r, G.stack([x, x * x]), initializer=x, back_prop=back_prop)


LOOPS = {"while_loop": _while, "scan": _scan, "map_fn": _map_fn, "foldl": _foldl, "foldr": _foldr}


@settings(max_examples=10, deadline=None)
@given(st.floats(-1.5, 1.5, allow_nan=False))
@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_no_gradient_flows_through_a_loop_built_without_back_prop(loop, value):
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (), name="x")
        cut = LOOPS[loop](x, False)
        stopped = G.stop_gradient(LOOPS[loop](x, True))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a cut on purpose is not reported
            got = grad.gradients(cut * x + x, [x])[0]
            want = grad.gradients(stopped * x + x, [x])[0]
            alone = grad.gradients(cut, [x], unconnected="none")
            zero = grad.gradients(cut, [x])[0]
    sess = Session(g)
    assert sess.run(got, {x: value}) == sess.run(want, {x: value})
    assert alone == [None]
    assert sess.run(zero, {x: value}) == 0.0


def test_the_tensorflow_case_gradient_of_the_loop_output_plus_its_input():
    # control_flow_ops_py_test.testWhileGrad_NoGradient
    g = G.Graph()
    with g.as_default():
        v = G.constant(2.0, name="v")
        r = G.while_loop(lambda v: v < 100.0, lambda v: (G.square(v),), (v,), back_prop=False)[0]
        dr = grad.gradients(r + v, [v])[0]
    assert Session(g).run(dr) == 1.0


def test_nothing_is_saved_for_a_loop_built_without_back_prop():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3,), name="x")
        w = G.Variable(np.ones(3), name="w")
        _, h = G.while_loop(lambda i, h: i < 4, lambda i, h: (i + 1, G.tanh(h * w.read())), (G.constant(0), x),
                            back_prop=False)
        before = len(g.nodes)
        loss = G.reduce_sum(h * x)
        dx, dw = grad.gradients(loss, [x, w])
    added = [n.op for n in g.nodes[before:]]
    assert not {"StackPush", "StackPop", "Enter"} & set(added), added
    np.testing.assert_allclose(Session(g).run(dx, {x: np.ones(3)}), Session(g).run(h, {x: np.ones(3)}))
    np.testing.assert_array_equal(Session(g).run(dw, {x: np.ones(3)}), np.zeros(3))


def test_gradients_inside_the_body_of_a_loop_built_without_back_prop():
    """A training loop: each iteration takes a gradient step inside the body."""
    g = G.Graph()
    with g.as_default():
        target = G.placeholder(np.float64, (), name="target")

        def step(i, w):
            loss = G.square(w - target)
            (dw,) = grad.gradients(loss, [w])
            return i + 1, w - 0.25 * dw
        _, w = G.while_loop(lambda i, w: i < 20, step, (G.constant(0), G.constant(0.0)), back_prop=False)
    assert abs(Session(g).run(w, {target: 3.0}) - 3.0) < 1e-5


def test_saving_a_graph_keeps_back_prop(tmp_path):
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (), name="x")
        _while(x, False)
    g.save(tmp_path / "loop.fg")
    loaded = G.load(tmp_path / "loop.fg")
    with loaded.as_default():
        x, y = loaded.get_tensor("x:0"), next(n.outputs[0] for n in loaded.nodes if n.op == "Exit" and n.outputs[0].dtype.kind == "f")
        assert grad.gradients(y, [x], unconnected="none") == [None]
