"""Untaken branches are skipped (exec/branches.py): none of their nodes runs, and every run gives
what running them dead node by node gives: values, effects in order, errors. Node counts are the
dataflow executor's; the tests of results run compiled code too."""
import collections
import contextlib
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import graph as G
from exec import Session, branches, executor
from exec import kernels as _kernels
from exec.errors import RunError
from exec.reference import run_reference
from graph import op_registry
from graph.control_flow.contexts import CondContext
from graph.op_registry import same_as_input
from tests.exec import programs as P

MODES = ("dataflow", "compiled")  # compiled code skips untaken branches too: it never enters them


@pytest.fixture
def counted(monkeypatch):
    """An op `Counted(x)` (or with no input) whose kernel counts its calls: calls["n"]."""
    calls = collections.Counter()

    def factory(node, rt):
        def run(*args):
            calls["n"] += 1
            return args[0] if args else np.float64(1.0)
        return run
    monkeypatch.setitem(op_registry._OPS, "Counted", op_registry.OpDef(
        "Counted", lambda inputs, attrs: same_as_input(inputs, attrs) if inputs else [(np.dtype(np.float64), ())],
        stateful=True))
    monkeypatch.setitem(_kernels.KERNELS, "Counted", factory)

    def op(*inputs):
        return G.get_default_graph().create_node("Counted", list(inputs)).outputs[0]
    op.calls = calls
    return op


def run_counting(sess, fetches, feeds=None, monkeypatch=None):
    """sess.run, and how many times each node ran (live or dead), by node."""
    ran = collections.Counter()

    class Recording(collections.deque):
        def popleft(self):
            item = super().popleft()
            ran[item[0]] += 1
            return item
    saved, executor._ready_queue = executor._ready_queue, Recording
    try:
        out = sess.run(fetches, feeds)
    finally:
        executor._ready_queue = saved
    plan = next(iter(sess._plans.values())) if len(sess._plans) == 1 else None
    assert plan is not None, "use a session with one plan"
    return out, collections.Counter({plan.nodes[i]: n for i, n in ran.items()})


@contextlib.contextmanager
def skipping(on: bool):
    saved, branches.SKIP_UNTAKEN = branches.SKIP_UNTAKEN, on
    try:
        yield
    finally:
        branches.SKIP_UNTAKEN = saved


def _in_branch(node, ctx) -> bool:
    c = node.context
    while c is not None:
        if c is ctx:
            return True
        c = c.outer
    return False


def _chain(x, k, op=None):
    for j in range(k):
        x = G.add(G.mul(x, 0.5), float(j % 3))
        if op is not None and j % 10 == 0:
            x = op(x)
    return x


def test_untaken_branch_nodes_never_run(counted):
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, [])
        x = G.placeholder(np.float64, [])
        y = G.cond(p, lambda: _chain(x, 100, counted), lambda: G.add(x, 1.0))
    true_ctx = next(n.context for n in g.nodes if isinstance(n.context, CondContext) and n.context.branch)
    branch = {n for n in g.nodes if _in_branch(n, true_ctx)}
    assert len(branch) > 200
    sess = Session(g, inter_op_threads=0, mode="dataflow")
    out, ran = run_counting(sess, y, {p: False, x: 2.0})
    assert out == 3.0 and counted.calls["n"] == 0
    assert not branch & set(ran), "a node of the untaken branch ran"
    assert sum(ran.values()) < 20  # O(values entering and leaving the branch), not O(its nodes)
    out, ran = run_counting(sess, y, {p: True, x: 2.0})
    want = 2.0
    for j in range(100):
        want = want * 0.5 + j % 3
    assert out == pytest.approx(want) and counted.calls["n"] == 10
    assert branch <= set(ran)


@pytest.mark.parametrize("mode", MODES)
def test_nodes_without_inputs_in_an_untaken_branch_never_run(counted, mode):
    """A node with no inputs in a branch (gated on the branch's pivot) or a loop in it."""
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, [])

        def taken():
            a = counted()

            def body(i, s):
                return G.add(i, 1), G.add(s, counted())
            return G.add(a, G.while_loop(lambda i, s: G.less(i, 3), body, (G.constant(0), G.constant(0.0)))[1])
        y = G.cond(p, taken, lambda: G.constant(-1.0))
    sess = Session(g, mode=mode)
    assert sess.run(y, {p: False}) == -1.0 and counted.calls["n"] == 0
    assert sess.run(y, {p: True}) == 4.0 and counted.calls["n"] == 4


@pytest.mark.parametrize("mode", MODES)
def test_fetching_a_value_of_an_untaken_branch_is_still_an_error(mode):
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, [])
        inner = []
        G.cond(p, lambda: inner.append(G.add(G.constant(1.0), 1.0)) or inner[0], lambda: G.constant(0.0))
    assert Session(g, mode=mode).run(inner[0], {p: True}) == 2.0
    with pytest.raises(RunError, match="dead"):
        Session(g, mode=mode).run(inner[0], {p: False})


def _alternating_loop(n, par, counted, with_effects):
    """for i in range(n): if i % 3 == 0: (inner loop, inner cond) else: ..., effects in both branches."""
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.int64(1), name="v")
        nn = G.placeholder(np.int64, [])

        def taken(i, s):
            if with_effects:
                v.assign(v.read() * 2 + i)
                G.print_("taken", i, v.read())

            def inner(j, t):
                t = G.cond(G.equal(G.mod(j, 2), 0), lambda: counted(G.add(t, j)), lambda: G.sub(t, 1))
                return G.add(j, 1), t
            _, t = G.while_loop(lambda j, t: G.less(j, G.mod(i, 4) + 1), inner, (G.constant(np.int64(0)), s),
                                parallel_iterations=par)
            return _chain(t, 20)

        def other(i, s):
            if with_effects:
                v.assign(v.read() - 1)
                G.print_("other", i)
            return G.add(s, G.cast(i, np.float64))

        def body(i, s):
            s = G.cond(G.equal(G.mod(i, 3), 0), lambda: taken(i, s), lambda: other(i, s))
            return G.add(i, 1), s
        _, s = G.while_loop(lambda i, s: G.less(i, nn), body, (G.constant(np.int64(0)), G.constant(0.0)),
                            parallel_iterations=par)
        final = v.read()
    return g, nn, s, final, v


def _alternating_python(n):
    v, s, lines, calls = 1, 0.0, [], 0
    for i in range(n):
        if i % 3 == 0:
            v = v * 2 + i
            lines.append(f"taken {i} {v}")
            t = s
            for j in range(i % 4 + 1):
                if j % 2 == 0:
                    t, calls = t + j, calls + 1
                else:
                    t -= 1
            for j in range(20):
                t = t * 0.5 + j % 3
            s = t
        else:
            v -= 1
            lines.append(f"other {i}")
            s += i
    return v, s, lines, calls


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("par", [1, 2, 32])
def test_branches_skipped_in_some_iterations_and_taken_in_others(par, counted, mode):
    n = 11
    want_v, want_s, want_lines, want_calls = _alternating_python(n)
    g, nn, s, final, v = _alternating_loop(n, par, counted, with_effects=True)
    out = io.StringIO()
    got_s, got_v = Session(g, out=out, mode=mode).run([s, final], {nn: n})
    assert got_v == want_v and got_s == pytest.approx(want_s)
    assert out.getvalue().split("\n")[:-1] == want_lines
    assert counted.calls["n"] == want_calls
    v.load(np.int64(1))
    ref_out = io.StringIO()
    with contextlib.redirect_stdout(ref_out):
        ref_s, ref_v = run_reference([s, final], {nn: n})
    assert ref_v == want_v and ref_s == pytest.approx(want_s)
    assert ref_out.getvalue().split("\n")[:-1] == want_lines


@pytest.mark.parametrize("par", [1, 2, 32])
def test_skipping_runs_fewer_nodes_and_gives_the_same_results(par, counted):
    results, ran = {}, {}
    for on in (False, True):
        with skipping(on):
            g, nn, s, final, _ = _alternating_loop(11, par, counted, with_effects=False)
            out, counts = run_counting(Session(g, inter_op_threads=0, mode="dataflow"), [s, final], {nn: 11})
        results[on], ran[on] = out, sum(counts.values())
    assert results[True] == results[False]
    assert ran[True] < 0.7 * ran[False]


def test_a_loop_constant_predicate_decides_as_each_iteration_starts(counted):
    """The predicate is bound into the Switches' pending inputs of every iteration (plan.bindable)."""
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, [])

        def body(i, s):
            return G.add(i, 1), G.cond(p, lambda: counted(_chain(s, 10)), lambda: G.add(s, 1.0))
        _, s = G.while_loop(lambda i, s: G.less(i, 5), body, (G.constant(0), G.constant(0.0)))
    sess = Session(g, inter_op_threads=0, mode="dataflow")
    out, ran = run_counting(sess, s, {p: False})
    assert out == 5.0 and counted.calls["n"] == 0
    assert max(ran.values()) <= 6  # every node at most once per iteration and once in the last, dead one
    assert not any(n.op == "Mul" for n in ran)
    assert sess.run(s, {p: True}) > 0 and counted.calls["n"] == 5


def test_a_dead_predicate_skips_both_branches(monkeypatch, counted):
    """An outer branch run dead (not skippable here) gives the inner cond a dead predicate."""
    monkeypatch.setattr(branches, "NEVER_SKIPPED_OPS", frozenset({"Sub"}))
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, [])
        x = G.placeholder(np.float64, [])

        def outer():
            q = G.less(G.sub(x, 1.0), 0.0)
            return G.cond(q, lambda: counted(_chain(x, 10)), lambda: counted(_chain(x, 12)))
        y = G.cond(p, outer, lambda: G.add(x, 1.0))
    sess = Session(g, inter_op_threads=0, mode="dataflow")
    out, ran = run_counting(sess, y, {p: False, x: 2.0})
    assert out == 3.0 and counted.calls["n"] == 0
    ran_ops = collections.Counter(n.op for n in ran)
    assert ran_ops["Sub"] == 1 and ran_ops["Mul"] == 0  # the outer branch ran dead, the inner ones not at all
    assert len(sess._plans) == 1 and len(next(iter(sess._plans.values())).branches) == 3


def test_a_branch_that_cannot_be_skipped_runs_dead_as_before(monkeypatch, counted):
    monkeypatch.setattr(branches, "NEVER_SKIPPED_OPS", frozenset({"Counted"}))
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, [])
        y = G.cond(p, lambda: counted(_chain(G.constant(1.0), 10)), lambda: G.add(G.constant(0.0), 1.0))
    sess = Session(g, inter_op_threads=0, mode="dataflow")
    out, ran = run_counting(sess, y, {p: False})
    assert out == 1.0 and counted.calls["n"] == 0
    assert collections.Counter(n.op for n in ran)["Mul"] == 10  # dead, node by node
    plan = next(iter(sess._plans.values()))
    assert len(plan.branches) == 1  # the false branch only


@pytest.mark.parametrize("mode", MODES)
def test_effects_before_and_after_a_skipped_branch_keep_their_order(mode):
    """An effect in a branch waits for the effect before the cond (an edge into the branch from
    outside); the effect after the cond waits for the branch's (an edge out of it)."""
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.int64(1), name="v")
        p = G.placeholder(np.bool_, [])
        v.assign(v.read() + 10)
        G.cond(p, lambda: G.group(v.assign(v.read() * 3), G.print_("in", v.read())), lambda: G.no_op())
        v.assign(v.read() - 1)
        final = v.read()
    for pv, want in ((False, 10), (True, 32)):
        v.load(np.int64(1))
        out = io.StringIO()
        assert Session(g, out=out, mode=mode).run(final, {p: pv}) == want
        assert out.getvalue() == ("in 33\n" if pv else "")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(P.programs, P.inputs)
def test_random_programs_same_with_and_without_skipping(program, values):
    got, ran = {}, {}
    for on in (False, True):
        with skipping(on):
            g, ph, fetches = P.build_graph(program, parallel_iterations=2)
            got[on], counts = run_counting(Session(g, inter_op_threads=0, mode="dataflow"), fetches, P.feed(ph, values))
        ran[on] = sum(counts.values())
    for k in got[False]:
        np.testing.assert_array_equal(got[True][k], got[False][k], err_msg=k)
    assert ran[True] <= ran[False]


def _gradient_graph(prog, order):
    import grad
    from tests.grad import programs as GP
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (2,), name="x")
        w = G.placeholder(np.float64, (2,), name="w")
        loss = GP.build_graph(prog, x, w, 2)
        gx, gw = grad.gradients(loss, [x, w])
        fetches = [loss, gx, gw]
        if order == 2:
            fetches += grad.gradients(G.reduce_sum(gw * G.constant(np.array([0.6, -0.8]))), [w])
    return g, x, w, fetches


def _gradient_programs():
    from hypothesis import strategies as st

    from tests.grad import programs as GP
    vec = st.tuples(st.floats(-1.5, 1.5), st.floats(-1.5, 1.5)).map(lambda t: np.round(np.array(t), 3))
    return st.tuples(st.one_of(GP.programs(depth=2), GP.programs(depth=3)), vec, vec, st.sampled_from([1, 2]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_gradient_programs())
def test_gradients_of_random_programs_same_with_and_without_skipping(case):
    """Gradient conds reuse the forward branches' values: branches of different predicates hold
    the same nodes, nested in loops (stacks) and conds, first and second order."""
    prog, x0, w0, order = case
    got, ran = {}, {}
    for on in (False, True):
        with skipping(on):
            g, x, w, fetches = _gradient_graph(prog, order)
            got[on], counts = run_counting(Session(g, inter_op_threads=0, mode="dataflow"), fetches, {x: x0, w: w0})
        ran[on] = sum(counts.values())
    for a, b in zip(got[True], got[False], strict=True):
        np.testing.assert_array_equal(a, b)
    assert ran[True] <= ran[False]
