"""Feeds and Variables of runs across 2 MPI ranks (dist/exchange.py):

- every rank must feed each input the same value: equal feeds give one device's answer on both ranks,
  and a run whose feeds differ raises FeedMismatchError on both, naming the input and each rank's value,
  instead of giving one rank the other's answer (graph API and a converted function);
- after a run, every rank's Variables hold their owners' values, whether the run succeeded or failed,
  so reading (`v.value`) or saving (`graph.save`, `Function.save`) on any rank gives the trained values.

Both ranks draw the same hypothesis examples (see test_programs.py) and each feeds a value of its own
drawing where the test wants them to differ.
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import graph
import transpile
from dist.exchange import FeedMismatchError, GraphMismatchError
from dist.mpi import RemoteRunError
from exec import RunError, Session, multi_device
from tests.dist.helpers import within
from tests.dist.mpi.test_programs import same_on_every_rank

floats = st.floats(-4, 4, allow_nan=False, width=32).map(float)


def _in_one_process(fn, *args):
    """fn(*args) with every device of a multi-device run in this process, as without MPI."""
    group = multi_device._process_group
    multi_device.set_process_group(None)
    try:
        return fn(*args)
    finally:
        multi_device.set_process_group(group)


def _scaled_loop():
    """x * 2 + 1, n times: n and the counter on task 0, x on task 1."""
    g = graph.Graph()
    with g.as_default():
        x0 = graph.placeholder(np.float64, (), name="x0")
        n = graph.placeholder(np.int64, (), name="n")

        def body(i, x):
            with graph.device("/task:1/cpu:0"):
                x = x * 2.0 + 1.0
            return i + 1, x
        with graph.device("/task:0/cpu:0"):
            i, x = graph.while_loop(lambda i, x: i < n, body, (graph.constant(np.int64(0)), x0))
    return g, x0, n, [x, i]


def _same(a, b) -> bool:
    """Whether a and b are fed as the same value: the same bytes (0.0 and -0.0 differ)."""
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


def _answer(x, n):
    for _ in range(n):
        x = x * 2.0 + 1.0
    return x, n


@same_on_every_rank(8)
@given(x=st.tuples(floats, floats), n=st.tuples(st.integers(0, 4), st.integers(0, 4)))
def test_a_session_run_gives_one_answer_or_names_the_input_fed_differently(comm, x, n):
    rank = comm.Get_rank()
    g, x0, n_ph, fetches = _scaled_loop()
    sess = Session(g)
    mine = {x0: x[rank], n_ph: n[rank]}
    if _same(x[0], x[1]) and n[0] == n[1]:
        got = within(60, sess.run, fetches, mine)
        assert tuple(got) == _answer(x[0], n[0])
        return
    with pytest.raises(FeedMismatchError) as info:
        within(60, sess.run, fetches, mine)
    text = str(info.value)
    name, values = ("x0", x) if not _same(x[0], x[1]) else ("n", n)
    assert f"input '{name}'" in text and "rank 0: " in text and "rank 1: " in text, text
    assert f"rank 0: {values[0]!r}" in text and f"rank 1: {values[1]!r}" in text, text
    # the session still works, and the ranks agree again
    assert tuple(within(60, sess.run, fetches, {x0: 1.0, n_ph: 2})) == _answer(1.0, 2)


@transpile.function
def _scaled(x, n):
    i = 0
    while i < n:
        with graph.device("/task:1/cpu:0"):
            x = x * 2.0 + 1.0
        with graph.device("/task:0/cpu:0"):
            i += 1
    return x, i


@same_on_every_rank(6)
@given(x=st.tuples(floats, floats))
def test_a_converted_function_gives_one_answer_or_names_the_argument_fed_differently(comm, x):
    rank = comm.Get_rank()
    mine = np.array([x[rank], 0.5])
    if _same(x[0], x[1]):
        got_x, got_n = within(60, _scaled, mine, 3)
        np.testing.assert_array_equal(got_x, _answer(mine, 3)[0])
        assert got_n == 3
        return
    with pytest.raises(FeedMismatchError) as info:
        within(60, _scaled, mine, 3)
    text = str(info.value)
    assert "input 'x'" in text and "rank 0: [" in text and "rank 1: [" in text, text


def test_large_feeds_are_compared_by_digest(comm):
    rank = comm.Get_rank()
    g = graph.Graph()
    with g.as_default():
        a = graph.placeholder(np.float64, (None,), name="batch")
        with graph.device("/task:1/cpu:0"):
            total = graph.reduce_sum(a * 2.0)
        with graph.device("/task:0/cpu:0"):
            out = total + 1.0
    sess = Session(g)
    same = np.arange(10_000.0)
    assert within(60, sess.run, out, {a: same}) == 2 * same.sum() + 1
    mine = same.copy()
    mine[-1] += rank  # one element differs
    with pytest.raises(FeedMismatchError) as info:
        within(60, sess.run, out, {a: mine})
    assert "input 'batch'" in str(info.value) and "float64 array of shape (10000,)" in str(info.value)


# --------------------------------------------------------------------------- Variables

def _model():
    """A Variable on each task, both trained by every run."""
    w0 = graph.Variable(np.ones(3), name="w0")
    w1 = graph.Variable(np.full(3, 2.0), name="w1")

    @transpile.function
    def step(x):
        with graph.device("/task:0/cpu:0"):
            h = x * w0
            w0.assign_add(0.5 * x)
        with graph.device("/task:1/cpu:0"):
            y = h * w1
            w1.assign_sub(0.25 * h)
        return y
    return w0, w1, step


def _trained(steps: int, xs):
    w0, w1, step = _model()
    for k in range(steps):
        within(60, step, xs[k])
    return w0, w1, step


@same_on_every_rank(5)
@given(steps=st.integers(1, 4), xs=st.lists(st.lists(floats, min_size=3, max_size=3), min_size=4, max_size=4))
def test_after_training_every_rank_holds_the_owners_values(comm, steps, xs):
    xs = [np.array(x) for x in xs]
    w0, w1, _ = _trained(steps, xs)
    want0, want1, _ = _in_one_process(_trained, steps, xs)
    for v, want in ((w0, want0), (w1, want1)):
        np.testing.assert_array_equal(v.value, want.value, err_msg=v.name)
        assert not v.value.flags.writeable
    gathered = comm.allgather((w0.value, w1.value))
    for a, b in zip(*gathered, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_model_saved_on_either_rank_holds_the_trained_weights(comm, tmp_path_factory):
    rank = comm.Get_rank()
    xs = [np.array([1.0, -2.0, 0.5])] * 3
    w0, w1, step = _trained(3, xs)
    path = tmp_path_factory.mktemp(f"rank{rank}") / "model.fgraph"
    step.save(path, xs[0])
    loaded = graph.load(path)
    saved = [v.value for v in loaded.variables.values()]  # in the order the step first used them (renamed)
    assert len(saved) == 2
    np.testing.assert_array_equal(saved[0], w0.value)
    np.testing.assert_array_equal(saved[1], w1.value)
    assert not np.array_equal(saved[1], np.full(3, 2.0))  # trained, not the initial value


def test_variables_written_before_a_run_fails_are_shared_too(comm):
    counter = graph.Variable(np.zeros(2), name="counter")
    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, (), name="n")

        def body(i, x):
            with graph.device("/task:1/cpu:0"):
                with graph.control_dependencies([counter.assign_add(np.ones(2))]):
                    check = graph.assert_(i != 5, "i reached 5")
                with graph.control_dependencies([check]):
                    x = x + 1.0
            return i + 1, x
        with graph.device("/task:0/cpu:0"):
            i, x = graph.while_loop(lambda i, x: i < n, body, (graph.constant(np.int64(0)), graph.constant(0.0)),
                                    parallel_iterations=1)
    sess = Session(g)
    with pytest.raises((RunError, RemoteRunError)):
        within(60, sess.run, [i, x], {n: 10})
    np.testing.assert_array_equal(counter.value, [6.0, 6.0])  # iterations 0-5 wrote it, on both ranks
    assert within(60, sess.run, i, {n: 3}) == 3
    np.testing.assert_array_equal(counter.value, [9.0, 9.0])


@transpile.function(static_argnames="k")
def _shifted(x, k):
    with graph.device("/task:1/cpu:0"):
        y = x * 2.0 + k  # k: a Const of the graph
    with graph.device("/task:0/cpu:0"):
        return y - 1.0


@transpile.function(static_argnames="k")
def _scaled_k_times(x, k):
    for _ in range(k):  # a Python loop: the graph has k steps
        with graph.device("/task:1/cpu:0"):
            x = x * 2.0 + 1.0
    with graph.device("/task:0/cpu:0"):
        return x + 1.0


@pytest.mark.parametrize("function", [_shifted, _scaled_k_times], ids=["a constant", "the graph's size"])
def test_a_static_argument_given_other_values_on_each_rank_raises_graph_mismatch_on_both(comm, function):
    """A static argument is no feed: each rank traced a graph of its own. Where k was only a constant in
    it, their Sends and Recvs still met by name and rank 0 (k=1) silently got rank 1's answer (k=2); where
    it decided the graph's size, the ranks waited for values never sent. Now both raise GraphMismatchError,
    a FeedMismatchError naming the first node that differs and its line."""
    rank = comm.Get_rank()
    x = np.array([1.0, 0.5])
    with pytest.raises(FeedMismatchError) as info:
        within(60, function, x, 1 + rank)
    text = str(info.value)
    assert isinstance(info.value, GraphMismatchError), text
    assert "ran different graphs" in text and "rank 0: " in text and "rank 1: " in text, text
    assert "The first node that differs (built at " in text and "test_feeds_and_variables.py" in text, text
    # the ranks agree again: each gets Python's answer
    np.testing.assert_array_equal(within(60, function, x, 2), function.python_function(x, 2))
