"""Generated code (golden listings) and the graphs that converted functions trace."""
import collections
import logging

import numpy as np
import pytest

import grad
import transpile


def train(w, x, y, lr, max_steps):
    loss = np.mean((x @ w - y) ** 2)
    step = 0
    while step < max_steps and loss > 1e-4:
        grad_w = 2 * x.T @ (x @ w - y) / len(y)
        w = w - lr * grad_w
        loss = np.mean((x @ w - y) ** 2)
        step += 1
    return w, loss, step


TRAIN_CODE = '''\
def train(w, x, y, lr, max_steps):
    loss = np.mean((x @ w - y) ** 2)
    step = 0

    def loop_test(loss, step, w):
        return ag.and_(step < max_steps, lambda : loss > 0.0001)

    def loop_body(loss, step, w):
        grad_w = 2 * x.T @ (x @ w - y) / ag.len(y)
        w = w - lr * grad_w
        loss = np.mean((x @ w - y) ** 2)
        step += 1
        return loss, step, w
    loss, step, w = ag.while_stmt(loop_test, loop_body, (loss, step, w), ('loss', 'step', 'w'), facts=ag.LoopFacts(line=15, body_line=16))
    return w, loss, step
'''


def first_negative(x):
    for i, v in enumerate(x):
        if v < 0:
            return i
    return -1


FIRST_NEGATIVE_CODE = '''\
def first_negative(x):
    do_return = False
    retval = ag.undefined_return()

    def loop_test(do_return, retval):
        return ag.not_(do_return)

    def loop_body(itr, do_return, retval):
        i, v = itr

        def if_true(do_return, retval):
            retval = i
            do_return = True
            return do_return, retval

        def if_false(do_return, retval):
            return do_return, retval
        do_return, retval = ag.if_stmt(v < 0, if_true, if_false, (do_return, retval), ('do_return', 'retval'), facts=ag.IfFacts(line=44, true=ag.BranchFacts(line=45, assigned={'do_return': 45, 'retval': 45}), false=ag.BranchFacts(line=44), has_else=False, return_vars=('retval',)))
        return do_return, retval
    do_return, retval = ag.for_stmt(ag.enumerate(x), loop_body, (do_return, retval), ('do_return', 'retval'), loop_test, facts=ag.LoopFacts(line=43, body_line=44, return_vars=('retval',)))

    def if_true_2(retval):
        retval = -1
        return retval

    def if_false_2(retval):
        return retval
    retval = ag.if_stmt(ag.not_(do_return), if_true_2, if_false_2, (retval,), ('retval',), facts=ag.IfFacts(line=46, true=ag.BranchFacts(line=46, assigned={'retval': 46}), false=ag.BranchFacts(line=46), has_else=False, return_vars=('retval',)))
    return retval
'''


def test_generated_code_golden():
    assert transpile.to_code(train) == TRAIN_CODE
    assert transpile.to_code(first_negative) == FIRST_NEGATIVE_CODE


def _data():
    rng = np.random.RandomState(0)
    x = rng.randn(16, 3)
    return np.zeros(3), x, x @ np.array([1.0, -2.0, 0.5])


def test_training_loop_graph_has_dataflow_control_flow_and_no_unrolled_copies():
    f = transpile.function(train)
    w, x, y = _data()
    g = f.get_graph(w, x, y, 0.1, 500)
    ops = collections.Counter(n.op for n in g.nodes)
    for op in ("Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"):
        assert ops[op] > 0, op
    assert ops["MatMul"] == 4       # one before the loop, three in the single copy of its body
    listing = str(g)
    assert "@while" in listing      # nodes placed in the loop's frame
    assert f.get_graph(w, x, y, 0.1, 5) is g   # the trip count is an input: no retrace
    got = f(w, x, y, 0.1, 500)
    want = train(w, x, y, 0.1, 500)
    np.testing.assert_allclose(got[0], want[0])
    assert got[2] == want[2] < 500


def test_listing_and_picture_name_the_users_lines():
    f = transpile.function(train)
    g = f.get_graph(*_data(), 0.1, 500)
    first = train.__code__.co_firstlineno
    body_lines = {f"test_graphs.py:{first + k}" for k in range(3, 8)}   # the while statement and its body
    in_loop = [line for line in str(g).splitlines() if " @while" in line]
    assert in_loop and all(line.rsplit("  # ", 1)[1] in body_lines for line in in_loop)
    dot = g.to_dot()
    assert f'"while  test_graphs.py:{first + 3}\\nwhile step < max_steps and loss > 1e-4:\\n' in dot
    assert f'"test_graphs.py:{first + 1}\\nloss = np.mean((x @ w - y) ** 2)\\n' in dot
    assert "cluster_" not in dot and "cluster_" in g.to_dot(expand=True)


def loss_with_data_dependent_loop(w, x, n):
    h = w * 1.0
    i = 0
    while i < n:
        if h.sum() > 10:
            h = h * 0.5
        else:
            h = np.tanh(h * x[i])
        i += 1
    return np.sum(h ** 2)


def sgd_step(w, x, n, lr):
    loss = loss_with_data_dependent_loop(w, x, n)
    (g,) = grad.gradients(loss, [w])
    return w - lr * g, loss


def test_gradients_through_a_converted_data_dependent_loop():
    f = transpile.function(sgd_step)
    w, x = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.7, -0.3, 2.0])
    new_w, loss = f(w, x, 3, 0.1)
    assert loss == pytest.approx(loss_with_data_dependent_loop(w, x, 3))
    eps = 1e-6
    fd = [(loss_with_data_dependent_loop(w + eps * e, x, 3) - loss_with_data_dependent_loop(w - eps * e, x, 3))
          / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose((w - new_w) / 0.1, fd, rtol=1e-5, atol=1e-8)


def test_graph_nodes_point_at_the_users_lines():
    f = transpile.function(train)
    g = f.get_graph(*_data(), 0.1, 5)
    lines = {n.source.lineno for n in g.nodes if n.op == "MatMul"}
    first = train.__code__.co_firstlineno
    assert lines == {first + 1, first + 4, first + 6}
    assert all(n.source.filename == __file__ for n in g.nodes if n.op == "MatMul")


def test_retrace_report_names_what_changed(caplog):
    f = transpile.function(train)
    w, x, y = _data()
    f(w, x, y, 0.1, 5)
    with caplog.at_level(logging.INFO, logger="flowgraph.transpile"):
        f(w, x[:8], y[:8], 0.1, 5)
    assert f.last_retrace_report == ("retracing train: x: float64[16,3] -> float64[8,3]; "
                                     "y: float64[16] -> float64[8]")
    assert f.last_retrace_report in caplog.text
    assert f.traces == 2


def early_exit_loss(w, xs, limit):
    h = np.zeros(3)
    outs = []
    for x in xs:
        h = np.tanh(h * w + x)
        if np.abs(h).sum() < limit:
            break
        outs.append(h)
    total = 0.0
    for o in outs:
        total = total + np.sum(o ** 2)
    return total + np.sum(h)


def early_exit_gradient(w, xs, limit):
    loss = early_exit_loss(w, xs, limit)
    (g,) = grad.gradients(loss, [w])
    return g, loss


@pytest.mark.parametrize("limit", [1.7, 0.0])
def test_gradients_through_break_and_a_list_built_in_the_loop(limit):
    rng = np.random.RandomState(1)
    w, xs = rng.randn(3), rng.randn(6, 3)
    g, loss = transpile.function(early_exit_gradient)(w, xs, limit)
    assert loss == pytest.approx(early_exit_loss(w, xs, limit))
    eps = 1e-6
    fd = [(early_exit_loss(w + eps * e, xs, limit) - early_exit_loss(w - eps * e, xs, limit)) / (2 * eps)
          for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)



def test_range_items_cost_no_ops_per_iteration_when_start_is_0_and_step_1():
    @transpile.function
    def f(n, start, step):
        plain, general = [], []
        for i in range(n):
            plain.append(i)
        for i in range(start, n, step):
            general.append(i)
        return np.stack(plain), np.stack(general)

    plain, general = f(np.int64(5), np.int64(4), np.int64(-2))
    assert list(plain) == [0, 1, 2, 3, 4] and list(general) == []
    plain, general = f(np.int64(9), np.int64(2), np.int64(3))
    assert list(general) == [2, 5, 8]
    g = f.get_graph(np.int64(9), np.int64(2), np.int64(3))
    per_loop = collections.defaultdict(collections.Counter)
    for nd in g.nodes:
        if nd.frame is not None:
            per_loop[nd.frame.frame_name][nd.op] += 1
    first, second = sorted(per_loop)
    # range(n): i is the loop's own index (one Add: its increment); range(start, n, step): start + k * step
    assert (per_loop[first]["Add"], per_loop[first]["Mul"]) == (1, 0)
    assert (per_loop[second]["Add"], per_loop[second]["Mul"]) == (2, 1)
