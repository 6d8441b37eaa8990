"""Compiled execution (exec/compiled/): the same results, effects, errors and memory accounting as the
dataflow executor; plans it cannot structure fall back to the executor. The random-program property
tests (tests/exec/test_programs.py, tests/grad/test_random_programs.py, test_branch_skipping.py,
tests/transpile/test_random_programs.py) run compiled code too."""
import contextlib
import io
import linecache
import operator
import traceback

import numpy as np
import pytest

import grad
import graph as G
from exec import RunError, Session, blas, layout, load
from exec.compiled import Unstructured, compile_program, prefers_dataflow, threads
from exec.memory import memory_manager
from exec.reference import run_reference
from exec.runtime import Runtime

MODES = ("dataflow", "compiled")


def _both(g, fetches, feeds=None, **kwargs):
    """The results of both modes, checked equal; the compiled session must really run compiled code."""
    compiled = Session(g, mode="compiled", **kwargs)
    compiled.compiled_source(fetches, feeds)
    want = Session(g, mode="dataflow", **kwargs).run(fetches, feeds)
    got = compiled.run(fetches, feeds)
    for a, b in zip(G.nest.flatten(got), G.nest.flatten(want), strict=True):
        np.testing.assert_array_equal(a, b)
    return got


def _collatz():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.int64, [], name="x")

        def body(i, v):
            return G.add(i, 1), G.cond(G.equal(G.mod(v, 2), 0), lambda: G.floordiv(v, 2),
                                       lambda: G.add(G.mul(v, 3), 1))
        steps, _ = G.while_loop(lambda i, v: G.greater(v, 1), body, (G.constant(np.int64(0)), x), names=["i", "v"])
    return g, x, steps


def test_a_loop_with_a_cond_becomes_while_and_if():
    g, x, steps = _collatz()
    sess = Session(g, mode="compiled")
    assert sess.run(steps, {x: 27}) == 111
    source = sess.compiled_source(steps, {x: 0})
    assert "while True:" in source and "if not " in source and "break" in source and "else:" in source
    assert "Merge" not in source and "Switch" not in source and "Enter" not in source


def test_generated_source_shows_in_tracebacks():
    g = G.Graph()
    with g.as_default():
        a = G.placeholder(np.int64, [], name="a")
        y = G.floordiv(G.constant(np.int64(1)), G.sub(a, a))
    program = compile_program([y], [], [a], Runtime())
    assert linecache.getline(program.filename, 1).startswith("def program(a)")
    with np.errstate(divide="raise"), pytest.raises(RunError) as info:
        program([np.int64(3)])
    shown = "".join(traceback.format_exception(info.value.__cause__))
    assert program.filename in shown and "floordiv = " in shown  # the generated line, as text


def _failing_programs():
    """(name, builder) of programs whose runs fail inside kernels, in loops and branches."""
    def nested_assert():
        def inner(j, t, i):
            G.assert_(G.logical_not(G.logical_and(G.equal(i, 2), G.equal(j, 3))), "boom at i=2, j=3")
            return G.add(j, 1), G.add(t, j)

        def outer(i, t):
            _, t = G.while_loop(lambda j, t: G.less(j, 5), lambda j, t: inner(j, t, i), (G.constant(0), t))
            return G.add(i, 1), t
        return G.while_loop(lambda i, t: G.less(i, 4), outer, (G.constant(0), G.constant(0)))[1]

    def read_past_the_end():
        return G.TensorArray(np.float64, size=2).read(5)

    def in_a_branch_in_a_loop():
        def body(i, s):
            s = G.cond(G.equal(i, 3), lambda: G.TensorArray(np.float64, size=1).read(i), lambda: G.add(s, 1.0))
            return G.add(i, 1), s
        return G.while_loop(lambda i, s: G.less(i, 6), body, (G.constant(0), G.constant(0.0)))[1]
    return [("nested assert", nested_assert), ("read past the end", read_past_the_end),
            ("in a branch in a loop", in_a_branch_in_a_loop)]


@pytest.mark.parametrize("name,build", _failing_programs(), ids=[n for n, _ in _failing_programs()])
def test_errors_carry_the_same_facts_in_both_modes(name, build):
    g = G.Graph()
    with g.as_default():
        out = build()
    errors = {}
    for mode in MODES:
        with pytest.raises(RunError) as info:
            Session(g, mode=mode).run(out)
        errors[mode] = info.value
    d, c = errors["dataflow"], errors["compiled"]
    assert c.node is d.node and str(c) == str(d)  # node, op, the user's line, the iterations
    assert c.where == d.where and type(c.cause) is type(d.cause) and c.__cause__ is c.cause
    assert "test_compiled.py" in str(c)


def _hand_built_loop():
    """`while i < n: i += 1; s += i` from Enter/Merge/Switch/NextIteration/Exit nodes, with no recorded
    contexts: the structure comes from the pattern alone."""
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [], name="n")
        attrs = {"frame_name": "by_hand", "is_constant": False, "parallel_iterations": 4}
        enters = [g.create_node("Enter", [G.constant(np.int64(0))], attrs, context=None) for _ in range(2)]
        bound, one = (g.create_node("Enter", [t], {**attrs, "is_constant": True}, context=None).outputs[0]
                      for t in (n, G.constant(np.int64(1))))
        merges = [g.create_node("Merge", [e.outputs[0], e.outputs[0]]) for e in enters]
        pred = g.create_node("LoopCond", [G.less(merges[0].outputs[0], bound)]).outputs[0]
        switches = [g.create_node("Switch", [m.outputs[0], pred]) for m in merges]
        i1 = G.add(switches[0].outputs[1], one)
        s1 = G.add(switches[1].outputs[1], i1)
        for m, v in zip(merges, (i1, s1)):
            m.update_input(1, g.create_node("NextIteration", [v]).outputs[0])
        total = g.create_node("Exit", [switches[1].outputs[0]], context=None).outputs[0]
    return g, n, total


def test_a_hand_built_loop_is_recovered_from_its_pattern():
    g, n, total = _hand_built_loop()
    program = compile_program([total], [], [n], Runtime())  # (Session checks for recorded contexts)
    for value in (0, 1, 10):
        assert program([np.int64(value)]) == [value * (value + 1) // 2]
    assert "while True:" in program.source


def test_unstructured_graphs_fall_back_to_the_executor():
    """A Merge of two values live at once (the first to arrive wins) is no if/else: not compiled."""
    g = G.Graph()
    with g.as_default():
        a = G.placeholder(np.float64, [], name="a")
        both = g.create_node("Merge", [G.add(a, 1.0), G.add(a, 1.0)]).outputs[0]
        y = G.mul(both, 2.0)
    with pytest.raises(Unstructured, match="complementary"):
        Session(g).compiled_source(y, {a: 0})
    for mode in ("auto", "compiled"):
        assert Session(g, mode=mode).run(y, {a: 1.0}) == 4.0


def test_effects_happen_in_program_order():
    g = G.Graph()
    with g.as_default():
        v = G.Variable(np.int64(1), name="v")
        n = G.placeholder(np.int64, [], name="n")

        def body(i):
            v.assign(v.read() * 2 + i)
            G.cond(G.equal(G.mod(v.read(), 3), 0), lambda: G.print_("three", v.read()), lambda: G.print_("not", i))
            return G.add(i, 1)
        G.print_("before")
        (done,) = G.while_loop(lambda i: G.less(i, n), body, (G.constant(np.int64(0)),))
        G.print_("after", done)
        final = v.read()
    outputs = {}
    for mode in MODES:
        v.load(np.int64(1))
        out = io.StringIO()
        outputs[mode] = (Session(g, out=out, mode=mode).run(final, {n: 6}), out.getvalue())
    assert outputs["compiled"] == outputs["dataflow"]
    assert outputs["compiled"][1].startswith("before\n") and outputs["compiled"][1].endswith("after 6\n")


def test_random_draws_and_maximum_iterations():
    g = G.Graph()
    with g.as_default():
        g.seed = 7
        x = G.placeholder(np.float64, [3], name="x")
        _, s = G.while_loop(lambda i, s: G.less(G.reduce_sum(s), 100.0),
                            lambda i, s: (G.add(i, 1), G.add(s, G.random_uniform([3]))),
                            (G.constant(0), x), maximum_iterations=5)
    got = _both(g, s, {x: np.zeros(3)})
    assert got.shape == (3,) and 0 < got.sum() < 15


def test_tensor_arrays_and_gradients_through_loops_second_order():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [4], name="x")
        w = G.placeholder(np.float64, [], name="w")

        def body(i, h, ta):
            h = G.tanh(h * w + G.cast(i, np.float64))
            return G.add(i, 1), h, ta.write(i, h)
        _, h, ta = G.while_loop(lambda i, h, ta: G.less(i, 5), body,
                                (G.constant(0), x, G.TensorArray(np.float64, size=5)))
        loss = G.reduce_sum(ta.stack()) + G.reduce_sum(h * h)
        (gw,) = grad.gradients(loss, [w])
        (hw,) = grad.gradients(gw, [w])
    feeds = {x: np.linspace(-1, 1, 4), w: 0.7}
    got = _both(g, [loss, gw, hw], feeds)
    np.testing.assert_allclose(got, run_reference([loss, gw, hw], feeds), rtol=1e-12)


def test_stacks_go_through_the_memory_manager_as_in_the_executor():
    g = G.Graph()
    with g.as_default():
        w = G.placeholder(np.float64, (), name="w")
        _, x = G.while_loop(lambda i, x: i < 300, lambda i, x: (i + 1, G.sin(x) * w),
                            (G.constant(0), G.constant(np.linspace(0.0, 1.0, 100))), parallel_iterations=1)
        (gw,) = grad.gradients(G.reduce_sum(x), [w])
    stats = {}
    for mode in MODES:
        sess = Session(g, mode=mode)
        memory_manager(sess.runtime).reset_peak()
        sess.run(gw, {w: 0.999})
        stats[mode] = memory_manager(sess.runtime).stats()
    assert stats["compiled"] == stats["dataflow"]
    assert stats["compiled"]["saves"] == 600 and stats["compiled"]["bytes_in_use"] == 0


@pytest.mark.parametrize("cores,other_cores,limit", [(2, 0.0, None), (2, 1.5, 1), (16, 1.0, 15), (16, 0.2, None)])
def test_blas_threads_in_compiled_code_follow_the_load(monkeypatch, cores, other_cores, limit):
    """All BLAS threads while other processes leave the cores free, the cores they leave while they take some."""
    entered = []

    @contextlib.contextmanager
    def spy(n):
        entered.append(n)
        yield
    monkeypatch.setattr(blas, "at_most", spy)
    monkeypatch.setattr(load, "other_cores", lambda before, after: other_cores)
    monkeypatch.setattr(load, "lately", lambda: 0.0)
    monkeypatch.setattr(threads, "_cores", lambda: cores)
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [300, 300])
        y = G.matmul(x, x)
    sess = Session(g, mode="compiled")
    for _ in range(2):  # the first run measures the load, the second follows it
        np.testing.assert_allclose(sess.run(y, {x: np.eye(300)}), np.eye(300))
    assert entered == ([] if limit is None else [limit])


@pytest.mark.parametrize("load_average,limit", [(0.3, None), (1.0, None), (2.5, 1)])
def test_a_programs_first_run_follows_the_load_average(monkeypatch, load_average, limit):
    """Before its first measured window a program takes the load average (less its own running thread) as the
    other processes' use: on a busy machine its first runs do not take every BLAS thread."""
    entered = []

    @contextlib.contextmanager
    def spy(n):
        entered.append(n)
        yield
    monkeypatch.setattr(blas, "at_most", spy)
    monkeypatch.setattr(load, "other_cores", lambda before, after: None)  # no window measured yet
    monkeypatch.setattr(load.os, "getloadavg", lambda: (load_average, 0.0, 0.0))
    monkeypatch.setattr(threads, "_cores", lambda: 2)
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [300, 300])
        y = G.matmul(x, x)
    sess = Session(g, mode="compiled")
    np.testing.assert_allclose(sess.run(y, {x: np.eye(300)}), np.eye(300))
    assert entered == ([] if limit is None else [limit])


def _loop_of(kind: str, par: int):
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [], name="n")
        big = G.constant(np.ones((512, 512)))

        def body(i, acc):
            if kind == "independent":  # each iteration's heavy work depends on i only
                y = G.tanh(big + G.cast(i, np.float64))
            else:  # each iteration's heavy work depends on the last one's
                y = G.tanh(acc + 1.0)
            return G.add(i, 1), y if kind == "chained" else acc + G.reduce_sum(y)
        init = G.constant(np.zeros((512, 512))) if kind == "chained" else G.constant(0.0)
        _, acc = G.while_loop(lambda i, acc: G.less(i, n), body, (G.constant(np.int64(0)), init),
                              parallel_iterations=par)
    return g, acc


@pytest.mark.parametrize("kind,par,cores,want", [
    ("independent", 4, 2, "dataflow"), ("independent", 1, 2, "compiled"), ("independent", 4, 1, "compiled"),
    ("chained", 4, 2, "compiled")])
def test_auto_runs_parallel_heavy_iterations_on_the_executor(kind, par, cores, want):
    g, acc = _loop_of(kind, par)
    program = compile_program([acc], [], [], Runtime())
    assert prefers_dataflow(program.nodes, cores=cores) == (want == "dataflow")


@pytest.mark.parametrize("with_loop,want", [(False, "dataflow"), (True, "compiled")])
def test_auto_weighs_overlap_after_a_loop_against_its_scheduling(with_loop, want):
    """Two independent heavy kernels side by side save their overlap once; a loop before them (an LSTM's
    steps before its loss) pays the executor's scheduling every iteration: compiled code runs that plan."""
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [], name="n")
        x = G.placeholder(np.float32, [512, 512], name="x")
        if with_loop:
            _, h = G.while_loop(lambda i, h: G.less(i, n), lambda i, h: (G.add(i, 1), G.tanh(h * 0.5 + 1.0)),
                                (G.constant(np.int64(0)), G.constant(np.zeros((32, 256), np.float32))))
            x = x + G.reduce_sum(h)
        a, b = G.exp(x), G.tanh(x)
    program = compile_program([a, b], [], [], Runtime())
    assert prefers_dataflow(program.nodes, cores=2) == (want == "dataflow")
    assert not prefers_dataflow(program.nodes, cores=1)


def test_mode_is_checked():
    with pytest.raises(ValueError, match="mode must be one of"):
        Session(G.Graph(), mode="fast")


def test_make_callable_runs_compiled_plans_through_their_entry():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [3], name="x")
        k = G.placeholder(np.int64, [], name="k")
        v = G.Variable(np.zeros(3), name="acc")
        y = G.mul(x, G.cast(k, np.float64))
        update = G.group(v.assign_add(y))
    sess = Session(g, mode="compiled")
    call = sess.make_callable([y, v, update], [x, k])
    assert call.__name__ == "entry"
    got = call(np.arange(3.0), 2)                     # a Python int converted as run converts it
    np.testing.assert_array_equal(got[0], [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(got[1], [0.0, 2.0, 4.0])
    assert got[2] is None
    np.testing.assert_array_equal(call([1, 1, 1], np.int64(3))[0], [3.0, 3.0, 3.0])  # a list: the full check
    with pytest.raises(ValueError, match="shape"):
        call(np.zeros(4), 1)
    with g.as_default():
        G.add(x, 1.0)  # the graph changed: the session's runner takes over
    np.testing.assert_array_equal(call(np.ones(3), 1)[1], [4.0, 6.0, 8.0])


_SCALAR_DTYPES = (np.float64, np.float32, np.int64, np.int32, np.uint8)
_SPECIAL = (np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 3.0, 255.0)


def _scalar(dtype, value):
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)[()] if np.dtype(dtype).kind == "f" else \
            np.asarray(0 if not np.isfinite(value) else value).astype(dtype)[()]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "floordiv", "mod", "maximum", "minimum", "lt", "le",
                                "gt", "ge", "eq", "ne"])
def test_scalar_operators_of_compiled_code_give_the_kernels_bits(op):
    """Compiled code computes scalar ops with Python's operators (codegen._scalar_operator): on every pair of
    dtypes and on NaN, infinities and signed zeros they give what the kernels give, dtype and sign included."""
    build = getattr(G, op) if op in ("maximum", "minimum") else getattr(operator, op)
    operators_used = 0
    for da in _SCALAR_DTYPES:
        for db in _SCALAR_DTYPES:
            g = G.Graph()
            with g.as_default():
                a, b = G.placeholder(da, [], name="a"), G.placeholder(db, [], name="b")
                out = build(a, b)
            feeds = [{a: _scalar(da, x), b: _scalar(db, y)} for x in _SPECIAL for y in _SPECIAL]
            compiled, dataflow = Session(g, mode="compiled"), Session(g, mode="dataflow")
            calls_kernel = f"{out.node.op}(" in compiled.compiled_source(out, [a, b])
            operators_used += not calls_kernel
            with np.errstate(all="ignore"):
                for feed in feeds:
                    got, want = compiled.run(out, feed), dataflow.run(out, feed)
                    assert np.asarray(got).dtype == np.asarray(want).dtype, (op, da, db, feed)
                    assert np.array_equal(got, want, equal_nan=True) and np.signbit(got) == np.signbit(want), \
                        (op, da, db, list(feed.values()), got, want)
    assert operators_used >= len(_SCALAR_DTYPES)  # at least on operands of one dtype


def test_logical_not_of_a_scalar_in_compiled_code():
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, [], name="p")
        out = G.logical_not(p)
    for v in (True, False):
        assert _both(g, out, {p: v}) == (not v)


@pytest.mark.parametrize("taken", [True, False])
def test_a_cond_that_crosses_two_values_computed_before_it(taken):
    # `a, b = b, a` under a tensor `if` with one result dead: each value is read by one branch's select
    # only, and must not be computed into the result's variable (the later one would win on both paths)
    g = G.Graph()
    with g.as_default():
        x, p = G.placeholder(np.float64, [], name="x"), G.placeholder(np.bool_, [], name="p")
        a, b = x * 2.0, x + 1.0
        a2, _ = G.cond(p, lambda: (b, a), lambda: (a, b))
        out = a2 * 1.0
    got = _both(g, out, {x: 3.0, p: taken})
    assert got == (4.0 if taken else 6.0)


def test_a_loop_constant_transpose_read_by_matmuls_is_laid_out_once():
    """The gradient loop's `dz @ Wh.T` reads a contiguous copy made before the loop (exec/layout.py), in both
    modes, which stay equal bit for bit; a transpose read by anything else stays a view."""
    rng = np.random.default_rng(0)
    g = G.Graph()
    with g.as_default():
        wh = G.placeholder(np.float32, (128, 128), name="wh")
        n = G.placeholder(np.int64, [], name="n")
        _, h = G.while_loop(lambda i, h: G.less(i, n), lambda i, h: (G.add(i, 1), G.tanh(G.matmul(h, wh))),
                            (G.constant(np.int64(0)), G.constant(rng.normal(size=(8, 128)).astype(np.float32))))
        loss = G.reduce_sum(h * h)
        (gw,) = grad.gradients(loss, [wh])
    program = compile_program([gw], [], [wh, n], Runtime())
    packed = layout.packed_transposes(program.nodes)
    assert [t.op for t in packed] == ["Transpose"]
    assert layout.packed(np.transpose)(np.ones((3, 2))).flags.c_contiguous
    feeds = {wh: rng.normal(size=(128, 128)).astype(np.float32) / 8, n: 5}
    np.testing.assert_array_equal(Session(g, mode="compiled").run(gw, feeds), Session(g, mode="dataflow").run(gw, feeds))


def test_pure_kernels_whose_values_folding_left_unread_are_not_called():
    """The gradient's seed ones_like(loss) is folded, so the loss's mean (and the square before it) are called
    only where the loss is fetched."""
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (3,), name="x")
        loss = G.reduce_mean(G.square(x))
        (gx,) = grad.gradients(loss, [x])
    sess = Session(g, mode="compiled")
    source = sess.compiled_source([gx], [x])
    assert "Mean(" not in source and "Square(" not in source
    np.testing.assert_array_equal(sess.run(gx, {x: [1.0, 2.0, 3.0]}), Session(g, mode="dataflow").run(
        gx, {x: [1.0, 2.0, 3.0]}))
    assert "Mean(" in sess.compiled_source([loss, gx], [x])
