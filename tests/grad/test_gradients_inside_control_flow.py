"""`gradients` called inside a cond branch or a loop body: the Python meaning, or an error that says
what to write instead (never a silent zero)."""
import numpy as np
import pytest

import grad
import graph
import transpile
from exec import Session
from graph.errors import GraphError

S = graph.reduce_sum


@pytest.fixture(autouse=True)
def fresh_graph():
    g = graph.Graph()
    with g.as_default():
        yield g


def run(fetches, feeds=None):
    return Session(graph.get_default_graph()).run(fetches, feeds)


def _sq(w):
    return S(w * w * 1.5 + graph.sin(w))


def _dsq(w):
    return 3.0 * w + np.cos(w)


# --------------------------------------------------------------------------- values computed around the call

@pytest.mark.parametrize("w0", [2.0, -1.0])
def test_gradient_in_a_branch_of_a_value_computed_before_the_cond(w0):
    w = graph.placeholder(np.float64, (), name="w")
    loss = w * w * 3.0
    g = graph.cond(w > 0.0, lambda: grad.gradients(loss, [w])[0], lambda: w * 0.0)
    assert run(g, {w: w0}) == (6.0 * w0 if w0 > 0 else 0.0)


def test_gradient_in_a_branch_through_a_cond_and_a_loop_before_it():
    w = graph.placeholder(np.float64, (2,), name="w")
    h = graph.cond(S(w) > 0.0, lambda: graph.tanh(w * 2.0), lambda: w * w)
    _, h = graph.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, graph.sin(h) * w), (graph.constant(0), h))
    loss = S(h * h)
    (g_inside,) = graph.cond(S(w) > -10.0, lambda: grad.gradients(loss, [w]), lambda: [w * 0.0])
    (g_outside,) = grad.gradients(loss, [w])
    for w0 in ([0.3, 0.4], [-0.3, -0.2]):
        a, b = run([g_inside, g_outside], {w: np.array(w0)})
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("w0", [2.0, -1.0])
def test_a_gradient_taken_in_a_branch_can_be_differentiated_again(w0):
    # the rule of w * w reads the branch's capture of w; it must not capture it a second time
    w = graph.placeholder(np.float64, (), name="w")
    y = graph.cond(w > 0.0, lambda: grad.gradients(w * w * w, [w])[0], lambda: w * 2.0)
    (gy,) = grad.gradients(y, [w])
    assert run([y, gy], {w: w0}) == ([3 * w0 * w0, 6 * w0] if w0 > 0 else [2 * w0, 2.0])


@pytest.mark.parametrize("par", [1, 32])
def test_gradient_in_a_branch_inside_a_loop_body_of_a_value_the_body_computed(par):
    w0 = graph.placeholder(np.float64, (2,), name="w0")

    def body(i, w):
        h = graph.tanh(w * 2.0)
        g = graph.cond(i % 2 == 0, lambda: grad.gradients(S(h * h), [w])[0], lambda: w * 0.0)
        return i + 1, w - 0.1 * g
    _, w = graph.while_loop(lambda i, w: i < 4, body, (graph.constant(0), w0), parallel_iterations=par)
    got = run(w, {w0: np.array([0.3, -0.6])})
    want = np.array([0.3, -0.6])
    for i in range(4):
        if i % 2 == 0:
            h = np.tanh(want * 2.0)
            want = want - 0.1 * 2 * h * (1 - h * h) * 2.0
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("par", [1, 32])
def test_gradient_descent_inside_a_loop_on_a_loss_computed_in_the_iteration(par):
    w0 = graph.placeholder(np.float64, (2,), name="w0")

    def body(i, w):
        (g,) = grad.gradients(_sq(w), [w])
        return i + 1, w - 0.1 * g
    _, w = graph.while_loop(lambda i, w: i < 5, body, (graph.constant(0), w0), parallel_iterations=par)
    want = np.array([1.0, -2.0])
    for _ in range(5):
        want = want - 0.1 * _dsq(want)
    np.testing.assert_allclose(run(w, {w0: np.array([1.0, -2.0])}), want, rtol=1e-12)


def test_gradient_in_a_nested_loop_body_with_respect_to_an_outer_loop_variable():
    w0 = graph.placeholder(np.float64, (), name="w0")

    def outer(i, w, acc):
        h = w * 3.0   # computed in the outer body, read by the inner one as a constant

        def inner(j, a):
            (g,) = grad.gradients(graph.sin(h) * 2.0, [w])
            return j + 1, a + g
        _, acc = graph.while_loop(lambda j, a: j < 2, inner, (graph.constant(0), acc))
        return i + 1, w * 0.5, acc
    _, _, acc = graph.while_loop(lambda i, w, a: i < 3, outer, (graph.constant(0), w0, graph.constant(0.0, np.float64)))
    want = sum(2 * 2.0 * np.cos(3.0 * w) * 3.0 for w in (0.7, 0.35, 0.175))
    assert run(acc, {w0: 0.7}) == pytest.approx(want, rel=1e-12)


# --------------------------------------------------------------------------- values carried from earlier iterations

def test_gradient_of_a_loss_carried_from_the_previous_iteration_names_it_and_the_loop():
    w0 = graph.placeholder(np.float64, (2,), name="w0")

    def body(i, w, loss):
        (g,) = grad.gradients(loss, [w])
        w = w - 0.1 * g
        return i + 1, w, _sq(w)
    with pytest.raises(GraphError) as info:
        graph.while_loop(lambda i, w, loss: i < 3, body, (graph.constant(0), w0, _sq(w0)),
                         names=("i", "w", "loss"))
    message = str(info.value)
    assert "reads 'loss', a loop variable of the while loop at" in message and "test_gradients_inside" in message
    assert "'w'" in message and "`loss = f(w)`, then `gradients(loss, w)`" in message


def test_an_rnn_state_that_a_weight_fed_in_earlier_iterations_is_an_error():
    W = graph.placeholder(np.float64, (), name="W")

    def body(i, h, acc):
        h = h * W
        (g,) = grad.gradients(h, [W])   # dh/dW needs every earlier iteration
        return i + 1, h, acc + g
    with pytest.raises(GraphError, match="reads 'h', a loop variable of the while loop at .* depends on input 'W' through an earlier"):
        graph.while_loop(lambda i, h, a: i < 3, body, (graph.constant(0), W * 0.0 + 1.0, W * 0.0),
                         names=("i", "h", "acc"))


def test_a_carried_value_that_depends_on_x_only_from_the_second_iteration_on_is_found_when_the_loop_is_done():
    w0 = graph.placeholder(np.float64, (2,), name="w0")

    def body(i, w, loss):
        (g,) = grad.gradients(loss + S(w) * 0.0, [w])   # loss starts as a constant
        w = w - 0.1 * g
        return i + 1, w, _sq(w)
    with pytest.raises(GraphError, match="reads 'loss'") as info:
        graph.while_loop(lambda i, w, loss: i < 3, body, (graph.constant(0), w0, graph.constant(0.0, np.float64)),
                         names=("i", "w", "loss"))
    assert info.value.location.lineno == body.__code__.co_firstlineno + 1   # the gradients() line


def test_a_carried_value_the_x_did_not_shape_is_not_an_error():
    # `h` is carried, but no value of `w` ever reached it: the iteration's gradient is the whole gradient
    w0 = graph.placeholder(np.float64, (), name="w0")

    def body(i, w, h):
        (g,) = grad.gradients(graph.sin(w) * h, [w])
        return i + 1, w - 0.1 * g, h * 0.5 + 1.0
    _, w, _ = graph.while_loop(lambda i, w, h: i < 3, body, (graph.constant(0), w0, graph.constant(2.0, np.float64)))
    want, h = 0.4, 2.0
    for _ in range(3):
        want, h = want - 0.1 * np.cos(want) * h, h * 0.5 + 1.0
    assert run(w, {w0: 0.4}) == pytest.approx(want, rel=1e-12)


def test_a_value_computed_from_an_older_value_of_the_x_is_not_an_error():
    # b is computed from w before w changes: this iteration's w never reached b's carried value
    w0 = graph.placeholder(np.float64, (), name="w0")

    def body(i, w, b):
        (g,) = grad.gradients(w * w + b * 0.0 * w, [w])
        b = graph.sin(w)
        return i + 1, w - 0.1 * g, b
    _, w, _ = graph.while_loop(lambda i, w, b: i < 3, body, (graph.constant(0), w0, graph.constant(0.0, np.float64)))
    assert run(w, {w0: 1.0}) == pytest.approx(0.8 ** 3, rel=1e-12)


def test_a_variable_carried_loss_is_an_error_and_a_loss_computed_in_the_iteration_trains():
    W = graph.Variable(np.array([1.0, -2.0]), name="inside_loops_W")
    opt = grad.SGD(0.1)

    def loss_of():
        return _sq(W.read())

    def carried(i, loss):
        opt.apply(grad.gradients(loss, [W]), [W])
        return i + 1, loss_of()
    with pytest.raises(GraphError, match="reads 'loss'.*Variable 'inside_loops_W'"):
        graph.while_loop(lambda i, loss: i < 3, carried, (graph.constant(0), loss_of()), names=("i", "loss"))

    def fresh(i):
        opt.apply(grad.gradients(loss_of(), [W]), [W])
        return i + 1
    step = graph.while_loop(lambda i: i < 5, fresh, (graph.constant(0),))
    run(step)
    want = np.array([1.0, -2.0])
    for _ in range(5):
        want = want - 0.1 * _dsq(want)
    np.testing.assert_allclose(W.value, want, rtol=1e-12)


def test_a_cond_before_an_enclosing_loop_is_refused_with_a_clear_error():
    # its gradient would be built in every iteration, from what the cond saved once
    w = graph.placeholder(np.float64, (), name="w")
    h = graph.cond(w > 0.0, lambda: w * 2.0, lambda: w * 3.0)

    def body(i, a):
        (g,) = grad.gradients(h * 2.0, [w])
        return i + 1, a + g
    with pytest.raises(GraphError, match="called inside the while loop at .* it would differentiate the cond at"):
        graph.while_loop(lambda i, a: i < 2, body, (graph.constant(0), graph.constant(0.0, np.float64)))


def test_a_carried_value_that_started_as_a_function_of_an_outer_x_is_an_error():
    w = graph.placeholder(np.float64, (), name="w")

    def body(i, a):
        (g,) = grad.gradients(a * 2.0, [w])
        return i + 1, a + g
    with pytest.raises(GraphError, match="reads 'a', a loop variable of the while loop at .* depends on input 'w' through"):
        graph.while_loop(lambda i, a: i < 2, body, (graph.constant(0), w * 3.0), names=("i", "a"))


# --------------------------------------------------------------------------- through transpile

class _Model:
    def __init__(self, name):
        self.W = graph.Variable(np.array([1.0, -2.0]), name=name)
        self.opt = grad.SGD(0.1)
        self.params = [self.W]

    def loss(self, x):
        return np.sum((self.W * x - 1.0) ** 2)

    @transpile.function
    def train_carried(self, x, n):
        loss = self.loss(x)
        i = 0
        while i < n:
            self.opt.apply(grad.gradients(loss, self.params), self.params)
            loss = self.loss(x)
            i += 1
        return loss

    @transpile.function
    def train(self, x, n):
        i = 0
        loss = 0.0
        while i < n:
            loss = self.loss(x)
            self.opt.apply(grad.gradients(loss, self.params), self.params)
            i += 1
        return loss


def test_transpiled_training_loop_with_a_carried_loss_names_loss_and_the_while_line():
    model = _Model("inside_loops_transpiled_carried")
    with pytest.raises(GraphError) as info:
        model.train_carried(np.array([0.5, 2.0]), 5)
    lines = open(__file__).read().splitlines()
    start = lines.index("    def train_carried(self, x, n):")
    while_line = start + 1 + lines[start:].index("        while i < n:")
    gradients_line = while_line + 1
    message = str(info.value)
    assert f"test_gradients_inside_control_flow.py:{gradients_line}: gradients: the value being differentiated " \
           f"reads 'loss', a loop variable of the while loop at {__file__}:{while_line}" in message
    assert "Variable 'inside_loops_transpiled_carried'" in message


def test_transpiled_training_loop_with_the_loss_computed_in_the_iteration_trains():
    model = _Model("inside_loops_transpiled")
    x = np.array([0.5, 2.0])
    model.train(x, 50)
    want = np.array([1.0, -2.0])
    for _ in range(50):
        want = want - 0.1 * 2.0 * (want * x - 1.0) * x
    np.testing.assert_allclose(model.W.value, want, rtol=1e-12)


# --------------------------------------------------------------------------- outputs of conds and loops

def test_an_output_a_branch_may_leave_unchanged_of_a_value_computed_before_the_cond_is_an_error():
    # in Python, when the false branch runs, w after the `if` is the w that loss was computed from
    w0 = graph.placeholder(np.float64, (), name="w0")
    loss = graph.sin(w0)
    w = graph.cond(w0 > 0.0, lambda: w0 * 2.0, lambda: w0)
    with pytest.raises(GraphError, match="one of the xs, .*, is an output of the cond at .*when the branch taken "
                                         "leaves it unchanged it is, in the Python program, the value it had"):
        grad.gradients(loss, [w])


def test_an_output_computed_in_a_branch_that_another_output_is_computed_from_is_an_error():
    w0 = graph.placeholder(np.float64, (), name="w0")
    def taken():
        a = w0 * 2.0
        return a, graph.sin(a)   # in Python, b is computed from a's value
    a, b = graph.cond(w0 > 0.0, taken, lambda: (w0 * 3.0, w0 * 0.5))
    with pytest.raises(GraphError, match="reads another output of the cond, which the cond computes from this"):
        grad.gradients(b, [a])


def test_a_loop_output_of_a_value_computed_from_its_initial_value_is_an_error():
    w0 = graph.placeholder(np.float64, (), name="w0")
    loss = graph.sin(w0)
    _, w = graph.while_loop(lambda i, w: i < 3, lambda i, w: (i + 1, w * 0.5), (graph.constant(0), w0))
    with pytest.raises(GraphError, match="when the loop leaves it unchanged \\(or runs no iteration\\)"):
        grad.gradients(loss + w, [w])


def test_outputs_of_conds_and_loops_differentiated_as_computed_after_them_are_exact():
    w0 = graph.placeholder(np.float64, (), name="w0")
    w = graph.cond(w0 > 0.0, lambda: w0 * 2.0, lambda: w0)
    _, v = graph.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 0.5), (graph.constant(0), w))
    (gw,) = grad.gradients(graph.sin(w) * 2.0 + v * 3.0, [w])
    (gv,) = grad.gradients(v * v, [v])
    got = run([gw, gv], {w0: 0.7})
    assert got[0] == pytest.approx(2.0 * np.cos(1.4) + 3.0 / 8) and got[1] == pytest.approx(2 * 1.4 / 8)
    # the other outputs of a cond that do not read this one's value in the branch are not siblings
    a, b = graph.cond(w0 > 0.0, lambda: (w0 * 2.0, graph.sin(w0)), lambda: (w0 * 3.0, w0 * 0.5))
    (ga,) = grad.gradients(b * a, [a])
    assert run(ga, {w0: 0.7}) == pytest.approx(np.sin(0.7))


def test_a_loop_variable_a_cond_in_the_body_may_leave_unchanged_is_not_taken_for_a_new_value():
    # when the branch is not taken, w's next value is this iteration's w, which `loss` is computed from
    w0 = graph.placeholder(np.float64, (), name="w0")

    def body(i, w, loss):
        (g,) = grad.gradients(loss + w * 0.0, [w])
        new_loss = graph.sin(w)
        w = graph.cond(i % 2 == 0, lambda: w - 0.1 * g, lambda: w)
        return i + 1, w, new_loss
    with pytest.raises(GraphError, match="reads 'loss', a loop variable"):
        graph.while_loop(lambda i, w, loss: i < 3, body, (graph.constant(0), w0, graph.constant(0.0, np.float64)),
                         names=("i", "w", "loss"))
