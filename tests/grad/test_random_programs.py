"""Random programs (nested data-dependent loops, conds, TensorArrays): in-graph gradients equal the
gradients of the same program unrolled in Python and exact forward-mode derivatives computed in plain
Python (dual numbers), and do not depend on parallel_iterations; compiled code computes the same bits
as the dataflow executor. With the generator's opt-in features: matmuls by a weight in loops (their
gradients summed after the gradient loop), gradients taken inside loop bodies and branches
(differentiated again from outside), the gradient of one variable's value with respect to another's
(equal to Python's, or an error naming the loop variable), paths through ops without a gradient (a
NonDifferentiableWarning only where the exact derivative is zero), and loop and branch bodies reading
tensors from outside them (loops in conds, nested loops), to second order."""
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import grad
import graph
from exec import Session
from graph.errors import GraphError
from tests.grad import programs as P

floats = st.floats(-1.5, 1.5, allow_nan=False).map(lambda v: round(v, 3))
vec = st.tuples(floats, floats).map(lambda t: np.array(t, dtype=np.float64))


def _graph_gradients(prog, x0, w0, pars, cut=None):
    """Loss and gradients for each parallel_iterations; `cut` collects the inputs ("x", "w") that a
    NonDifferentiableWarning named."""
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (2,), name="x")
        w = graph.placeholder(np.float64, (2,), name="w")
        fetches = []
        for par in pars:
            loss = P.build_graph(prog, x, w, par)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", grad.NonDifferentiableWarning)
                fetches.append((loss, grad.gradients(loss, [x, w])))
            if cut is not None:
                cut.update(m for c in caught for m in re.findall(r"depend on input '(\w)'", str(c.message)))
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
        sess = Session(g)
        loss = P.build_unrolled(prog, x0, w0, x, w, evaluate=lambda t: sess.run(t, {x: x0, w: w0}))
        grads = grad.gradients(loss, [x, w], non_differentiable="ignore")
    return sess.run((loss, grads), {x: x0, w: w0})


def _forward_mode_gradients(prog, x0, w0):
    """The exact gradients, one directional derivative per input component (plain Python)."""
    zero = np.zeros(2)
    return [np.array([P.forward_derivative(prog, x0, w0, *((e, zero) if k == 0 else (zero, e)))
                      for e in np.eye(2)]) for k in range(2)]


def _check(prog, x0, w0):
    cut = set()
    results = _graph_gradients(prog, x0, w0, pars=(1, 2, 32), cut=cut)
    (loss1, (gx1, gw1)) = results[0]
    for loss, (gx, gw) in results[1:]:  # parallel_iterations changes nothing, bit for bit
        assert loss == loss1
        np.testing.assert_array_equal(gx, gx1)
        np.testing.assert_array_equal(gw, gw1)
    loss_u, (gx_u, gw_u) = _unrolled_gradients(prog, x0, w0)
    np.testing.assert_allclose(loss1, loss_u, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx1, gx_u, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(gw1, gw_u, rtol=1e-9, atol=1e-9)
    if P.uses(prog, "grad_of"):  # only the unrolled program computes those in Python
        return
    fx, fw = _forward_mode_gradients(prog, x0, w0)
    np.testing.assert_allclose(gx1, fx, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(gw1, fw, rtol=1e-9, atol=1e-9)
    for name, exact in (("x", fx), ("w", fw)):  # a warning said the loss depends on it through no gradient
        if name in cut:
            np.testing.assert_array_equal(exact, 0.0)


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


# --------------------------------------------------------------------------- the generator's opt-in features

ALL = ("matmul", "gradients", "non_differentiable")
_X0, _W0 = np.array([0.3, 0.4]), np.array([0.7, -0.2])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=P.programs(depth=2, features=ALL), x0=vec, w0=vec)
# a weight's matmul in a loop inside a cond: its gradient is summed after the gradient loop
@example(prog=[("if", "a", -0.5, [("while", "a", 4.0, 3, False, [("assign", "a", ("mat_w", "a"))])],
                [("assign", "b", ("mul_w", "a"))])], x0=_X0, w0=_W0)
# gradient descent inside a loop, on a loss computed in the iteration
@example(prog=[("while", "a", 4.0, 3, True, [("grad", "a", "a", "tanh_w", False),
                                             ("assign", "b", ("mul_w", "a"))])], x0=_X0, w0=_W0)
# a gradient inside a branch, of a loss computed (through a cond) before it
@example(prog=[("while", "b", 4.0, 2, False, [("grad", "b", "a", "cond_sq", True)])], x0=_X0, w0=_W0)
# x reaches the loss only through a comparison
@example(prog=[("assign", "a", ("step", "b", "a")), ("assign", "b", ("mul_w", "a"))], x0=_X0, w0=_W0)
# a gradient taken in a branch, differentiated again from outside the cond
@example(prog=[("if", "a", -0.5, [("assign", "a", ("mul_w", "a"))], [("grad", "a", "a", "sq_w", False)])],
         x0=_X0 * -2.0, w0=_W0)
def test_random_programs_with_matmuls_inner_gradients_and_cut_paths(prog, x0, w0):
    _check(prog, x0, w0)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=P.programs(depth=2, features=ALL), x0=vec, w0=vec)
# the second-order gradient of a loop inside a cond whose body multiplies by a weight
@example(prog=[("if", "a", -0.5, [("while", "a", 4.0, 3, False, [("assign", "a", ("mat_w", "a")),
                                                                  ("assign", "a", ("tanh", "a"))])],
                [("assign", "b", ("mul_w", "a"))])], x0=_X0, w0=_W0)
# third order, through a gradient taken inside a loop in a cond
@example(prog=[("if", "a", -0.5, [("while", "a", 4.0, 2, False, [("grad", "a", "a", "tanh_w", False)])],
                [("assign", "b", ("mat_w", "a"))])], x0=_X0, w0=_W0)
def test_random_programs_with_matmuls_inner_gradients_and_cut_paths_second_order(prog, x0, w0):
    v0 = np.array([0.6, -0.8])
    hv = _hessian_vector_product(prog, x0, w0, v0, lambda x, w: P.build_graph(prog, x, w))
    hv_u = _hessian_vector_product(prog, x0, w0, v0, lambda x, w: P.build_unrolled(prog, x0, w0, x, w))
    np.testing.assert_allclose(hv, hv_u, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(hv, P.forward_hessian_vector(prog, x0, w0, v0), rtol=1e-9, atol=1e-9)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=P.programs(depth=3, features=("outer", "matmul")), x0=vec, w0=vec)
# a loop in a cond whose body reads the value from before the cond (issue 11, item 5)
@example(prog=[("if", "a", -0.5, [("while", "b", 4.0, 3, False, [("assign", "b", ("mul_outer", "b", "a")),
                                                                  ("assign", "a", ("mul_w", "b"))])],
                [("assign", "b", ("mul_w", "a"))])], x0=_X0, w0=_W0)
# nested loops in a cond, the inner body reading the value from before the inner loop
@example(prog=[("if", "a", -0.5, [("while", "a", 4.0, 2, True, [
    ("while", "b", 4.0, 2, False, [("assign", "b", ("mul_outer", "a", "b")), ("assign", "b", ("mat_w", "b"))])])],
                [("assign", "a", ("mul_outer", "b", "a"))])], x0=_X0, w0=_W0)
def test_loops_in_conds_reading_outer_tensors_first_and_second_order(prog, x0, w0):
    _check(prog, x0, w0)
    v0 = np.array([0.6, -0.8])
    hv = _hessian_vector_product(prog, x0, w0, v0, lambda x, w: P.build_graph(prog, x, w))
    np.testing.assert_allclose(hv, P.forward_hessian_vector(prog, x0, w0, v0), rtol=1e-9, atol=1e-9)


_CARRIED = "gradients: the value being differentiated reads '"   # grad.carried
_ALIAS = "; when the branch taken leaves it unchanged it is, in the Python program, the value it had before"
_LOOP_ALIAS = "; when the loop leaves it unchanged (or runs no iteration) it is, in the Python program"
_SIBLING = "the value being differentiated reads another output of"   # grad.aliases


def _named_refusal(e: GraphError) -> bool:
    """A refusal that says which variable a Python-meaning gradient would need and why."""
    m = str(e)
    return (_CARRIED in m and "a loop variable of the while loop at" in m) or \
        (" is an output of " in m and any(k in m for k in (_ALIAS, _LOOP_ALIAS, _SIBLING)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=P.programs(depth=2, features=("grad_of", "matmul")), x0=vec, w0=vec)
# d b / d a where b was computed from a in this iteration: exact
@example(prog=[("while", "a", 4.0, 3, False, [("assign", "b", ("tanh_prod", "a", "a")),
                                              ("grad_of", "a", "b", "a", False)])], x0=_X0, w0=_W0)
# d b / d a inside a branch, where b was computed from a before the cond: exact
@example(prog=[("assign", "b", ("mul_w", "a")), ("grad_of", "a", "b", "a", True)], x0=_X0, w0=_W0)
# d b / d a where b carries a value computed from a in the previous iteration: an error
@example(prog=[("while", "a", 4.0, 3, False, [("grad_of", "a", "b", "a", False), ("assign", "b", ("sin", "a"))])],
         x0=_X0, w0=_W0)
# d b / d a in a loop nested in a loop, b carried from before the outer loop, a changed by its iterations:
# an error (it was a silently wrong gradient where the data made the outer loop run twice)
@example(prog=[("assign", "b", ("mul_w", "a")), ("assign", "b", ("mul_w", "a")), ("while", "a", 0.5, 2, False, [
    ("while", "a", 0.5, 2, True, [("grad_of", "b", "b", "a", False)]),
    ("while", "a", 4.0, 3, True, [("assign", "a", ("tanh", "a")), ("assign", "a", ("tanh_prod", "b", "a"))])])],
    x0=np.array([-1.436, -1.247]), w0=np.array([0.0, 0.843]))
# d b / d a after a cond whose taken branch leaves a unchanged, b computed from a before it: an error
@example(prog=[("if", "a", 0.0, [("assign", "a", ("sin", "b"))], [("grad_of", "b", "a", "b", False)]),
               ("grad_of", "b", "b", "a", False)], x0=np.array([-1.5, 0.0]), w0=_W0)
def test_gradients_of_values_taken_anywhere_equal_pythons_or_name_the_carried_variable(prog, x0, w0):
    try:
        _graph_gradients(prog, x0, w0, pars=(2,))
    except GraphError as e:
        assert _named_refusal(e), str(e)
        return
    _check(prog, x0, w0)


@pytest.mark.parametrize("prog", [
    [("while", "a", 4.0, 3, False, [("grad_of", "a", "b", "a", False), ("assign", "b", ("sin", "a"))])],
    [("assign", "b", ("mul_w", "a")), ("while", "a", 4.0, 2, False, [("grad_of", "a", "b", "a", True)])],
    # nested loops: b and a enter the inner loop from the outer loop's variables, b computed from a
    # before the outer loop (its first iteration) and a changed by its later iterations
    [("assign", "b", ("mul_w", "a")),
     ("while", "a", 0.5, 2, False, [("while", "a", 0.5, 2, True, [("grad_of", "b", "b", "a", False)]),
                                    ("while", "a", 4.0, 3, True, [("assign", "a", ("tanh", "a")),
                                                                  ("assign", "a", ("tanh_prod", "b", "a"))])])],
])
def test_a_gradient_of_a_value_carried_from_an_earlier_iteration_is_an_error(prog):
    with pytest.raises(GraphError, match="reads 'b', a loop variable of the while loop at .*programs.py"):
        _graph_gradients(prog, _X0, _W0, pars=(2,))
