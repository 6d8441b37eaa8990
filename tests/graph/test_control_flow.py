"""Graph construction of cond / while_loop: structure, captures, errors, shape relaxation."""
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph as G
from exec import Session
from graph.errors import GraphError


def _ops(g):
    return [n.op for n in g.nodes]


def test_cond_switches_captured_tensors_lazily_once_each():
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, [])
        a, b, _unused = G.constant(1.0), G.constant(2.0), G.constant(3.0)
        out = G.cond(p, lambda: G.add(G.add(a, b), a), lambda: G.mul(b, b))
    switched = [n.inputs[0].node for n in g.nodes if n.op == "Switch"]
    assert sorted(x.name for x in switched) == sorted([a.node.name, b.node.name])
    assert _ops(g).count("Merge") == 1
    sess = Session(g)
    assert sess.run(out, {p: True}) == 4.0 and sess.run(out, {p: False}) == 4.0


def test_cond_nested_structures_and_shape_join():
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, [])
        x = G.placeholder(np.float32, [3])
        y = G.placeholder(np.float32, [4])
        out = G.cond(p, lambda: {"a": (x, G.constant(1)), "b": [x]}, lambda: {"a": (y, G.constant(2)), "b": [x]})
    assert out["a"][0].shape == (None,) and out["b"][0].shape == (3,)
    got = Session(g).run(out, {p: False, x: np.ones(3, np.float32), y: np.zeros(4, np.float32)})
    assert got["a"][1] == 2 and got["a"][0].shape == (4,)


@pytest.mark.parametrize("true_fn,false_fn,pattern", [
    (lambda: (G.constant(1.0), G.constant(2.0)), lambda: G.constant(1.0), "different structures"),
    (lambda: G.constant(1.0), lambda: G.constant(1), "output #0 of the cond has dtype float64"),
])
def test_cond_mismatch_errors(true_fn, false_fn, pattern):
    with G.Graph().as_default():
        with pytest.raises(GraphError, match=pattern) as info:
            G.cond(G.placeholder(np.bool_, []), true_fn, false_fn)
    assert "test_control_flow.py" in str(info.value)


def test_cond_error_uses_given_names():
    with G.Graph().as_default():
        with pytest.raises(GraphError, match="output 'acc' of the cond"):
            G.cond(G.placeholder(np.bool_, []), lambda: G.constant(1.0), lambda: G.constant(1), names=["acc"])


def test_while_loop_dtype_change_names_the_variable():
    with G.Graph().as_default():
        with pytest.raises(GraphError) as info:
            G.while_loop(lambda i, x: G.less(i, 3), lambda i, x: (G.add(i, 1), G.mul(x, 0.5)),
                         (G.constant(0), G.constant(1)), names=["i", "x"])
    msg = str(info.value)
    assert "'x'" in msg and "int64 before the loop and float64 after" in msg and "test_control_flow.py" in msg


def test_while_loop_structure_change_is_an_error():
    with G.Graph().as_default():
        with pytest.raises(GraphError, match="same structure"):
            G.while_loop(lambda i: G.less(i, 3), lambda i: (G.add(i, 1), i), (G.constant(0),))


def test_while_loop_relaxes_changing_shapes():
    g = G.Graph()
    with g.as_default():
        _ta = G.TensorArray(np.float64, element_shape=[None])
        x = G.placeholder(np.float64, [1])
        # x grows by broadcasting against a [2, 1] constant: rank changes, so the shape relaxes
        i, y = G.while_loop(lambda i, y: G.less(i, 1), lambda i, y: (G.add(i, 1), G.mul(y, np.ones((2, 1)))),
                            (G.constant(0), x))
    assert y.shape is None
    assert Session(g).run(y, {x: np.ones(1)}).shape == (2, 1)
    merges = [n for n in g.nodes if n.op == "Merge"]
    assert len(merges) == 2, "the first trace was rolled back, not left in the graph"


def test_loop_constants_are_entered_once_and_marked_constant():
    g = G.Graph()
    with g.as_default():
        w = G.placeholder(np.float64, [])
        i, x = G.while_loop(lambda i, x: G.less(i, 3), lambda i, x: (G.add(i, 1), G.add(G.mul(x, w), w)),
                            (G.constant(0), G.constant(1.0)))
    enters = [n for n in g.nodes if n.op == "Enter" and n.inputs[0].node is w.node]
    assert len(enters) == 1 and enters[0].attrs["is_constant"]
    assert Session(g).run(x, {w: 2.0}) == 22.0


def test_using_a_loop_body_tensor_outside_is_an_error():
    with G.Graph().as_default():
        leaked = []

        def body(i):
            leaked.append(G.mul(i, 2))
            return (G.add(i, 1),)
        G.while_loop(lambda i: G.less(i, 3), body, (G.constant(0),))
        with pytest.raises(GraphError, match="created inside the while loop"):
            G.add(leaked[0], 1)


def test_free_nodes_in_loops_are_gated_on_the_pivot():
    g = G.Graph()
    with g.as_default():
        w = G.constant(2.0)
        G.while_loop(lambda i: G.less(i, 3), lambda i: (G.add(i, 1), G.mul(w, w))[:1], (G.constant(0),))
    mul = next(n for n in g.nodes if n.op == "Mul")
    assert [c.name for c in mul.control_inputs] == ["while/pivot"]


def test_listing_and_dot():
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [], name="n")
        line = sys._getframe().f_lineno + 1
        G.while_loop(lambda i: G.less(i, n), lambda i: (G.add(i, 1),), (G.constant(0),))
    listing = str(g).splitlines()
    here = f"  # test_control_flow.py:{line}"
    assert listing[0] == f"%n = Placeholder[shape=()]() : int64[]  # test_control_flow.py:{line - 2}"
    assert "%while/Enter = Enter[frame=while, par=32](%Const) : int64[] @while" + here in listing
    assert "%while/Merge = Merge(%while/Enter, %while/NextIteration) : int64[], int32[] @while" + here in listing
    assert "%while/Exit = Exit(%while/Switch) : int64[]" + here in listing
    dot = g.to_dot(expand=True)
    assert dot.startswith("digraph") and "cluster_" in dot
    assert f"label=\"while  test_control_flow.py:{line}\\nG.while_loop(" in dot
    assert "constraint=false" in dot  # the back edge


def test_validate_rejects_cross_frame_edges():
    g = G.Graph()
    with g.as_default():
        leaked = []

        def body(i):
            leaked.append(G.add(i, 1))
            return (leaked[-1],)
        G.while_loop(lambda i: G.less(i, 3), body, (G.constant(0),))
        bad = g.create_node("Neg", [leaked[0]], context=None)  # raw: bypasses routing checks
    with pytest.raises(GraphError, match="invalid graph") as info:
        g.validate()
    assert bad.name in str(info.value)


def test_effects_run_in_program_order_across_iterations():
    import io
    out = io.StringIO()
    g = G.Graph()
    with g.as_default():
        def body(i):
            G.print_("a", i)
            G.print_("b", i)
            return (G.add(i, 1),)
        i = G.while_loop(lambda i: G.less(i, 3), body, (G.constant(0),), parallel_iterations=32)[0]
        G.print_("done", i)
    Session(g, out=out).run(g.last_effect(None))
    assert out.getvalue().split("\n")[:-1] == ["a 0", "b 0", "a 1", "b 1", "a 2", "b 2", "done 3"]


_dim = st.one_of(st.none(), st.integers(1, 3))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=0, max_size=2), st.integers(0, 2),
       st.one_of(st.none(), st.lists(_dim, min_size=0, max_size=3)))
def test_shape_invariants_are_checked_and_kept(shape, grow, invariant):
    """A loop variable starting with `shape` and growing by `grow` along its first axis each iteration (when
    it has one): accepted exactly when the initial shape and the body's fit the invariant (None: any shape,
    None dims: any size), and then it has the invariant's shape in the loop and after it."""
    def fits(s):
        return invariant is None or (s is not None and len(s) == len(invariant) and all(
            d is None or d == e for d, e in zip(invariant, s, strict=True)))
    after = (shape[0] + min(grow, shape[0]), *shape[1:]) if shape else ()
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, tuple(shape), name="x")

        def body(i, v):
            return i + 1, G.concat([v, v[:grow]], 0) if shape else v * 2.0
        invariants = ((), None if invariant is None else tuple(invariant))
        if not (fits(tuple(shape)) and fits(after)):
            with pytest.raises(G.GraphError, match="shape invariant"):
                G.while_loop(lambda i, v: i < 2, body, (G.constant(0), x), shape_invariants=invariants)
            return
        _, y = G.while_loop(lambda i, v: i < 2, body, (G.constant(0), x), shape_invariants=invariants)
    assert y.shape == invariants[1]
    want = np.ones(shape)
    for _ in range(2):
        want = np.concatenate([want, want[:grow]]) if shape else want * 2.0
    np.testing.assert_array_equal(Session(g).run(y, {x: np.ones(shape)}), want)


def test_shape_invariants_follow_the_loop_variables_structure():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (2,), name="x")
        ta = G.TensorArray(np.float64, size=2)
        _, (y, ta) = G.while_loop(lambda i, s: i < 2, lambda i, s: (i + 1, (s[0] * 2.0, s[1].write(i, s[0][0]))),
                                  (G.constant(0), (x, ta)), shape_invariants=((), ((None,), None)))
        assert y.shape == (None,)
        with pytest.raises(G.GraphError, match=r"shape_invariants must have the structure"):
            G.while_loop(lambda i, s: i < 2, lambda i, s: (i + 1, s), (G.constant(0), x), shape_invariants=[()])
        with pytest.raises(G.GraphError, match=r"must be a shape"):
            G.while_loop(lambda i, s: i < 2, lambda i, s: (i + 1, s), (G.constant(0), x),
                         shape_invariants=[(), "2"])
