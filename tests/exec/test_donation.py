"""Buffer donation: which kernels compute into an input, and that no value anyone reads is overwritten."""
import numpy as np

import grad
import graph as G
from exec import Session


def _plan(sess):
    return next(iter(sess._plans.values()))


def _donated_ops(sess) -> dict:
    plan = _plan(sess)
    return {plan.nodes[i].name: j for i, j in plan.donated.items()}


def test_a_temporary_read_once_is_computed_into():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [3])
        y = G.add(G.mul(x, 2.0, name="twice"), 1.0, name="plus")  # `twice` is read by `plus` alone
        z = G.tanh(y, name="tanh")
    sess = Session(g)
    xv = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(sess.run(z, {x: xv}), np.tanh(xv * 2 + 1))
    assert _donated_ops(sess) == {"plus": 0, "tanh": 0}
    assert (xv == [1.0, 2.0, 3.0]).all()  # the fed value is never a donor


def test_values_read_twice_fetched_or_constant_are_not_donated():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [3])
        c = G.constant(np.array([1.0, 2.0, 3.0]))
        a = G.mul(x, 2.0, name="a")
        b = G.add(a, c, name="b")        # a is also fetched: not donated; c is a constant
        d = G.add(b, b, name="d")        # b is read twice (both operands)
        e = G.exp(x, name="e")
        f = G.sub(e, 1.0, name="f")
        h = G.add(e, f, name="h")        # e has two readers
    sess = Session(g)
    xv = np.array([0.5, 1.0, 1.5])
    got = sess.run([a, d, h], {x: xv})
    np.testing.assert_allclose(got[0], xv * 2)
    np.testing.assert_allclose(got[1], 2 * (xv * 2 + [1, 2, 3]))
    np.testing.assert_allclose(got[2], 2 * np.exp(xv) - 1)
    donated = _donated_ops(sess)
    assert "b" not in donated and "d" not in donated and "f" not in donated
    assert donated.get("h") == 1                          # f is read by h alone
    np.testing.assert_array_equal(sess.run(c), [1.0, 2.0, 3.0])


def test_broadcast_and_type_changes_are_not_donated():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float32, [1, 3])
        y = G.add(G.exp(x), np.ones((2, 3), np.float32), name="wider")   # exp(x) is smaller than the result
        z = G.add(G.exp(x), np.float64(1.0), name="promoted")           # float32 + float64 -> float64
    sess = Session(g)
    sess.run([y, z], {x: np.zeros((1, 3), np.float32)})
    assert "wider" not in _donated_ops(sess) and "promoted" not in _donated_ops(sess)


def test_loop_accumulator_is_updated_in_place_and_stays_correct():
    rng = np.random.default_rng(0)
    xs, w0 = rng.normal(size=(6, 4, 3)), rng.normal(size=(3, 5))
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, xs.shape)
        w = G.placeholder(np.float64, w0.shape)

        def body(i, acc):
            return i + 1, G.add(acc, G.tanh(G.matmul(x[i], w)))
        _, total = G.while_loop(lambda i, acc: i < 6, body, (G.constant(0), G.zeros([4, 5], np.float64)))
        loss = G.reduce_sum(total * total)
        (gw,) = grad.gradients(loss, [w])
    sess = Session(g)
    got_total, got_gw = sess.run([total, gw], {x: xs, w: w0})
    want = sum(np.tanh(xs[i] @ w0) for i in range(6))
    np.testing.assert_allclose(got_total, want)
    # d loss / dw = sum_i x_i^T ((1 - tanh^2) * 2 total)
    want_gw = sum(xs[i].T @ ((1 - np.tanh(xs[i] @ w0) ** 2) * 2 * want) for i in range(6))
    np.testing.assert_allclose(got_gw, want_gw)
    assert any(n.startswith("while/") for n in _donated_ops(sess))
    # a second run with the same plan gives the same result (nothing carried over between runs)
    np.testing.assert_allclose(sess.run(gw, {x: xs, w: w0}), want_gw)


def test_variables_are_never_written_through_a_read():
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.array([1.0, 2.0]), name="donation_v")
        y = G.exp(v.read(), name="e")
        z = G.add(y, 1.0, name="z")
    sess = Session(g)
    np.testing.assert_allclose(sess.run(z), np.exp([1.0, 2.0]) + 1)
    np.testing.assert_array_equal(v.value, [1.0, 2.0])
    assert "e" not in _donated_ops(sess) and _donated_ops(sess).get("z") == 0
