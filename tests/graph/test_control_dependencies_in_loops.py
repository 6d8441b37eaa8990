"""control_dependencies blocks inside nested loops and branches whose nodes read tensors of enclosing
frames: the Enters and Switches that bring those tensors in are plumbing of the outer frame and take
no control input from the block (the reading node does), so the graph is valid and runs as written."""
import numpy as np
import pytest

import graph as G
from exec import RunError, Session
from exec.reference import run_reference


def _enters_with_controls(g):
    return [n.name for n in g.nodes if n.op in ("Enter", "Switch") and n.control_inputs]


@pytest.mark.parametrize("where", ["root", "outer_body"])
def test_an_outer_constant_read_under_control_dependencies_in_a_nested_loop(where):
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, (), name="n")
        c_root = G.constant(2.0)

        def outer(i, s):
            c = c_root if where == "root" else G.cast(i, np.float64) + 2.0   # i's frame: the outer loop

            def inner(j, t):
                with G.control_dependencies([j]):    # j: the inner frame
                    y = t + c
                return j + 1, y
            _, s = G.while_loop(lambda j, t: j < 2, inner, (G.constant(0), s))
            return i + 1, s
        _, s = G.while_loop(lambda i, s: i < n, outer, (G.constant(0), G.constant(0.0)))
    g.validate()
    assert _enters_with_controls(g) == []
    want = 12.0 if where == "root" else 2 * (2.0 + 3.0 + 4.0)
    assert Session(g).run(s, {n: 3}) == want
    assert run_reference([s], {n: 3})[0] == want


def test_a_cond_in_a_nested_loop_reads_an_outer_value_under_control_dependencies():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (), name="x")

        def outer(i, s):
            def inner(j, t):
                with G.control_dependencies([t]):
                    y = G.cond(j > 0, lambda: t + x, lambda: t - x)
                return j + 1, y
            return i + 1, G.while_loop(lambda j, t: j < 3, inner, (G.constant(0), s))[1]
        _, s = G.while_loop(lambda i, s: i < 2, outer, (G.constant(0), G.constant(0.0)))
    g.validate()
    assert Session(g).run(s, {x: 1.5}) == 2 * (1.5 + 1.5 - 1.5)


def test_a_control_dependency_on_an_outer_frame_node_still_orders_the_reading_node():
    # the dependency reaches the inner node through a token of the outer frame, not through an Enter
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.float64(1.0), name="v")
        x = G.placeholder(np.float64, (), name="x")

        def outer(i, s):
            set_v = v.assign(G.cast(i, np.float64) + 10.0)

            def inner(j, t):
                with G.control_dependencies([set_v]):
                    y = t + v.read() + x
                return j + 1, y
            return i + 1, G.while_loop(lambda j, t: j < 2, inner, (G.constant(0), s))[1]
        _, s = G.while_loop(lambda i, s: i < 2, outer, (G.constant(0), G.constant(0.0)))
    g.validate()
    assert Session(g).run(s, {x: 0.5}) == 2 * (10.5 + 11.5)


@pytest.mark.parametrize("taken", [True, False])
def test_a_cond_built_under_control_dependencies_gives_the_taken_branchs_value(taken):
    # its Merge takes no control input (the executor would take one for the first live input)
    g = G.Graph()
    with g.as_default():
        t = G.constant(1.0)
        p = G.placeholder(np.bool_, (), name="p")
        with G.control_dependencies([t]):
            y = G.cond(p, lambda: t * 2.0, lambda: t - 1.0)
    assert [n.name for n in g.nodes if n.op == "Merge" and n.control_inputs] == []
    assert Session(g).run(y, {p: taken}) == (2.0 if taken else 0.0)


def test_a_loop_built_under_control_dependencies_waits_for_them():
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.float64(1.0), name="v")
        set_v = v.assign(3.0)
        with G.control_dependencies([set_v]):
            _, y = G.while_loop(lambda j, t: j < 3, lambda j, t: (j + 1, t * 2.0 + v.read()),
                                (G.constant(0), G.constant(0.0)))
    g.validate()
    assert Session(g).run(y) == 21.0


def test_a_merge_with_a_control_input_is_an_invalid_graph():
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, (), name="p")
        a = G.constant(1.0)
        f, t = g.create_node("Switch", [a, p]).outputs
        g.create_node("Merge", [f, t], control_inputs=[a], name="joined")
    with pytest.raises(G.GraphError, match=r"joined: a Merge cannot have control inputs \(\^Const"):
        g.validate()


def _scan(x):
    return G.reduce_sum(G.scan(lambda a, r: a + r, G.stack([x, x * 2.0]), initializer=G.constant(0.0)))


def _tensor_array(x):
    ta = G.TensorArray(np.float64, size=2).write(0, x).write(1, x * 3.0)
    return G.reduce_sum(ta.stack())


def _nested_loop(x):
    def outer(i, s):
        _, s = G.while_loop(lambda j, t: j < 2, lambda j, t: (j + 1, t + x), (G.constant(0), s))
        return i + 1, s
    return G.while_loop(lambda i, s: i < 2, outer, (G.constant(0), G.constant(0.0)))[1]


def _constant_in_branch(x):
    def taken():
        v = x * 3.0
        with G.control_dependencies([v]):
            return v + G.constant(1.0)
    return G.cond(x > 0.0, taken, lambda: x)


def _loop_in_a_loop_body_under_control_dependencies(x):
    def outer(i, s):
        with G.control_dependencies([s]):
            _, s = G.while_loop(lambda j, t: j < 2, lambda j, t: (j + 1, t + x), (G.constant(0), s))
        return i + 1, s
    return G.while_loop(lambda i, s: i < 2, outer, (G.constant(0), G.constant(0.0)))[1]


# Each builds a construct from x (a placeholder fed 1.0) and gives its value.
_CONSTRUCTS = {
    "while_loop": (lambda x: G.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + x),
                                          (G.constant(0), x))[1], 4.0),
    "scan": (_scan, 4.0),
    "map_fn": (lambda x: G.reduce_sum(G.map_fn(lambda r: r * 2.0, G.stack([x, x]))), 4.0),
    "foldl": (lambda x: G.foldl(lambda a, r: a + r, G.stack([x, x]), initializer=G.constant(1.0)), 3.0),
    "cond": (lambda x: G.cond(x > 0.0, lambda: x * 2.0, lambda: x), 2.0),
    "tensor_array": (_tensor_array, 4.0),
    "nested_loop": (_nested_loop, 4.0),
    "constant_in_branch": (_constant_in_branch, 4.0),
    "loop_in_loop_body": (_loop_in_a_loop_body_under_control_dependencies, 4.0),
}


@pytest.mark.parametrize("construct", sorted(_CONSTRUCTS))
def test_constructs_built_under_control_dependencies_run_after_them(construct):
    """Built in `with control_dependencies([check])`, the construct computes its value in every mode, and
    the check runs first: fetching the value runs it (and a failing check fails the run)."""
    build, want = _CONSTRUCTS[construct]
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (), name="x")
        ok = G.placeholder(np.bool_, (), name="ok")
        check = G.assert_(ok, "the check failed")
        with G.control_dependencies([check]):
            y = G.convert(build(x))
    g.validate()
    for mode in ("dataflow", "compiled"):
        assert Session(g, mode=mode).run(y, {x: 1.0, ok: True}) == want, mode
        with pytest.raises(RunError, match="the check failed"):
            Session(g, mode=mode).run(y, {x: 1.0, ok: False})
    assert run_reference(y, {x: 1.0, ok: True}) == want


def test_only_nodes_without_an_ordered_input_take_a_blocks_control_inputs():
    """As in TensorFlow: a node with an input built in the block after its nodes waits for them already, so
    a loop built in a block gives control inputs to its Enters (and constants), not to every body node."""
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (), name="x")
        check = G.assert_(x > 0.0, "x > 0")
        with G.control_dependencies([check]):
            _, y = G.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, G.tanh(s * x) + s), (G.constant(0), x))
    waiting = {n.op for n in g.nodes if check in n.control_inputs}
    assert waiting <= {"Enter", "Const", "Identity"}, waiting
    assert not [n.name for n in g.nodes if n.op in ("Tanh", "Mul", "Exit") and n.control_inputs]
    assert Session(g).run(y, {x: 1.0}) > 0
