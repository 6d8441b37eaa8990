"""Executor behaviour: long and deep loops, errors with frame/iteration, pool, feeds and fetches."""
import tracemalloc

import numpy as np
import pytest

import graph as G
from exec import NoProgressError, RunError, Session
from exec.executor import execute
from exec.plan import build_plan
from exec.reference import run_reference


def _counter_loop(n_value=None, par=32):
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [], name="n")
        i, x = G.while_loop(lambda i, x: G.less(i, n), lambda i, x: (G.add(i, 1), G.add(x, np.float32(1))),
                            (G.constant(0), G.constant(np.float32(0))), parallel_iterations=par)
    return g, n, i, x


def test_million_iterations_complete():
    g, n, i, x = _counter_loop()
    got_i, got_x = Session(g).run([i, x], {n: 1_000_000})
    assert got_i == 1_000_000 and got_x == np.float32(1_000_000)


def _peak_traced_memory(sess, fetches, feeds) -> int:
    tracemalloc.start()
    try:
        sess.run(fetches, feeds)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_loop_memory_does_not_grow_with_the_trip_count():
    # tracemalloc slows Python ~15x, so the growth is measured on shorter loops
    g, n, i, x = _counter_loop()
    sess = Session(g)
    sess.run(i, {n: 10})
    short = _peak_traced_memory(sess, [i, x], {n: 2_000})
    long = _peak_traced_memory(sess, [i, x], {n: 50_000})
    assert long < short + 100_000, f"peak traced memory grows with the trip count: {short} -> {long} bytes"


def test_zero_iterations_and_parallel_window():
    for par in (1, 2, 32):
        g, n, i, x = _counter_loop(par=par)
        assert Session(g).run([i, x], {n: 0}) == [0, 0.0]
        assert Session(g).run([i, x], {n: 7}) == [7, 7.0]


def _nested(depth, k, x):
    """depth nested loops, each running k times, adding 1 at the innermost level."""
    if depth == 0:
        return G.add(x, 1)
    _, x = G.while_loop(lambda j, x: G.less(j, k), lambda j, x: (G.add(j, 1), _nested(depth - 1, k, x)),
                        (G.constant(0), x))
    return x


def test_five_level_nesting():
    g = G.Graph()
    with g.as_default():
        k = G.placeholder(np.int64, [], name="k")
        out = _nested(5, k, G.constant(0))
    sess = Session(g)
    for kv in (0, 1, 3):
        assert sess.run(out, {k: kv}) == kv ** 5
    assert run_reference(out, {k: 2}) == 32
    frames = {n.frame.frame_name for n in g.nodes if n.frame is not None}
    assert len(frames) == 5


def test_error_in_nested_loop_names_frame_and_iteration():
    g = G.Graph()
    with g.as_default():
        def inner(j, t, i):
            G.assert_(G.logical_not(G.logical_and(G.equal(i, 2), G.equal(j, 3))), "boom at i=2, j=3")
            return G.add(j, 1), G.add(t, j)

        def outer(i, t):
            _, t = G.while_loop(lambda j, t: G.less(j, 5), lambda j, t: inner(j, t, i), (G.constant(0), t))
            return G.add(i, 1), t
        _, total = G.while_loop(lambda i, t: G.less(i, 4), outer, (G.constant(0), G.constant(0)))
    with pytest.raises(RunError) as info:
        Session(g).run(total)
    msg = str(info.value)
    assert "boom at i=2, j=3" in msg
    assert "in iteration 3 of the while loop" in msg and "in iteration 2 of the while loop" in msg
    assert "test_executor.py" in msg  # the user line that built the failing node


def test_kernel_error_reports_user_line_and_op():
    g = G.Graph()
    with g.as_default():
        ta = G.TensorArray(np.float64, size=2)
        bad = ta.read(5)  # line recorded on the node
    with pytest.raises(RunError) as info:
        Session(g).run(bad)
    assert "TensorArrayRead" in str(info.value) and "test_executor.py" in str(info.value)


def test_pool_and_inline_agree():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((300, 300)), rng.standard_normal((300, 300))
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [300, 300])
        y = G.placeholder(np.float64, [300, 300])
        _, out = G.while_loop(lambda i, m: G.less(i, 3),
                              lambda i, m: (G.add(i, 1), G.tanh(G.add(G.matmul(m, y), G.matmul(x, m)))),
                              (G.constant(0), x))
    want = a
    for _ in range(3):
        want = np.tanh(want @ b + a @ want)
    for threads in (0, 2):
        np.testing.assert_allclose(Session(g, inter_op_threads=threads).run(out, {x: a, y: b}), want)


def test_every_output_of_a_multi_output_node_goes_dead_with_it():
    # the loop's last iteration is dead; outputs past the second of a Split must be dead too,
    # or their consumers wait forever
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [])

        def body(i, x):
            a, b, c, d = G.split(x, 4)
            return G.add(i, 1), G.concat([d, c, G.mul(b, 2.0), a], 0)
        _, out = G.while_loop(lambda i, x: G.less(i, n), body, (G.constant(0), G.constant(np.arange(4.0))))
    want = np.arange(4.0)
    for _ in range(3):
        want = np.concatenate([want[3:], want[2:3], want[1:2] * 2, want[:1]])
    np.testing.assert_allclose(Session(g).run(out, {n: 3}), want)


def test_fetching_a_dead_tensor_is_an_error():
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, [])
        x = G.constant(1.0)
        sw = g.create_node("Switch", [x, p])
        y = G.add(sw.outputs[1], 1.0)
    assert Session(g).run(y, {p: True}) == 2.0
    with pytest.raises(RunError, match="dead"):
        Session(g).run(y, {p: False})


def test_feed_and_fetch_errors():
    g, n, i, x = _counter_loop()
    with pytest.raises(ValueError, match="must be fed"):
        Session(g).run(i)
    with pytest.raises(ValueError, match="shape"):
        Session(g).run(i, {n: np.zeros(3, np.int64)})
    with pytest.raises(TypeError, match="cannot feed"):
        Session(g).run(i, {n: 1.5})
    inner = next(nd for nd in g.nodes if nd.op == "Add").outputs[0]
    with pytest.raises(ValueError, match="lives inside the while loop"):
        Session(g).run(inner, {n: 1})


def test_feeding_an_intermediate_tensor_prunes_its_producers():
    g = G.Graph()
    with g.as_default():
        a = G.placeholder(np.float64, [])
        b = G.mul(a, 2.0)
        c = G.add(b, 1.0)
    assert Session(g).run(c, {b: 10.0}) == 11.0


def test_loop_in_untaken_branch_does_not_run():
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.bool_, [])

        def looping():
            def body(i):
                G.assert_(G.constant(False), "the loop in the untaken branch ran")
                return (G.add(i, 1),)
            return G.while_loop(lambda i: G.less(i, 3), body, (G.constant(0),))[0]
        out = G.cond(p, looping, lambda: G.constant(-1))
    sess = Session(g)
    assert sess.run(out, {p: False}) == -1
    with pytest.raises(RunError, match="untaken branch ran"):
        sess.run(out, {p: True})


def test_no_progress_is_reported_not_hung():
    g = G.Graph()
    with g.as_default():
        x = G.constant(1.0)
        y = G.add(x, 1.0)
    plan = build_plan(g, [y], [], [], None, use_pool=False)
    plan.sources.clear()  # nothing can ever start
    with pytest.raises(NoProgressError, match="cannot make progress"):
        execute(plan, [])


def test_device_strings_are_checked():
    from exec.devices import parse_device
    assert str(parse_device("/job:worker/task:1/gpu:0")) == "/job:worker/task:1/gpu:0"
    with pytest.raises(ValueError, match="bad device name"):
        parse_device("gpu0")
    g = G.Graph()
    with g.as_default():
        with G.device("/gpu:0"):
            y = G.add(G.constant(1.0), 2.0)
    with pytest.raises(ValueError, match="only has CPU kernels"):
        Session(g).run(y)


def test_fetching_or_feeding_a_tensor_of_another_graph_is_an_error():
    g1, g2 = G.Graph(), G.Graph()
    with g1.as_default():
        a = G.add(G.constant(1.0), 1.0)
    with g2.as_default():
        b = G.placeholder(np.float64, [], name="b")
        c = G.mul(b, 2.0)
    with pytest.raises(ValueError, match="cannot fetch 'Mul'.*test_executor.py.*another graph"):
        Session(g1).run(c, {b: 1.0})
    with pytest.raises(ValueError, match="cannot feed 'Add'.*another graph"):
        Session(g2).run(c, {a: 1.0})
    assert Session(g2).run(c, {b: 1.5}) == 3.0


def test_nodes_whose_only_input_is_a_control_edge():
    g = G.Graph()
    v = G.Variable(np.float32(2.0))
    with g.as_default():
        x = G.placeholder(np.float32, [], name="x")
        first = v.assign(x)
        with G.control_dependencies([first]):
            c = G.constant(np.float32(3.0))  # no data inputs, one control input
            r = v.read()
            u = G.random_uniform([], seed=1)
        total = G.add(G.add(c, r), G.mul(u, 0.0))
    assert Session(g).run(total, {x: np.float32(5.0)}) == np.float32(8.0)
    v.reset()
    assert run_reference([total], {x: np.float32(5.0)})[0] == np.float32(8.0)
