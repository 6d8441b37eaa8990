"""Converted functions compute what the plain Python functions compute (tensor inputs)."""
import functools

import numpy as np
import pytest

import graph
import transpile
from tests.transpile.helpers import assert_converted_equivalent

A = np.array([1.0, -2.0, 3.0, 4.0, -5.0])


# --------------------------------------------------------------------------- if / elif / else

def sign_class(x):
    if x > 0:
        r = 1
    elif x < 0:
        r = -1
    else:
        r = 0
    return r


def test_if_elif_else():
    assert_converted_equivalent(sign_class, (2.0,), (-3.0,), (0.0,))


def guard_clauses(x, n):
    if n < 0:
        return -1.0
    elif n == 0:
        return 0.0
    if x > 10:
        return x
    y = x * n
    return y


def test_guard_clauses_followed_by_final_return():
    assert_converted_equivalent(guard_clauses, (1.0, -1), (1.0, 0), (11.0, 3), (2.0, 3))


def python_condition_one_sided(x, flag):
    if flag:
        y = x + 1
    return y if flag else x


def test_python_conditions_keep_python_semantics():
    # `flag` is static: a Python bool, so a variable assigned in one branch only is fine
    assert_converted_equivalent(python_condition_one_sided, (1.0, True), (1.0, False), static_argnames=("flag",))


def mixed_dtypes(x):
    s = 0
    if x > 0:
        s = x * 2.5
    return s


def test_python_number_takes_the_other_branch_dtype():
    f = assert_converted_equivalent(mixed_dtypes, (np.float32(1.0),), (np.float32(-1.0),))
    assert f(np.float32(-1.0)).dtype == np.float32


def nested_state(x):
    d = {"lo": x, "hi": x}
    pair = [x, x]
    if x > 0:
        d["hi"] = x * 2
        pair = [pair[1], -x]
    return d, pair


def test_dict_and_list_state_in_branches():
    assert_converted_equivalent(nested_state, (1.0,), (-1.0,))


def raise_in_branch(x):
    if x < 0:
        raise ValueError("x must be non-negative")
    return x * 2


def test_raise_in_tensor_branch_fails_only_when_taken():
    f = assert_converted_equivalent(raise_in_branch, (3.0,))
    with pytest.raises(Exception, match="ValueError: x must be non-negative"):
        f(-1.0)


# --------------------------------------------------------------------------- while

def while_break_continue_else(x, n):
    i = 0
    s = 0.0
    while i < n:
        i += 1
        if x[i - 1] < 0:
            continue
        if s > 5:
            break
        s += x[i - 1]
    else:
        s = -s
    return s, i


def test_while_with_break_continue_else():
    assert_converted_equivalent(while_break_continue_else, (A, 5), (A, 2), (A, 0), (np.array([9.0, 9.0]), 2))


def while_true_tensor_break(x):
    k = 0
    while True:
        x = x * 2
        k += 1
        if x > 100:
            break
    return x, k


def test_while_true_with_tensor_break_becomes_a_graph_loop():
    f = assert_converted_equivalent(while_true_tensor_break, (3.0,), (200.0,))
    ops = [n.op for n in f.get_graph(3.0).nodes]
    assert "NextIteration" in ops and ops.count("Mul") == 1  # one loop body, not unrolled


def conditional_return_in_loop(x, n):
    i = 0
    while i < n:
        if x[i] > 3:
            return i
        i += 1
    return -1


def test_conditional_return_inside_graph_loop():
    assert_converted_equivalent(conditional_return_in_loop, (A, 5), (A, 3), (A, 0))


def nested_loops_return(m, r, c):
    i = 0
    while i < r:
        j = 0
        while j < c:
            if m[i, j] < 0:
                return i * 10 + j
            j += 1
        i += 1
    return -1


def test_return_from_nested_graph_loops():
    m = np.array([[1.0, 2.0, 3.0], [4.0, -5.0, 6.0]])
    assert_converted_equivalent(nested_loops_return, (m, 2, 3), (np.abs(m), 2, 3), (m, 1, 3))


def defined_in_loop(x, n):
    i = 0
    while i < n:
        last = x[i]
        i += 1
    return last


def test_variable_first_defined_in_graph_loop():
    f = assert_converted_equivalent(defined_in_loop, (A, 3))
    with pytest.raises(Exception, match="variable 'last' is used at .* but was never assigned"):
        f(A, 0)


def weak_accumulator(x):
    s = 0
    for v in x:
        s += v
    return s


def test_python_number_loop_variable_takes_the_body_dtype():
    f = assert_converted_equivalent(weak_accumulator, (A.astype(np.float32),))
    assert f(A.astype(np.float32)).dtype == np.float32


def shape_changing(n):
    v = np.zeros(1)
    i = 0
    while i < n:
        v = np.concatenate([v, v + 1.0])
        i += 1
    return v


def test_loop_variable_shapes_relax_automatically():
    assert_converted_equivalent(shape_changing, (0,), (3,))


# --------------------------------------------------------------------------- for

def for_range_forms(n):
    s = 0
    for i in range(n):
        s += i
    for i in range(2, n):
        s += 10 * i
    for i in range(n, 0, -2):
        s += 100 * i
    return s


def test_for_over_range_with_tensor_bounds():
    f = assert_converted_equivalent(for_range_forms, (0,), (1,), (5,), (6,))
    assert "NextIteration" in [n.op for n in f.get_graph(5).nodes]


def for_over_tensor(m):
    total = 0.0
    rows = 0
    for row in m:
        total += row.sum()
        rows += 1
    return total, rows


def test_for_over_first_dimension_of_a_tensor():
    assert_converted_equivalent(for_over_tensor, (np.arange(6.0).reshape(3, 2),), (np.zeros((0, 2)),))


def for_enumerate_zip(x, y):
    acc = 0.0
    for i, v in enumerate(x):
        acc += i * v
    for i, v in enumerate(x, 1):
        acc -= i * v
    for a, b in zip(x, y):
        acc += a * b
    return acc


def test_enumerate_and_zip_over_tensors():
    assert_converted_equivalent(for_enumerate_zip, (A, np.array([1.0, 2.0])))


def for_else_break(x, t):
    for v in x:
        if v > t:
            found = v
            break
    else:
        found = -1.0
    return found


def test_for_else():
    assert_converted_equivalent(for_else_break, (A, 2.0), (A, 10.0))


def for_continue(x):
    s = 0.0
    for v in x:
        if v < 0:
            continue
        s += v
    return s


def test_for_continue():
    assert_converted_equivalent(for_continue, (A,))


def python_iterable_loop(x):
    s = x
    for k in [1.0, 2.0, 3.0]:
        s = s * k + 1
    for key, w in {"a": 1.0, "b": -1.0}.items():
        s = s + w
    return s


def test_python_iterables_stay_python_loops():
    f = assert_converted_equivalent(python_iterable_loop, (2.0,))
    assert "NextIteration" not in [n.op for n in f.get_graph(2.0).nodes]


def python_range_with_tensor_break(x):
    s = 0.0
    for i in range(5):
        s += x * i
        if s > 4:
            break
    return s


def test_python_range_with_tensor_break_becomes_a_graph_loop():
    assert_converted_equivalent(python_range_with_tensor_break, (1.0,), (0.1,))


def for_over_tensor_array(x):
    ta = graph.TensorArray(np.float64).unstack(x)
    s = 0.0
    for v in ta:
        s += v
    return s


def test_for_over_tensor_array():
    f = transpile.function(for_over_tensor_array)
    assert f(A) == pytest.approx(A.sum())


def loop_target_after_loop(n):
    for i in range(n):
        pass
    return i


def test_loop_target_is_defined_after_the_loop():
    f = assert_converted_equivalent(loop_target_after_loop, (3,))
    with pytest.raises(Exception, match="variable 'i'"):
        f(0)


# --------------------------------------------------------------------------- expressions

def guarded_read(x, n):
    i = 0
    count = 0
    while i < n and x[i] > 0:
        count += 1
        i += 1
    return count


def test_and_short_circuits_at_run_time():
    # without short-circuit the loop test would read x[n], out of range
    assert_converted_equivalent(guarded_read, (np.array([1.0, 2.0, 3.0]), 3), (np.array([1.0, -2.0]), 2))


def or_and_not(x, i, n):
    a = i >= n or x[i] < 0
    b = not (i < n and x[i] > 1)
    c = 0 < i < n
    return a, b, c


def test_or_and_not_and_chained_comparisons():
    x = np.array([1.0, 2.0, -1.0])
    assert_converted_equivalent(or_and_not, (x, 0, 3), (x, 2, 3), (x, 3, 3), (x, 5, 3))


def ternaries(x, i, n):
    y = x[i] if i < n else 0.0
    z = 1.0 if y > 2 else (2.0 if y > 0 else 3.0)
    return y + z


def test_nested_ternaries_evaluate_one_side():
    x = np.array([1.0, 5.0])
    assert_converted_equivalent(ternaries, (x, 0, 2), (x, 1, 2), (x, 7, 2))


def side_effect_in_unevaluated_operand(x):
    return x > 0 or graph.assert_(False, "must not run") is None


def test_unevaluated_operand_does_not_execute():
    f = transpile.function(side_effect_in_unevaluated_operand)
    assert f(1.0)


# --------------------------------------------------------------------------- statements

def asserting(x, n):
    i = 0
    while i < n:
        assert x[i] > -3, "values must exceed -3"
        i += 1
    return i


def test_assert_becomes_a_run_time_check():
    f = assert_converted_equivalent(asserting, (A, 4))
    with pytest.raises(Exception, match="values must exceed -3") as info:
        f(A, 5)
    assert "iteration 4" in str(info.value)


def printing(x, n):
    print("start", x)
    for i in range(n):
        if i % 2 == 0:
            print("even", i)
        else:
            print("odd", i, [x * i, i])
    print("end")
    return x


def test_print_in_program_order(capsys):
    f = transpile.function(printing)
    capsys.readouterr()
    f(2.0, 3)
    got = capsys.readouterr().out
    printing(2.0, 3)
    want = capsys.readouterr().out
    assert got == want


def accumulate(x, n):
    out = []
    for i in range(n):
        out.append(x * i)
    evens = []
    for v in x:
        if v > 0:
            evens.append(v)
    return out, evens


def test_list_append_in_graph_loop_is_stacked():
    f = transpile.function(accumulate)
    out, evens = f(A, 3)
    np.testing.assert_allclose(out, np.stack([A * i for i in range(3)]))
    np.testing.assert_allclose(evens, A[A > 0])


def nested_accumulate(m):
    rows = []
    for row in m:
        for v in row:
            rows.append(v * 2)
    return rows


def test_list_append_in_nested_graph_loops():
    m = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(transpile.function(nested_accumulate)(m), m.ravel() * 2)


def python_list(x):
    out = []
    for k in range(3):
        out.append(x * k)
    return out


def test_list_append_in_python_loop_stays_a_list():
    assert_converted_equivalent(python_list, (2.0,))


def item_assignment(x, n):
    y = x * 1.0
    for i in range(n):
        y[i] = y[i] * 10
    y[-1] += 1
    return y


def test_item_assignment_on_tensors():
    assert_converted_equivalent(item_assignment, (A, 3))


def swap_items(x, i, j):
    y = x * 1.0
    y[i], y[j] = y[j], y[i]
    return y


def test_item_assignment_in_tuple_targets():
    assert_converted_equivalent(swap_items, (A, 0, 3), (A, 2, 2))


# --------------------------------------------------------------------------- calls

def helper(v):
    if v > 0:
        return v * 2
    return -v


class Model:
    def __init__(self, w):
        self.w = w
        self.calls = 0

    def step(self, h):
        if h > 1:
            h = h * self.w
        return h

    def run(self, h, n):
        for _ in range(n):
            h = self.step(h)
        return h

    def __call__(self, h):
        return h + 1 if h < 3 else h


def calls(x, n):
    f = lambda t: t + 1 if t < 5 else t  # noqa: E731
    scale = 3.0

    def g(t):
        return helper(t) + f(t) * scale

    m = Model(2.0)
    p = functools.partial(helper)
    return g(x) + m.run(x, n) + m(x) + p(-x)


def test_user_functions_lambdas_methods_closures_are_converted():
    assert_converted_equivalent(calls, (3.0, 3), (0.5, 2), (-4.0, 1))


def factorial(n):
    if n <= 1:
        return 1
    return n * factorial(n - 1)


def uses_recursion(x, n):
    return x * factorial(n)


def test_recursion_on_static_values():
    assert_converted_equivalent(uses_recursion, (2.0, 4), static_argnames=("n",))


@transpile.function
def decorated_inner(x):
    if x > 0:
        x = x * 3
    return x


def calls_decorated(x):
    return decorated_inner(x) + 1


def test_transpile_function_called_inside_is_inlined():
    f = transpile.function(calls_decorated)
    assert f(2.0) == 7.0 and f(-2.0) == -1.0
    assert "Placeholder" in [n.op for n in f.get_graph(2.0).nodes]


def nonlocal_counter(x, n):
    total = 0.0

    def add(v):
        nonlocal total
        total += v

    for i in range(n):
        add(x[i])
    return total


def test_nonlocal_writes_through_a_nested_function_in_a_graph_loop():
    assert_converted_equivalent(nonlocal_counter, (A, 4))


class Accumulator:
    def __init__(self):
        self.total = 0.0

    def run(self, x, n):
        for i in range(n):
            self.total = self.total + x[i]
        return self.total


def attribute_state(x, n):
    acc = Accumulator()
    return acc.run(x, n)


def test_attributes_as_loop_state():
    assert_converted_equivalent(attribute_state, (A, 3))


# --------------------------------------------------------------------------- builtins

def builtins_on_tensors(x, n):
    return (len(x), abs(n - 10), min(x), max(x), max(n, 3), min(x[0], x[1]), sum(x), int(x[0] * 3.7),
            int(-x[4] * 1.5), float(n), bool(n), isinstance(n, int), isinstance(x, np.ndarray),
            isinstance(x[0], float))


def test_builtins_on_tensors():
    assert_converted_equivalent(builtins_on_tensors, (A, 4), (A, 0))


def len_of_dynamic(x):
    n = len(x)
    s = 0
    for i in range(n):
        s += i
    return s


def test_len_of_unknown_length_is_a_tensor():
    assert_converted_equivalent(len_of_dynamic, (A,))


# --------------------------------------------------------------------------- variables

COUNTER = graph.Variable(0.0, name="transpile_test_counter")


def bump(x):
    COUNTER.assign_add(x)


def test_effects_run_even_when_not_returned():
    f = transpile.function(bump)
    COUNTER.load(0.0)
    f(1.0)
    f(2.5)
    assert COUNTER.value == 3.5


def inner_variable(x):
    w = graph.Variable(np.ones(3), name="transpile_test_inner")
    w.assign(w * x)
    return w.read().sum()


def test_variables_created_inside_are_created_once():
    f = transpile.function(inner_variable)
    assert f(2.0) == 6.0
    assert f(2.0) == 12.0
    assert f(np.float32(2.0)) == 24.0  # a new trace reuses the Variable


# --------------------------------------------------------------------------- more Python

class Base:
    def f(self, x):
        return x * 2


class Child(Base):
    def f(self, x):
        if x > 0:
            return super().f(x) + 1
        return x


def uses_super(x):
    return Child().f(x)


def count_up(n):
    for i in range(n):
        yield i


def uses_generator(x):
    s = x
    for k in count_up(3):
        s = s + k
    return s


def try_finally_in_loop(x, n):
    s = 0.0
    i = 0
    while i < n:
        try:
            s += x[i]
            if s > 3:
                break
        finally:
            i += 1
    return s, i


def late_binding(x):
    fs = []
    for k in range(3):
        fs.append(lambda: k * x)
    return [f() for f in fs]


def nested_def_in_loop(x, n):
    s = 0.0
    for i in range(n):
        def sq(v):
            return v * v if v > 0 else -v
        s += sq(x[i])
    return s


def walrus_in_test(x):
    if (y := x * 2) > 3:
        y = y + 1
    return y


def while_else_return(x, n):
    i = 0
    while i < n:
        if x[i] > 2:
            return x[i]
        i += 1
    else:
        return -1.0


def swap_state(x, n):
    a, b = 0.0, 1.0
    for i in range(n):
        a, b = b, a + b * x
    return a, b


def dict_state(x, n):
    d = {"s": 0.0, "c": 0}
    for i in range(n):
        d["s"] += x[i]
        d["c"] += 1
    return d


@pytest.mark.parametrize("fn,argsets", [
    (uses_super, [(2.0,), (-1.0,)]),
    (uses_generator, [(1.0,)]),
    (try_finally_in_loop, [(A, 4), (A, 2)]),
    (late_binding, [(2.0,)]),
    (nested_def_in_loop, [(A, 4)]),
    (walrus_in_test, [(1.0,), (2.0,)]),
    (while_else_return, [(A, 4), (A, 1)]),
    (swap_state, [(0.5, 4), (0.5, 0)]),
    (dict_state, [(A, 3)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_more_python(fn, argsets):
    assert_converted_equivalent(fn, *argsets)


def fstring_print(x):
    print(f"value {x} and {x * 2}!")
    return x


def test_fstrings_in_print_show_tensor_values(capsys):
    f = transpile.function(fstring_print)
    capsys.readouterr()
    f(1.5)
    assert capsys.readouterr().out == "value 1.5 and 3.0!\n"


def rnn_with_early_stop(xs, w, u, limit):
    h = np.zeros(w.shape[0])
    outs = []
    for t in range(xs.shape[0]):  # a Python range (static shape) that the tensor break makes a graph loop
        h = np.tanh(h @ w + xs[t] @ u)
        if np.abs(h).sum() < limit:
            break
        outs.append(h)
    return np.stack(outs), h


def test_list_built_under_a_tensor_condition_in_a_promoted_loop():
    rng = np.random.RandomState(0)
    w, u, xs = rng.randn(4, 4) * 0.5, rng.randn(3, 4), rng.randn(6, 3)
    f = assert_converted_equivalent(rnn_with_early_stop, (xs, w, u, 0.0), (xs, w, u, 2.0))
    assert "NextIteration" in [n.op for n in f.get_graph(xs, w, u, 1.0).nodes]


LEVEL = graph.Variable(5.0, name="transpile_test_level")


def drain(step):
    while LEVEL.read() > 0:
        LEVEL.assign_sub(step)
    return LEVEL.read()


def test_graph_loop_whose_state_lives_in_a_variable():
    LEVEL.load(5.0)
    assert transpile.function(drain)(1.5) == -1.0
    assert LEVEL.value == -1.0


def doubled_variable(n):
    x = LEVEL
    for _ in range(n):
        x = x * 2
    return x


def test_a_name_bound_to_a_variable_then_to_values():
    LEVEL.load(3.0)
    f = transpile.function(doubled_variable)
    assert f(3) == 24.0 and f(0) == 3.0


def prints_around_nested_branches(x, n):
    print("before")
    if x > 0:
        if x > 1:
            print("big", x)
    else:
        for _ in range(n):
            print("loop")
    print("after")
    return x


@pytest.mark.parametrize("args", [(2.0, 2), (0.5, 2), (-1.0, 2), (-1.0, 0)])
def test_effects_before_nested_branches_and_loops_run_in_order(capsys, args):
    f = transpile.function(prints_around_nested_branches)
    capsys.readouterr()
    f(*args)
    got = capsys.readouterr().out
    prints_around_nested_branches(*args)
    assert got == capsys.readouterr().out


def list_grown_in_one_branch(x):
    acc = []
    if x > 0:
        for k in range(3):
            acc.append(x * k)
    return acc


def test_list_grown_in_one_branch_of_a_tensor_condition():
    f = transpile.function(list_grown_in_one_branch)
    np.testing.assert_allclose(f(2.0), [0.0, 2.0, 4.0])
    assert len(f(-2.0)) == 0


def lists_across_loops(x, n):
    acc = []
    for i in range(n):
        acc.append(x * i)
    acc.append(x * 100)
    for k in range(2):
        acc.append(x - k)
    for i in range(n):
        if i % 2 == 0:
            acc.append(x + i)
    return np.stack(acc), len(acc)


def test_a_list_built_in_a_graph_loop_stays_a_list():
    assert_converted_equivalent(lists_across_loops, (2.0, 3), (2.0, 0))


def list_changes_length(x, n):
    h = [x]
    i = 0
    while i < n:
        h = [h[0] * 2, 1.0]
        i += 1
    return h


def test_a_list_loop_variable_may_change_its_length():
    f = transpile.function(list_changes_length)
    np.testing.assert_allclose(f(3.0, 2), list_changes_length(3.0, 2))
    np.testing.assert_allclose(f(3.0, 0), list_changes_length(3.0, 0))
