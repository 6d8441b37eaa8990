"""Gradients through cond, while_loop and TensorArrays, against finite differences and exact values."""
import numpy as np
import pytest

import grad
import graph
from exec import Session
from graph.errors import GraphError
from tests.grad.gradcheck import check_gradients

S = graph.reduce_sum


def run(fetches, feeds=None):
    return Session(graph.get_default_graph()).run(fetches, feeds)


@pytest.fixture(autouse=True)
def fresh_graph():
    g = graph.Graph()
    with g.as_default():
        yield g


# --------------------------------------------------------------------------- cond

def test_untaken_branch_leaks_no_nan():
    x = graph.placeholder(np.float64, ())
    y = graph.cond(x > 0, lambda: graph.sqrt(x) + graph.log(x), lambda: -x * 3.0)
    (gx,) = grad.gradients(y, [x])
    assert run(gx, {x: -1.0}) == -3.0
    assert run(gx, {x: 0.0}) == -3.0
    assert run(gx, {x: 4.0}) == pytest.approx(0.25 + 0.25)


def test_cond_gradient_is_a_cond_on_the_same_predicate(fresh_graph):
    x = graph.placeholder(np.float64, ())
    p = x > 1.0
    y = graph.cond(p, lambda: x * x, lambda: x)
    grad.gradients(y, x)
    switches = [n for n in fresh_graph.nodes if n.op == "Switch" and n.name.startswith("gradients")]
    assert switches and all(n.inputs[1] is p for n in switches)


@pytest.mark.parametrize("x0", [-1.3, 0.7, 2.2])
def test_cond_with_values_captured_by_one_branch(x0):
    def fn(x, w):
        return graph.cond(S(x) > 0.5, lambda: x * w + graph.exp(w), lambda: graph.sin(x)) * 2.0
    check_gradients(fn, np.array([x0, 0.1]), np.array([0.3, -0.2]))


@pytest.mark.parametrize("x0", [-2.0, -0.5, 0.5, 2.0])
def test_nested_conds(x0):
    def fn(x):
        def outer_true():
            return graph.cond(x[0] > 1.0, lambda: x * x * x, lambda: graph.tanh(x))
        return graph.cond(x[0] > 0.0, outer_true, lambda: graph.cond(x[0] < -1.0, lambda: -x, lambda: x * 5.0))
    check_gradients(fn, np.array([x0, 0.3]))


def test_cond_with_several_outputs_one_unused():
    def fn(x):
        a, b = graph.cond(S(x) > 0, lambda: (x * 2.0, x * x), lambda: (x - 1.0, graph.exp(x)))
        return a * 3.0
    check_gradients(fn, np.array([0.4, 0.3]))


# --------------------------------------------------------------------------- while

@pytest.mark.parametrize("par", [1, 2, 32])
def test_loop_with_captured_weights_and_several_variables(par):
    def fn(x, w):
        def body(i, a, b):
            return i + 1, graph.tanh(graph.matmul(a, w)) + b * 0.1, b * 0.9 + a * 0.05
        _, a, b = graph.while_loop(lambda i, a, b: i < 4, body, (graph.constant(0), x, x * 0.5),
                                   parallel_iterations=par)
        return a + b
    rng = np.random.default_rng(3)
    check_gradients(fn, rng.normal(size=(2, 3)), rng.normal(size=(3, 3)) * 0.5)


def test_zero_trip_loop_passes_the_gradient_through():
    x = graph.placeholder(np.float64, (2,))
    w = graph.placeholder(np.float64, ())
    (y,) = graph.while_loop(lambda v: S(v) > 100.0, lambda v: (v * w,), (x,))
    gx, gw = grad.gradients(S(y * y), [x, w])
    out = run([gx, gw], {x: [1.0, 2.0], w: 3.0})
    np.testing.assert_array_equal(out[0], [2.0, 4.0])
    assert out[1] == 0.0


def test_loop_variable_not_changed_by_the_body():
    def fn(x, c):
        _, a, b = graph.while_loop(lambda i, a, b: i < 3, lambda i, a, b: (i + 1, a * b, b), (graph.constant(0), x, c))
        return a + b * b
    check_gradients(fn, np.array([0.5, -1.0]), np.array([1.1, 0.7]))


def test_loop_with_maximum_iterations():
    def fn(x):
        (y,) = graph.while_loop(lambda v: S(v) < 1e9, lambda v: (v * 1.5 + 0.1,), (x,), maximum_iterations=5)
        return y
    check_gradients(fn, np.array([0.5, 1.0]))


def test_data_dependent_trip_count_with_float_counter():
    def fn(x):
        _, y = graph.while_loop(lambda t, v: t < 2.5, lambda t, v: (t + 0.6, v * graph.cos(t) + t * v),
                                (S(x) * 0.0, x))
        return y
    check_gradients(fn, np.array([0.3, -0.2]))


def test_loop_inside_cond_and_cond_inside_loop_inside_cond():
    def fn(x, w):
        def looped():
            def body(v):
                return (graph.cond(S(v) > 2.0, lambda: v * w, lambda: v + w * w),)
            return graph.while_loop(lambda v: S(v) < 20.0, body, (x,))[0]
        return graph.cond(S(x) > 0.0, looped, lambda: x * 3.0)
    check_gradients(fn, np.array([0.5, 0.6]), np.array([1.3]))
    check_gradients(fn, np.array([-0.5, -0.6]), np.array([1.3]))


def test_three_nested_loops():
    def fn(x, w):
        def l1(i, v):
            def l2(j, v):
                def l3(k, v):
                    return k + 1, graph.sin(v) * w + v
                _, v = graph.while_loop(lambda k, v: k < j + 1, l3, (graph.constant(0), v))
                return j + 1, v * 0.9
            _, v = graph.while_loop(lambda j, v: j < i, l2, (graph.constant(0), v))
            return i + 1, v
        return graph.while_loop(lambda i, v: i < 3, l1, (graph.constant(0), x))[1]
    check_gradients(fn, np.array([0.3, 0.8]), np.array([0.7, 0.2]))


def test_gradient_of_loop_output_that_is_not_carried_forward():
    """A loop variable overwritten every iteration: its old value gets no gradient."""
    def fn(x):
        _, a, b = graph.while_loop(lambda i, a, b: i < 3, lambda i, a, b: (i + 1, b * 2.0, b + 1.0),
                                   (graph.constant(0), x, x))
        return a
    check_gradients(fn, np.array([0.5, 1.5]))


def test_gradient_called_inside_a_loop_body():
    """Per-iteration gradients: Newton's method for x^3 = 2 built with gradients in the body."""
    target = graph.constant(2.0)

    def body(i, x):
        f = x * x * x - target
        (df,) = grad.gradients(f, [x])
        return i + 1, x - f / df
    _, root = graph.while_loop(lambda i, x: i < 20, body, (graph.constant(0), graph.constant(1.0)))
    assert run(root) == pytest.approx(2 ** (1 / 3), rel=1e-12)


# --------------------------------------------------------------------------- TensorArray and its loops

def test_scan_gradient():
    def fn(xs, w):
        return graph.scan(lambda a, x: graph.tanh(a * w + x), xs, initializer=graph.zeros((2,)))
    rng = np.random.default_rng(0)
    check_gradients(fn, rng.normal(size=(5, 2)), rng.normal(size=(2,)))


def test_map_fn_foldl_foldr_gradients():
    rng = np.random.default_rng(1)
    xs, w = rng.normal(size=(4, 3)), rng.normal(size=(3,))
    check_gradients(lambda xs, w: graph.map_fn(lambda x: graph.sin(x) * w, xs), xs, w)
    check_gradients(lambda xs, w: graph.foldl(lambda a, x: a * graph.cos(x) + w, xs, graph.zeros((3,))), xs, w)
    check_gradients(lambda xs, w: graph.foldr(lambda a, x: a * x + w, xs, graph.ones((3,))), xs, w)
    check_gradients(lambda xs: graph.foldl(lambda a, x: a + x * x, xs), xs)


def test_tensor_array_written_in_data_dependent_loop():
    def fn(x):
        ta = graph.TensorArray(np.float64, size=None, element_shape=(2,))

        def body(i, v, ta):
            v = v * 1.3 + 0.1
            return i + 1, v, ta.write(i, v * v)
        n, _, ta = graph.while_loop(lambda i, v, ta: S(v) < 10.0, body, (graph.constant(0), x, ta))
        return ta.stack() * 2.0
    check_gradients(fn, np.array([0.5, 1.0]))


def test_tensor_array_read_twice_and_gathered():
    def fn(x):
        ta = graph.TensorArray(np.float64, size=3, element_shape=(2,)).unstack(x)
        return ta.read(1) * ta.read(1) + ta.read(2) + S(ta.gather(graph.constant(np.array([0, 0, 2]))), axis=0)
    check_gradients(fn, np.array([[0.5, 1.0], [2.0, -1.0], [0.1, 0.2]]))


# --------------------------------------------------------------------------- API

def test_unconnected_and_integer_and_stopped():
    x = graph.placeholder(np.float64, (2,))
    z = graph.placeholder(np.float64, (3,))
    i = graph.placeholder(np.int64, ())
    y = S(x * graph.stop_gradient(x)) + graph.cast(i, np.float64)
    gx, gz, gi = grad.gradients(y, [x, z, i])
    assert gi is None
    out = run([gx, gz], {x: [1.0, 2.0], z: [0, 0, 0], i: 3})
    np.testing.assert_array_equal(out[0], [1.0, 2.0])
    np.testing.assert_array_equal(out[1], [0.0, 0.0, 0.0])
    assert grad.gradients(y, [z], unconnected="none") == [None]


def test_grad_ys_and_structures():
    x = graph.placeholder(np.float64, (2,))
    ys = {"a": x * 2.0, "b": x * x}
    g = grad.gradients(ys, {"x": x}, grad_ys={"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])})
    np.testing.assert_array_equal(run(g["x"], {x: [3.0, 4.0]}), [2.0, 8.0])


def test_y_built_inside_a_branch_is_an_error():
    x = graph.placeholder(np.float64, ())
    inner = []
    graph.cond(x > 0, lambda: inner.append(x * 2.0) or inner[0], lambda: x)
    with pytest.raises(GraphError, match="was built inside"):
        grad.gradients(inner[0], [x])


def test_op_without_gradient_rule_names_the_op(monkeypatch):
    from graph import core, op_registry
    # registered for this test only: every op type the graph keeps must have a kernel
    monkeypatch.setitem(op_registry._OPS, "TestOpWithoutGradient",
                        op_registry.OpDef("TestOpWithoutGradient", op_registry.same_as_input))
    x = graph.placeholder(np.float64, ())
    y = core.make_op("TestOpWithoutGradient", [x]).outputs[0]
    with pytest.raises(GraphError, match="no gradient is defined for op TestOpWithoutGradient"):
        grad.gradients(y, [x])


def test_tensor_array_recurrence_reads_what_earlier_iterations_wrote():
    def fn(x, w):
        ta = graph.TensorArray(np.float64, size=None, element_shape=(2,)).write(0, x)

        def body(i, ta):
            prev = ta.read(i - 1)
            return i + 1, ta.write(i, graph.tanh(prev * w) + prev * 0.5)
        _, ta = graph.while_loop(lambda i, ta: i < 5, body, (graph.constant(1), ta))
        return ta.stack()
    check_gradients(fn, np.array([0.5, -0.3]), np.array([1.1, 0.8]))


def test_tensor_array_read_inside_a_cond_inside_a_loop():
    def fn(x, w):
        ta = graph.TensorArray(np.float64, size=4, element_shape=(2,)).unstack(x)

        def body(i, acc):
            e = ta.read(i)
            return i + 1, graph.cond(S(e) > 0, lambda: acc + e * w, lambda: acc * w)
        _, acc = graph.while_loop(lambda i, acc: i < 4, body, (graph.constant(0), graph.zeros((2,))))
        return acc + S(ta.gather(graph.constant(np.array([3, 1]))), axis=0)
    check_gradients(fn, np.array([[0.5, -0.3], [-1, -2], [0.2, 0.1], [1, 1.]]), np.array([1.1, 0.8]))


def test_loop_variable_whose_shape_grows():
    def fn(x, w):
        _, y = graph.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, graph.concat([y, y[:1] * w])),
                                (graph.constant(0), x))
        return y
    check_gradients(fn, np.array([0.5, 1.0]), np.array([1.3]))


def test_loop_over_a_dynamically_shaped_input():
    x = graph.placeholder(np.float64, (None, 2))
    w = graph.placeholder(np.float64, (2,))
    _, y = graph.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * w + S(y)), (graph.constant(0), x))
    gx, gw = grad.gradients(S(y), [x, w])
    out = run([gx, gw], {x: np.ones((3, 2)), w: np.array([0.5, 2.0])})
    np.testing.assert_allclose(out[0], np.tile([342.125, 437.75], (3, 1)))
    np.testing.assert_allclose(out[1], [407.25, 549.0])
