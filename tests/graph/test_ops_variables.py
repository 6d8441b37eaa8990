"""Variables: values owned by the Variable persist across runs, sessions and graphs; ordered updates."""
import numpy as np
import pytest

import graph as G
from exec import Session


def test_value_persists_across_runs_sessions_and_graphs():
    v = G.Variable(np.zeros(3, np.float32), name="acc")
    g = G.Graph()
    with g.as_default():
        step = v.assign_add(np.ones(3, np.float32))
    sess = Session(g)
    sess.run(step)
    np.testing.assert_array_equal(sess.run(step), [2, 2, 2])
    np.testing.assert_array_equal(Session(g).run(step), [3, 3, 3])
    g2 = G.Graph()
    with g2.as_default():
        doubled = v * 2
    np.testing.assert_array_equal(Session(g2).run(doubled), [6, 6, 6])
    np.testing.assert_array_equal(v.value, [3, 3, 3])
    assert v.value.dtype == np.float32 and v.shape == (3,) and v.dtype == np.float32
    v.reset()
    np.testing.assert_array_equal(v.value, [0, 0, 0])


def test_reads_and_writes_happen_in_program_order():
    v = G.Variable(1.0)
    g = G.Graph()
    with g.as_default():
        before = v.read()
        a = v.assign(v * 10)
        middle = v.read()
        b = v.assign_sub(3.0)
        after = v + 0
    assert Session(g).run([before, a, middle, b, after]) == [1.0, 10.0, 10.0, 7.0, 7.0]
    assert Session(g).run(v) == 7.0  # fetching a Variable alone runs nothing
    assert Session(g).run([b, v]) == [67.0, 67.0]  # ... and gives its value after the run


def test_fetching_a_variable_and_loading_values():
    v = G.Variable([[1, 2], [3, 4]], name="w", trainable=False)
    assert v.dtype == np.int64 and not v.trainable
    v.load(np.array([[5, 6], [7, 8]], np.int32))
    g = G.Graph()
    with g.as_default():
        total = np.sum(v)
    assert Session(g).run([total, v])[0] == 26
    np.testing.assert_array_equal(Session(g).run(v), [[5, 6], [7, 8]])
    with pytest.raises(ValueError, match="fixed"):
        v.load(np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="cannot load a float64 value"):
        v.assign_value(np.zeros((2, 2)))


def test_values_are_never_mutated_in_place():
    v = G.Variable(np.arange(3.0))
    g = G.Graph()
    with g.as_default():
        old = v.read()
        new = v.assign_add(1.0)
    old_val, new_val = Session(g).run([old, new])
    np.testing.assert_array_equal(old_val, [0, 1, 2])
    np.testing.assert_array_equal(new_val, [1, 2, 3])
    with pytest.raises(ValueError, match="read-only"):
        v.value[0] = 5.0
    fed = np.zeros(3)
    g2 = G.Graph()
    with g2.as_default():
        p = G.placeholder(np.float64, [3])
        assign = v.assign(p)
    Session(g2).run(assign, {p: fed})
    fed[0] = 42.0  # the Variable keeps its own copy
    assert v.value[0] == 0.0


def test_assign_checks_shape_and_dtype():
    v = G.Variable(np.zeros((2, 3), np.float32), name="m")
    with G.Graph().as_default():
        with pytest.raises(ValueError, match=r"shape \[3,3\] to Variable 'm' of shape \[2,3\]"):
            v.assign(np.zeros((3, 3), np.float32))
        with pytest.raises(TypeError, match="complex128"):
            v.assign(np.zeros((2, 3), np.complex128))
        v.assign(np.zeros(3, np.float64))  # broadcasts, float64 -> float32 is same-kind
        v.assign_add(1)                    # weak scalar
        iv = G.Variable(np.zeros(2, np.int32))
        with pytest.raises(TypeError, match="cannot assign_add a float64 value"):
            iv.assign_add(0.5)
        with pytest.raises(TypeError, match="concrete value"):
            G.Variable(G.constant(1.0))


def test_assign_at_and_scatter_update():
    buf = G.Variable(np.zeros((4, 2)), name="ring")
    g = G.Graph()
    with g.as_default():
        i = G.placeholder(np.int64, [])
        row = G.placeholder(np.float64, [2])
        write = buf.assign_at(i % 4, row)
        scatter = buf.scatter_update([0, 3], np.ones((2, 2)) * 9)
    sess = Session(g)
    for k in range(6):
        sess.run(write, {i: k, row: [k, -k]})
    np.testing.assert_array_equal(buf.value, [[4, -4], [5, -5], [2, -2], [3, -3]])
    sess.run(scatter, {i: 1, row: [7, 7]})  # ordered after the write it was built after
    np.testing.assert_array_equal(buf.value[1], [7, 7])
    np.testing.assert_array_equal(buf.value[[0, 3]], 9)


def test_variables_in_a_loop_and_registry():
    v = G.Variable(0, name="counter")
    w = G.Variable(np.ones(2), name="weights")
    g = G.Graph()
    with g.as_default():
        def body(i):
            v.assign_add(i)  # an ordered effect: runs in every iteration without being consumed
            return i + 1
        (out,) = G.while_loop(lambda i: i < 5, body, (G.constant(0),))
        loss = np.sum(w * 2)
    assert Session(g).run(out) == 5 and v.value == 10
    assert [x.name for x in G.trainable_variables(g)] == [v.name, w.name]  # in order of first use
    assert set(G.global_variables(g)) == {v, w}
    assert g.variables["weights"] is w
    assert loss.dtype == np.float64


def test_unique_names_and_operators_on_variables():
    a, b = G.Variable(1.0, name="same"), G.Variable(2.0, name="same")
    assert a.name != b.name
    with G.Graph().as_default() as g:
        expr = (a + b) * a - b / 2 + (-a) ** 2 + abs(b)
        cmp = a < b
        arr = np.exp(a) + np.maximum(a, b)
        assert expr.dtype == np.float64 and cmp.dtype == np.bool_
    got = Session(g).run([expr, cmp, arr])
    assert got[0] == pytest.approx(3.0 - 1.0 + 1.0 + 2.0) and got[1]
    assert got[2] == pytest.approx(np.exp(1.0) + 2.0)
    with pytest.raises(TypeError, match="truth value"):
        bool(a)
