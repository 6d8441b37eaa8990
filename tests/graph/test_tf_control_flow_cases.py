"""Cases of TensorFlow's control_flow_ops_py_test.py, ported to the graph API: conds and while loops (nested,
with control dependencies, Variables assigned in branches and bodies, maximum_iterations, shape invariants,
structured loop variables), with TensorFlow's expected values, in both execution modes and the reference
interpreter. Where the APIs differ by design the port follows ours: a cond or loop given Python bools runs
Python, and a loop returns the structure of its loop variables."""
import collections
import warnings

import numpy as np
import pytest

import grad
import graph as G
from exec import RunError, Session
from exec.reference import run_reference

CASES = {}


def case(f):
    CASES[f.__name__] = f
    return f


def run(fetches, feeds=None, modes=("compiled", "dataflow", "reference"), g=None):
    """The fetched values, the same in every mode of `modes` (cases that assign Variables run once, on the
    dataflow executor)."""
    g = g or G.get_default_graph()
    outs = [run_reference(fetches, feeds) if m == "reference" else Session(g, mode=m).run(fetches, feeds)
            for m in modes]
    for o in outs[1:]:
        for a, b in zip(G.nest.flatten(outs[0]), G.nest.flatten(o), strict=True):
            np.testing.assert_allclose(a, b)
    return outs[0]


def close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-6)


@case
def switch_dead_branch():
    d = G.constant([1, 2, 3])
    p = G.constant(True)
    f, _ = G.get_default_graph().create_node("Switch", [d, p]).outputs
    for mode in ("compiled", "dataflow"):
        with pytest.raises(RunError, match="is dead: it comes from a branch that was not taken"):
            Session(G.get_default_graph(), mode=mode).run(f)


@case
def loop_false():
    close(run(G.while_loop(lambda x: False, lambda x: x + 1, [G.constant(5)])), [5])


@case
def cond_1():
    x = G.constant(10)
    pred = G.less(1, 2)
    close(run(G.cond(pred, lambda: x + 1, lambda: x - 1)), 11)


@case
def cond_3():
    x = G.constant(10)
    pred = G.less(1, 2)
    fn1 = lambda: x + 1
    fn2 = lambda: x - 1
    fn3 = lambda: G.cond(pred, fn1, fn2) + 1
    close(run(G.cond(pred, fn3, fn2)), 12)


@case
def cond_4():
    v1, v2, v3 = G.Variable(7), G.Variable(7), G.Variable(7)
    age = G.constant(3)
    max_age = G.constant(2)
    pred = G.greater(age, max_age)
    fn1 = lambda: [v1.assign(1), v2.assign(2)]
    fn2 = lambda: [v3.assign(3), G.constant(10)]
    r = G.cond(pred, fn1, fn2)
    run(r, modes=("dataflow",))
    assert (v1.value, v2.value, v3.value) == (1, 2, 7), (v1.value, v2.value, v3.value)


@case
def cond_5():
    alive = G.constant(True)
    count = G.constant(0)
    def body(i):
        return G.cond(alive, lambda: [G.less(i, 3), G.add(count, 1)], lambda: [alive, count])
    for i in range(10):
        alive, count = body(i)
    close(run(count), 4)


@case
def cond_6():
    v1 = G.Variable([7])
    age = G.constant(3)
    pred = G.greater(age, 4)
    close(run(G.cond(pred, lambda: G.reshape(age, [1]), lambda: v1.read())), [7])


@case
def cond_7():
    x = G.constant(10)
    y = G.constant(200)
    pred = G.less(1, 2)
    close(run(G.cond(pred, lambda: [x + 1, x + 2], lambda: [y, y])), [11, 12])


@case
def cond_with_control():
    control_holder = G.placeholder(np.float32, ())
    a = G.constant(3)
    def true_branch():
        with G.control_dependencies([control_holder]):
            _ = a + 1
        return a + 2
    close(run(G.cond(G.constant(True), true_branch, lambda: G.constant(1))), 5)


@case
def cond_switch_identity():
    """The untaken branch's Assert never runs; the taken one's does."""
    p = G.placeholder(np.bool_, ())

    def wrong_branch():
        check = G.assert_(False, "Wrong branch!!!")
        with G.control_dependencies([check]):
            return G.constant(2.0)
    r = G.cond(p, lambda: G.constant(1.0), wrong_branch)
    close(run(r, {p: True}), 1.0)
    with pytest.raises(RunError, match="Wrong branch"):
        Session(G.get_default_graph()).run(r, {p: False})


@case
def while_1():
    close(run(G.while_loop(lambda i: i < 10000, lambda i: i + 1, [G.constant(0)], parallel_iterations=20)), [10000])


@case
def while_external_control_dependencies():
    v = G.Variable(0.0)
    increment = v.assign_add(1.0)
    def body_fn(i):
        with G.control_dependencies([increment]):
            return i + 1
    result = G.while_loop(lambda i: i < 2, body_fn, [1])
    for mode in ("dataflow", "compiled"):
        v.load(0.0)
        close(Session(G.get_default_graph(), mode=mode).run(result), [2])
        assert v.value == 1.0, (mode, v.value)


@case
def while_external_control_dependencies_no_input():
    v = G.Variable(0.0)
    increment = v.assign_add(1.0)
    def body_fn(unused_i):
        with G.control_dependencies([increment]):
            return G.constant(5, name="five")
    result = G.while_loop(lambda i: i < 5, body_fn, [0])
    for mode in ("dataflow", "compiled"):
        v.load(0.0)
        close(Session(G.get_default_graph(), mode=mode).run(result), [5])
        assert v.value == 1.0, (mode, v.value)


@case
def while_with_maximum_iterations():
    s = G.constant([1, 2, 3, 4, 5])
    r = G.while_loop(lambda *_: True, lambda i, x: (i + 1, x + s), [0, G.constant([0, 0, 0, 0, 0])], maximum_iterations=3)
    close(run(r[1]), [3, 6, 9, 12, 15])


@case
def while_with_maximum_iterations_single_arg():
    r = G.while_loop(lambda i: True, lambda i: i + 1, [0], maximum_iterations=1)
    close(run(r), [1])


@case
def while_3():
    def compute(i, m, c, o):
        m, c = [m + 1, c + 1]
        o = o + m
        o = o + c
        i = i + 1
        return [i, m, c, o]
    i = G.convert(0)
    d = G.convert(100)
    r = G.while_loop(lambda i, m, c, o: i < d, compute, [i, 0, 0, 0])
    close(run(r[3]), 10100)


@case
def while_4():
    x = G.constant([1, 2, 3, 4, 5, 6])
    s = G.size(x)
    def compute(i, m, c, o):
        m, c = [G.gather(x, i), G.gather(x, i)]
        o = o + m
        o = o + c
        i = i + 1
        return [i, m, c, o]
    r = G.while_loop(lambda i, m, c, o: i < s, compute, [0, 0, 0, 0])
    close(run(r[3]), 42)


@case
def while_5_shape_changes():
    x = G.constant([1, 2, 3, 4, 5, 6])
    s = G.size(x)
    def compute(i, c, o):
        c = x[i:i + 1]
        o = G.concat([o, c], 0)
        return [i + 1, c, o]
    r = G.while_loop(lambda i, c, o: i < s, compute, [0, G.constant(0), G.constant([0])])
    close(run(r[2]), [0, 1, 2, 3, 4, 5, 6])


@case
def while_5_shape_invariants():
    x = G.constant([1, 2, 3, 4, 5, 6])
    s = G.size(x)
    def compute(i, c, o):
        c = x[i:i + 1]
        o = G.concat([o, c], 0)
        return [i + 1, c, o]
    i = G.constant(0)
    r = G.while_loop(lambda i, c, o: i < s, compute, [i, G.constant(0), G.constant([0])], shape_invariants=[(), None, None])
    close(run(r[2]), [0, 1, 2, 3, 4, 5, 6])


@case
def while_shape_inference_invariant_refused():
    i = G.constant(0)
    m = G.ones([2, 2])
    def b(i, j):
        return [i + 1, G.tile(j, [2, 2])]
    try:
        G.while_loop(lambda i, j: i < 2, b, [i, m], shape_invariants=[(), (None, 2)])
    except (ValueError, G.GraphError) as e:
        assert "shape" in str(e), e
    else:
        raise AssertionError("a body breaking its shape invariant was accepted")
    r = G.while_loop(lambda i, j: i < 2, b, [i, m], shape_invariants=[(), (None, None)])
    assert r[1].shape == (None, None), r[1].shape
    assert run(r[1]).shape == (8, 8)


@case
def while_with_non_tensor_input_vector():
    n = np.array([0])
    r = G.while_loop(lambda x: x[0] < 10000, lambda x: G.stack([x[0] + 1]), [n], parallel_iterations=20)
    close(run(r), [[10000]])


@case
def nested_while_1():
    n = G.constant(0)
    def cpu_sum(s):
        def b(i, s):
            return i + 1, i + s
        _, r_s = G.while_loop(lambda i, s: i < 10, b, [n, s])
        return r_s
    r = G.while_loop(lambda x: x < 200, lambda x: x + cpu_sum(n), [n])
    close(run(r), [225])


@case
def nested_while_2():
    s0 = G.constant(2.0)
    def inner_loop(s1):
        z = G.constant(0)
        return G.while_loop(lambda i, x: i < 4, lambda i, x: [i + 1, x * 2.0], [z, s1])
    r = G.while_loop(lambda x: x < 128.0, lambda x: inner_loop(x)[1], [s0])
    close(run(r), [512.0])


@case
def while_with_control_1():
    n = G.constant(0)
    r = G.constant(0)
    def body(n_, r_):
        n_ = n_ + 1
        with G.control_dependencies([r_]):
            r_ = G.constant(12)
        return [n_, r_]
    res = G.while_loop(lambda n_, r_: n_ < 10, body, [n, r], parallel_iterations=1)
    close(run(res[1]), 12)


@case
def while_with_control_2():
    r = G.constant(0)
    def body(r_):
        with G.control_dependencies([r_]):
            r_ = G.constant(12)
        return [r_]
    res = G.while_loop(lambda r_: r_ < 10, body, [r], parallel_iterations=1)
    close(run(res), [12])


@case
def while_with_control_3():
    b = G.placeholder(np.bool_, ())
    c = G.constant(1)
    x0 = G.constant(0)
    with G.control_dependencies([b]):
        r = G.while_loop(lambda x: x < 10, lambda x: x + c, [x0])
    close(run(r, {b: True}), [10])


@case
def while_with_control_4():
    b = G.placeholder(np.bool_, ())
    c = G.constant(1)
    x0 = G.constant(0)
    with G.control_dependencies([b]):
        r = G.while_loop(lambda x: x < 10, lambda x: x + G.identity(c), [x0])
    close(run(r, {b: True}), [10])


@case
def while_with_control_5():
    b = G.placeholder(np.bool_, ())
    c = G.constant(1)
    x0 = G.constant(0)
    def body(x):
        with G.control_dependencies([b]):
            return x + c
    r = G.while_loop(lambda x: x < 10, body, [x0])
    close(run(r, {b: True}), [10])


@case
def while_cond_with_control():
    const_true = lambda: G.constant(True)
    const_false = lambda: G.constant(False)
    cond = lambda i: G.cond(i > 0, const_true, const_false)
    body = lambda i: G.cond(i > 0, lambda: i - 1, lambda: i)
    with G.control_dependencies([G.no_op()]):
        loop = G.while_loop(cond, body, (G.constant(5),))
    close(run(loop), [0])


@case
def while_cond_with_control_1():
    v = G.Variable(np.float32(2))
    i0 = G.constant(0)
    with G.control_dependencies([i0]):
        def loop_condition(i): return i < 4
        def loop_body(i):
            some_cond = G.cond(G.constant(True), lambda: v.assign(G.square(v.read())), lambda: v.read())
            with G.control_dependencies([some_cond]):
                return i + 1
    r = G.while_loop(loop_condition, loop_body, (i0,))
    close(run(r, modes=("dataflow",)), [4])
    close(v.value, 65536.0)


@case
def while_cond_exit_control():
    v = G.Variable(1)
    def false_branch():
        def body(i):
            x = v.assign(i)
            return x + 1
        loop = G.while_loop(lambda i: i < 100, body, [0])
        with G.control_dependencies(loop):
            return G.constant(6.0)
    r = G.cond(G.constant(False), lambda: G.constant(1.0), false_branch)
    close(run(r, modes=("dataflow",)), 6.0)
    close(v.value, 99)


@case
def cond_while_1():
    n = G.convert(0, name="n")
    r = G.cond(G.less(0, 1), lambda: G.while_loop(lambda x: x < 10, lambda x: x + 1, [n])[0], lambda: n)
    close(run(r), [10])


@case
def cond_while_2():
    n = G.convert(0)
    r = G.cond(G.less(1, 0), lambda: n + 1, lambda: G.while_loop(lambda x: x < 10, lambda x: x + 1, [n])[0])
    close(run(r), 10)


@case
def while_cond_1():
    i = G.convert(0, name="i")
    n = G.convert(10, name="n")
    one = G.convert(1, name="one")
    b = lambda x: G.cond(G.constant(True), lambda: x + one, lambda: x - one)
    close(run(G.while_loop(lambda x: x < n, b, [i])), [10])


@case
def while_cond_2():
    n = G.convert(0)
    b = lambda x: G.cond(G.constant(True), lambda: x + 1, lambda: n)
    close(run(G.while_loop(lambda x: x < 10, b, [n])), [10])


@case
def while_update_variable_1():
    select = G.Variable([3.0, 4.0, 5.0])
    n = G.constant(0)
    def loop_body(j):
        ns = select.scatter_update(j, 10.0)
        nj = j + 1
        op = G.group(ns)
        with G.control_dependencies([op]):
            nj = G.identity(nj)
        return [nj]
    r = G.while_loop(lambda j: j < 3, loop_body, [n], parallel_iterations=1)
    close(run(r, modes=("dataflow",)), [3])
    close(select.value, [10.0, 10.0, 10.0])


@case
def while_update_variable_2():
    select1 = G.Variable([3.0, 4.0, 5.0])
    select2 = G.Variable([3.0, 4.0, 5.0])
    n = G.constant(0)
    def loop_body(j):
        ns1 = select1.scatter_update(j, 10.0)
        ns2 = select2.scatter_update(j, 10.0)
        nj = j + 1
        op = G.group(ns1, ns2)
        with G.control_dependencies([op]):
            nj = G.identity(nj)
        return [nj]
    r = G.while_loop(lambda j: j < 3, loop_body, [n], parallel_iterations=1)
    close(run(r, modes=("dataflow",)), [3])
    close(select1.value, [10.0] * 3)
    close(select2.value, [10.0] * 3)


@case
def while_update_variable_3():
    q = G.Variable(np.float64(0.0))
    n = G.constant(0)
    def loop_body(j, _):
        ni = q.assign_add(1.0)
        return [j + 1, ni]
    r = G.while_loop(lambda j, _: j < 3, loop_body, [n, G.identity(np.float64(0.0))], parallel_iterations=1)
    close(run(r[1], modes=("dataflow",)), 3.0)


@case
def while_update_variable_4():
    var_a = G.Variable(0, name="a")
    var_b = G.Variable(0, name="b")
    c = G.constant(0, name="c")
    asn1 = var_a.assign_add(1, name="a_add")
    def pred(i): return i < 10
    def loop_body(i):
        asn2 = var_b.assign_add(var_a.read(), name="b_add")
        with G.control_dependencies([asn2]):
            ni = i + 1
        return ni
    lpa = G.while_loop(pred, loop_body, [c], parallel_iterations=1)
    close(run([asn1, lpa], modes=("dataflow",))[1], [10])
    close(var_b.value, 10)


@case
def while_update_variable_5():
    var_a = G.Variable(0, name="a")
    var_b = G.Variable(0, name="b")
    def pred(_): return var_b.read() < 10
    def loop_body(i):
        asn1 = var_a.assign_add(1)
        asn2 = var_b.assign_add(1)
        with G.control_dependencies([asn1, asn2]):
            inc_b = G.identity(var_b.read())
        return inc_b
    lpa = G.while_loop(pred, loop_body, [var_b.read()], parallel_iterations=1)
    close(run(lpa, modes=("dataflow",)), [10])
    close(var_a.value, 10)
    close(var_b.value, 10)


@case
def while_nested_input():
    named = collections.namedtuple("named", ("a", "b"))
    loop_vars = [named(a=G.constant(0.0), b=G.constant(1.0)), (G.constant(2.0), G.constant(3.0)), G.constant(4.0)]
    c = lambda lv0, _1, _2: lv0.a < 100.0
    def b(lv0, lv1, lv2):
        lv0 = named(a=lv0.a + 1, b=lv0.b)
        lv1 = (lv1[0] + 1, lv1[1])
        lv2 += 2
        return [lv0, lv1, lv2]
    r = G.while_loop(c, b, loop_vars)
    assert isinstance(r[0], named), type(r[0])
    close(run(G.nest.flatten(r)), [100.0, 1.0, 102.0, 3.0, 204.0])


@case
def one_value_cond():
    c = G.placeholder(np.int32, shape=[])
    one = G.convert(1, name="one")
    two = G.convert(2, name="two")
    i = G.cond(G.greater_equal(c, 1), lambda: one, lambda: two)
    close(run(i, {c: 2}), 1)
    close(run(i, {c: 0}), 2)


@case
def example_cond():
    x = G.convert([-2.0, 2.0], name="x")
    d = G.placeholder(np.int32, shape=[])
    l2 = lambda: G.sqrt(G.reduce_sum(G.square(x)))
    l1 = lambda: G.reduce_sum(G.abs(x))
    i = G.cond(G.equal(d, 2), l2, l1)
    close(run(i, {d: 1}), 4.0)
    close(run(i, {d: 2}), 2.828427)


@case
def one_op_cond():
    v = G.Variable(0)
    c = G.convert(0)
    one = G.convert(1)
    two = G.convert(2)
    p = G.greater_equal(c, 1)
    i = G.cond(p, lambda: v.assign(one), lambda: v.assign(two))
    assert isinstance(i, G.Tensor), type(i)
    close(run(i, modes=("dataflow",)), 2)
    close(v.value, 2)


@case
def merge_shapes():
    def shape_of(s1, s2):
        p1 = G.placeholder(np.float32, s1)
        p2 = G.placeholder(np.float32, s2)
        return G.cond(G.placeholder(np.bool_, ()), lambda: p1, lambda: p2).shape
    assert shape_of([1, 2], [1, 2, 3]) is None
    assert shape_of([None, 2], [2, 1]) == (None, None)
    assert shape_of([None, None], [None, None]) == (None, None)
    assert shape_of([1, 2], [1, 2]) == (1, 2)
    assert shape_of([None, 2], [None, 2]) == (None, 2)
    assert shape_of([1, None], [1, None]) == (1, None)


@case
def run_loop_tensor():
    tensor_list = []
    def condition(t): return t < G.constant(5)
    def body(_):
        tensor_list.append(G.constant(5) + 0)
        return G.constant(10)
    result = G.while_loop(condition, body, [G.constant(4)])
    close(run(result), [10])
    for mode in ("dataflow", "compiled"):  # a value of a loop body cannot be fetched
        with pytest.raises(ValueError, match="lives inside the while loop"):
            Session(G.get_default_graph(), mode=mode).run(tensor_list[0])


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", grad.NonDifferentiableWarning)
        with G.Graph().as_default():
            CASES[name]()
