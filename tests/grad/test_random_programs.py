"""Random programs (nested data-dependent loops, conds, TensorArrays): in-graph gradients equal the
gradients of the same program unrolled in Python and exact forward-mode derivatives computed in plain
Python (dual numbers), and do not depend on parallel_iterations; compiled code computes the same bits
as the dataflow executor."""
import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import graph
import grad
from exec import Session
from tests.grad import programs as P

floats = st.floats(-1.5, 1.5, allow_nan=False).map(lambda v: round(v, 3))
vec = st.tuples(floats, floats).map(lambda t: np.array(t, dtype=np.float64))


def _graph_gradients(prog, x0, w0, pars):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (2,), name="x")
        w = graph.placeholder(np.float64, (2,), name="w")
        fetches = []
        for par in pars:
            loss = P.build_graph(prog, x, w, par)
            fetches.append((loss, grad.gradients(loss, [x, w])))
    return _run_both_modes(g, fetches, {x: x0, w: w0})


def _run_both_modes(g, fetches, feeds):
    """The dataflow executor's results, checked equal, bit for bit, to compiled code's."""
    got = Session(g, mode="dataflow").run(fetches, feeds)
    compiled = Session(g, mode="compiled")
    compiled.compiled_source(fetches, feeds)  # raises if the plan would fall back to the executor
    for a, b in zip(graph.nest.flatten(compiled.run(fetches, feeds)), graph.nest.flatten(got), strict=True):
        np.testing.assert_array_equal(a, b)
    return got


def _unrolled_gradients(prog, x0, w0):
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (2,), name="x")
        w = graph.placeholder(np.float64, (2,), name="w")
        loss = P.build_unrolled(prog, x0, w0, x, w)
        grads = grad.gradients(loss, [x, w])
    return Session(g).run((loss, grads), {x: x0, w: w0})


def _forward_mode_gradients(prog, x0, w0):
    """The exact gradients, one directional derivative per input component (plain Python)."""
    zero = np.zeros(2)
    return [np.array([P.forward_derivative(prog, x0, w0, *((e, zero) if k == 0 else (zero, e)))
                      for e in np.eye(2)]) for k in range(2)]


def _check(prog, x0, w0):
    results = _graph_gradients(prog, x0, w0, pars=(1, 2, 32))
    (loss1, (gx1, gw1)) = results[0]
    for loss, (gx, gw) in results[1:]:  # parallel_iterations changes nothing, bit for bit
        assert loss == loss1
        np.testing.assert_array_equal(gx, gx1)
        np.testing.assert_array_equal(gw, gw1)
    loss_u, (gx_u, gw_u) = _unrolled_gradients(prog, x0, w0)
    np.testing.assert_allclose(loss1, loss_u, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx1, gx_u, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(gw1, gw_u, rtol=1e-9, atol=1e-9)
    fx, fw = _forward_mode_gradients(prog, x0, w0)
    np.testing.assert_allclose(gx1, fx, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(gw1, fw, rtol=1e-9, atol=1e-9)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=P.programs(depth=2), x0=vec, w0=vec)
def test_random_programs(prog, x0, w0):
    _check(prog, x0, w0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=P.programs(depth=3), x0=vec, w0=vec)
def test_random_programs_nested_three_deep(prog, x0, w0):
    _check(prog, x0, w0)


def _hessian_vector_product(prog, x0, w0, v0, build):
    """H v, H the Hessian in w of the program built by `build`, as a gradient of a gradient."""
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (2,), name="x")
        w = graph.placeholder(np.float64, (2,), name="w")
        (gw,) = grad.gradients(build(x, w), [w])
        (hv,) = grad.gradients(graph.reduce_sum(gw * graph.constant(v0)), [w])
    return _run_both_modes(g, hv, {x: x0, w: w0})


_ZERO = np.zeros(2)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=P.programs(depth=2), x0=vec, w0=vec)
# a cond nested in a cond branch whose gradient cond then sits beside a loop's gradient loop
@example(prog=[("if", "a", 0.0, [("assign", "a", ("mul_w", "a"))],
                [("if", "a", 0.0, [("assign", "b", ("mul_w", "a"))], [("assign", "a", ("mul_w", "a"))]),
                 ("while", "b", 0.5, 1, True, [("assign", "a", ("mul_w", "a"))])]),
               ("assign", "a", ("mul_w", "b"))], x0=_ZERO, w0=_ZERO)
# a cond inside a recording loop: the untaken branch's zero gradient of a captured value has its shape
@example(prog=[("while", "b", 4.0, 2, True, [("assign", "b", ("mul_w", "a")),
                                             ("if", "a", 0.0, [("assign", "b", ("scale", "a", 1.2))],
                                              [("assign", "b", ("scale", "b", 1.2))])]),
               ("assign", "b", ("mul_w", "b"))], x0=np.array([1.435, 0.668]), w0=np.array([1.006, 0.289]))
def test_random_programs_second_order(prog, x0, w0):
    v0 = np.array([0.6, -0.8])
    hv = _hessian_vector_product(prog, x0, w0, v0, lambda x, w: P.build_graph(prog, x, w))
    hv_u = _hessian_vector_product(prog, x0, w0, v0, lambda x, w: P.build_unrolled(prog, x0, w0, x, w))
    np.testing.assert_allclose(hv, hv_u, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(hv, P.forward_hessian_vector(prog, x0, w0, v0), rtol=1e-9, atol=1e-9)
