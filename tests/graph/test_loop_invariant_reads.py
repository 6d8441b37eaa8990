"""A Variable that a loop reads but never assigns is read once, before the loop; one that the loop
assigns (anywhere inside it, conds and nested loops included) is read in every iteration, in
program order with the assignments."""
import numpy as np

import grad
import graph as G
import transpile
from exec import Session


def _reads(g):
    return [n for n in g.nodes if n.op == "ReadVariable"]


def _in_loop(n):
    return n.frame is not None


def test_read_of_a_variable_the_loop_never_assigns_is_hoisted():
    g = G.Graph()
    with g.as_default():
        w = G.Variable(np.float64(2.0), name="w")
        _, s = G.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + w * 1.0),
                            (G.constant(np.int64(0)), G.constant(0.0)))
    reads = _reads(g)
    assert len(reads) == 1 and not _in_loop(reads[0])
    loop = next(n for n in g.nodes if n.op == "Enter").context
    assert not loop.has_effects  # so its iterations are not ordered by identities after the read
    assert not any(n.name.rsplit("/", 1)[-1].startswith("after_effects") for n in g.nodes)
    assert Session(g).run(s) == 6.0


def test_hoisted_read_follows_assignments_before_the_loop_and_precedes_those_after():
    g = G.Graph()
    with g.as_default():
        w = G.Variable(np.float64(1.0), name="w")
        first = w.assign(5.0)
        _, s = G.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + w.read()),
                            (G.constant(np.int64(0)), G.constant(0.0)))
        after = w.assign(100.0)
    sess = Session(g)
    assert sess.run([s, after, first]) == [15.0, 100.0, 5.0]
    assert sess.run(s) == 15.0  # the read waits for the assignment before it, which runs again


def test_reads_of_an_assigned_variable_stay_in_the_loop_in_program_order():
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.float64(0.0), name="v")

        def body(i, before, after):
            b = v.read()          # the previous iteration's value
            v.assign_add(1.0)
            return i + 1, before + b, after + v.read()  # this iteration's
        _, before, after = G.while_loop(lambda i, *_: i < 4, body,
                                        (G.constant(np.int64(0)), G.constant(0.0), G.constant(0.0)))
    assert all(_in_loop(r) for r in _reads(g))
    assert Session(g).run([before, after]) == [0 + 1 + 2 + 3, 1 + 2 + 3 + 4]


def test_an_assignment_in_a_cond_in_a_nested_loop_keeps_the_outer_loops_reads_inside():
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.float64(1.0), name="v")

        def inner(j):
            G.cond(G.equal(j, 1), lambda: v.assign(v.read() * 2.0).node, lambda: None)
            return j + 1

        def outer(i, s):
            s = s + v.read()
            G.while_loop(lambda j: j < 2, inner, (G.constant(np.int64(0)),))
            return i + 1, s
        _, s = G.while_loop(lambda i, s: i < 3, outer, (G.constant(np.int64(0)), G.constant(0.0)))
    assert all(_in_loop(r) for r in _reads(g))
    assert Session(g).run(s) == 1.0 + 2.0 + 4.0


def test_a_variable_the_outer_loop_assigns_is_read_once_per_outer_iteration_by_the_inner_loop():
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.float64(1.0), name="v")

        def outer(i, s):
            _, t = G.while_loop(lambda j, t: j < 3, lambda j, t: (j + 1, t + v.read()),
                                (G.constant(np.int64(0)), G.constant(0.0)))
            v.assign_add(1.0)
            return i + 1, s + t
        _, s = G.while_loop(lambda i, s: i < 2, outer, (G.constant(np.int64(0)), G.constant(0.0)))
    (r,) = _reads(g)
    assert r.context is not None and r.context.outer is None  # in the outer loop's body
    assert Session(g).run(s) == 3 * 1.0 + 3 * 2.0


def test_reads_in_conds_and_nested_loops_of_a_loop_that_never_assigns_move_before_it():
    g = G.Graph()
    with g.as_default():
        w = G.Variable(np.float64(3.0), name="w")

        def outer(i, s):
            s = G.cond(G.equal(G.mod(i, 2), 0), lambda: s + w.read(), lambda: s - w.read())
            _, s = G.while_loop(lambda j, s: j < 2, lambda j, s: (j + 1, s + w.read()), (G.constant(np.int64(0)), s))
            return i + 1, s
        _, s = G.while_loop(lambda i, s: i < 3, outer, (G.constant(np.int64(0)), G.constant(0.0)))
    assert len(_reads(g)) == 1 and not _in_loop(_reads(g)[0])
    assert Session(g).run(s) == 3.0 * (1 - 1 + 1) + 3.0 * 2 * 3


def test_gradient_through_a_hoisted_read_equals_the_unrolled_one():
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(3, 3)) / 3

    def build(loop):
        g = G.Graph()
        with g.as_default():
            w = G.Variable(w0, name="w")
            h0 = G.constant(rng.normal(size=(2, 3)))
            if loop:
                _, h = G.while_loop(lambda i, h: i < 4, lambda i, h: (i + 1, G.tanh(h @ w)),
                                    (G.constant(np.int64(0)), h0))
            else:
                h = h0
                for _ in range(4):
                    h = G.tanh(h @ w)
            loss = G.reduce_sum(h * h)
            (gw,) = grad.gradients(loss, [w])
            (hvp,) = grad.gradients(G.reduce_sum(gw * gw), [w])  # second order through the loop
        return Session(g).run([gw, hvp])

    rng = np.random.default_rng(1)
    looped = build(True)
    rng = np.random.default_rng(1)
    unrolled = build(False)
    for a, b in zip(looped, unrolled):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_transpiled_loop_reads_its_weights_once_and_updates_another_variable():
    w = G.Variable(np.float32(2.0), name="w_t")
    total = G.Variable(np.float32(0.0), name="total_t")

    @transpile.function
    def f(n):
        for _ in range(n):
            total.assign(total + w)  # reads total: that read stays in the loop
        w.assign(w + 1.0)
        return total.read()

    assert float(f(np.int64(3))) == 6.0
    assert float(f(np.int64(2))) == 6.0 + 6.0
    g = f.get_graph(np.int64(3))
    reads_of_w = [n for n in _reads(g) if n.attrs["variable"] is w]
    assert reads_of_w and not any(_in_loop(n) for n in reads_of_w)
    assert any(_in_loop(n) for n in _reads(g) if n.attrs["variable"] is total)
