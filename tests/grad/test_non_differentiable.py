"""An x that the ys depend on only through ops without a gradient (argmax, comparisons, integer casts):
a warning (or an error) that names the ops and their lines; zeros or None as `unconnected` says."""
import inspect
import warnings

import numpy as np
import pytest

import grad
import graph
from exec import Session
from grad import NonDifferentiableWarning
from graph.errors import GraphError

S = graph.reduce_sum


@pytest.fixture(autouse=True)
def fresh_graph():
    g = graph.Graph()
    with g.as_default():
        yield g


def _inputs():
    return graph.placeholder(np.float64, (3,), name="x"), graph.placeholder(np.float64, (3,), name="w")


def _gradient_and_warnings(y, xs, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gs = grad.gradients(y, xs, **options)
    return gs, [str(w.message) for w in caught if issubclass(w.category, NonDifferentiableWarning)]


CASES = {
    "argmax": (lambda x, w: w[graph.argmax(x)], "ArgMax"),
    "argmax cast to float": (lambda x, w: S(w * graph.cast(graph.argmax(x), np.float64)), "ArgMax"),
    "comparison as a mask": (lambda x, w: S(graph.cast(x > 0.0, np.float64) * w), "Greater"),
    "comparison in where": (lambda x, w: S(graph.where(x > 0.0, w, w * 2.0)), "Greater"),
    "cast to int": (lambda x, w: S(graph.cast(graph.cast(x, np.int64) * 2, np.float64) * w), "Cast"),
    "cond predicate": (lambda x, w: graph.cond(S(x) > 0.0, lambda: w * 2.0, lambda: w), "Greater"),
    "loop condition": (lambda x, w: graph.while_loop(lambda i, h: S(h) < S(x), lambda i, h: (i + 1, h * 2.0),
                                                     (graph.constant(0), w + 1.0))[1], "Less"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_path_only_through_ops_without_a_gradient_warns_naming_the_op_and_line(case):
    build, op = CASES[case]
    x, w = _inputs()
    y = build(x, w)
    (gx,), messages = _gradient_and_warnings(y, [x])
    assert len(messages) == 1
    assert "the ys depend on input 'x' only through ops that have no gradient" in messages[0]
    assert f"{op} (node " in messages[0] and f"built at {__file__}:" in messages[0]
    assert "its gradient is zero" in messages[0]
    got = Session(graph.get_default_graph()).run(gx, {x: np.array([0.5, -1.0, 2.0]), w: np.ones(3)})
    np.testing.assert_array_equal(got, np.zeros(3))


def test_the_warning_points_at_the_gradients_call():
    x, w = _inputs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        grad.gradients(w[graph.argmax(x)], [x])
    assert caught[0].filename == __file__ and caught[0].lineno == line


def test_unconnected_none_gives_none_and_the_warning_says_so():
    x, w = _inputs()
    (gx,), messages = _gradient_and_warnings(w[graph.argmax(x)], [x], unconnected="none")
    assert gx is None and "its gradient is None" in messages[0]


def test_non_differentiable_error_raises_and_ignore_is_silent():
    x, w = _inputs()
    with pytest.raises(GraphError, match="only through ops that have no gradient: ArgMax .*would be zero"):
        grad.gradients(w[graph.argmax(x)], [x], non_differentiable="error")
    (gx,), messages = _gradient_and_warnings(w[graph.argmax(x)], [x], non_differentiable="ignore")
    assert messages == [] and gx is not None
    with pytest.raises(ValueError, match="non_differentiable must be one of 'warn', 'error', 'ignore'"):
        grad.gradients(w, [x], non_differentiable="raise")


def test_a_variable_read_only_through_argmax_is_named():
    x, _ = _inputs()
    V = graph.Variable(np.array([0.1, 0.7, 0.2]), name="non_differentiable_V")
    (gv,), messages = _gradient_and_warnings(x[graph.argmax(V.read())], [V])
    assert "the ys depend on Variable 'non_differentiable_V' only through" in messages[0]


QUIET = {
    "a differentiable path too": lambda x, w: S(graph.where(x > 0.0, x, w)),
    "stop_gradient": lambda x, w: S(graph.stop_gradient(x) * w),
    "shape only": lambda x, w: S(graph.zeros_like(x) + w),
    "no dependence": lambda x, w: S(w * 2.0),
    "passed through a cond that a comparison of x controls":
        lambda x, w: graph.cond(S(x) > 0.0, lambda: (w, x * 2.0), lambda: (w, x))[0],
}


@pytest.mark.parametrize("case", list(QUIET))
def test_no_warning_where_no_dependence_is_cut(case):
    x, w = _inputs()
    (gx,), messages = _gradient_and_warnings(QUIET[case](x, w), [x])
    assert messages == []


def test_a_value_passed_through_a_loop_does_not_depend_on_its_condition():
    x, w = _inputs()
    _, a, b = graph.while_loop(lambda i, a, b: S(a) < S(x), lambda i, a, b: (i + 1, a * 2.0, b),
                               (graph.constant(0), w + 1.0, w * 3.0))
    (gx,), messages = _gradient_and_warnings(S(b), [x])
    assert messages == []
    (gx,), messages = _gradient_and_warnings(S(a), [x])
    assert len(messages) == 1 and "Less" in messages[0]


def test_integer_xs_get_none_without_a_warning():
    n = graph.placeholder(np.int64, (), name="n")
    w = graph.placeholder(np.float64, (), name="w")
    (gn,), messages = _gradient_and_warnings(w * graph.cast(n, np.float64), [n])
    assert gn is None and messages == []


_INT_YS = {
    "loop counter": lambda x, w: graph.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * w),
                                                  (graph.constant(0), x)),
    "argmax beside its source": lambda x, w: (graph.argmax(x * w), S(x * w)),
    "a bool and an int8": lambda x, w: (x > w, graph.cast(x, np.int8), S(w * x * x)),
}


@pytest.mark.parametrize("case", sorted(_INT_YS))
def test_integer_and_bool_ys_contribute_nothing(case):
    """As in TensorFlow: the gradient of ys holding integers is that of their floating-point ys alone."""
    x, w = _inputs()
    ys = _INT_YS[case](x, w)
    floats = [y for y in ys if y.dtype.kind == "f"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = grad.gradients(list(ys), [x, w])
        want = grad.gradients(floats, [x, w])
    feeds = {x: np.array([0.5, -1.0, 2.0]), w: np.array([1.5, 0.25, -0.5])}
    for a, b in zip(Session(graph.get_default_graph()).run(got, feeds), Session(graph.get_default_graph()).run(
            want, feeds), strict=True):
        np.testing.assert_array_equal(a, b)


def test_integer_ys_alone_give_no_gradient():
    x, w = _inputs()
    i, _ = _INT_YS["loop counter"](x, w)
    assert grad.gradients(i, [x, w], unconnected="none") == [None, None]
    gs, messages = _gradient_and_warnings(graph.cast(S(x), np.int64), [x], unconnected="none")
    assert gs == [None] and len(messages) == 1 and "Cast" in messages[0]
