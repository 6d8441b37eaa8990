"""Converted code gives Python's result, or an error that says what to write: the cases where it once
returned a wrong number or failed on valid code (nested defs, lists read in nested loops, weak Python
numbers in nested loops, `and`/`or` on non-bool tensors, static ranges with a tensor break,
containers changed in graph branches and loops, try/except, globals)."""
import numpy as np
import pytest

import transpile
from tests.transpile.helpers import assert_converted_equivalent

A = np.array([1.0, -2.0, 3.0, 4.0, -5.0])


# --------------------------------------------------------------------------- nested defs keep their returns

def nested_def_before_a_nested_return(x):
    def half(t):
        return t * 0.5
    s = half(x)
    if x > 0:
        if x > 1:
            return s
    return s


def nested_def_with_loop_returns_in_a_graph_loop(x, n):
    s = 0.0
    for i in range(n):
        def step(t):
            for k in range(3):
                if t > k:
                    return t - k
            return t
        s = s + step(x)
        if s > 3:
            return s
    return -s


def nested_defs_with_breaks_and_returns(x):
    def outer(t):
        def inner(u):
            if u > 0:
                return u * 2
            return -u
        while t < 10:
            t = inner(t) + 1
            if t > 5:
                break
        return t
    if x > 0:
        return outer(x)
    return x


def nested_generator_def(x):
    def values():
        yield 1
        yield 2
    s = x
    for v in values():
        s = s + v
    return s


@pytest.mark.parametrize("fn,argsets", [
    (nested_def_before_a_nested_return, [(0.5,), (2.0,), (-1.0,)]),
    (nested_def_with_loop_returns_in_a_graph_loop, [(2.5, 4), (0.5, 4), (0.5, 0)]),
    (nested_defs_with_breaks_and_returns, [(0.5,), (-1.0,)]),
    (nested_generator_def, [(1.0,)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_nested_def_keeps_its_own_return(fn, argsets):
    assert_converted_equivalent(fn, *argsets)


def assert_same_dtype(fn, *args):
    """The converted result has the value and the numpy dtype of the plain Python result."""
    want, got = fn(*args), transpile.function(fn)(*args)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype, (np.asarray(got).dtype, np.asarray(want).dtype)


# --------------------------------------------------------------------------- lists read in the loops that append

def length_read_in_an_inner_loop_before_the_append(n, m):
    acc = []
    s = 0
    for j in range(n):
        for i in range(m):
            s = s + len(acc)
        acc.append(0.1)
    return s


def list_iterated_before_its_first_append(n, x):
    acc = []
    for i in range(n):
        t = 0.0
        for e in acc:
            t = t + e
        acc.append(x + t)
    return acc


def list_indexed_by_a_tensor_in_the_branch_traced_first(n, x, left):
    states = []
    for i in range(n):
        if i > 0:
            states.append(states[left[i]] * 2.0)
        else:
            states.append(x)
    return states


def int_list_summed_before_its_append(n):
    acc = []
    for i in range(n):
        s = 0
        for e in acc:
            s = s + e
        acc.append(s + i)
    return acc


def last_state_read_before_the_append(n, x):
    hs = []
    h = x
    for i in range(n):
        if len(hs) > 0:
            h = np.tanh(hs[-1] * 0.5 + x)
        hs.append(h)
    return np.stack(hs)


@pytest.mark.parametrize("fn,argsets", [
    (length_read_in_an_inner_loop_before_the_append, [(3, 3), (2, 4), (0, 2), (3, 0)]),
    (list_iterated_before_its_first_append, [(3, 1.0), (1, 2.0)]),
    (list_indexed_by_a_tensor_in_the_branch_traced_first, [(3, 1.5, np.array([0, 0, 1]))]),
    (int_list_summed_before_its_append, [(4,), (1,)]),
    (last_state_read_before_the_append, [(3, np.ones(2)), (1, np.ones(2))]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_list_read_in_the_loop_that_appends_to_it(fn, argsets):
    assert_converted_equivalent(fn, *argsets)


@pytest.mark.filterwarnings("error")
def test_the_element_dtype_of_a_list_read_before_its_first_append_is_python_s():
    assert_same_dtype(list_iterated_before_its_first_append, 3, np.float32(1.0))
    assert_same_dtype(int_list_summed_before_its_append, 4)
    assert_same_dtype(last_state_read_before_the_append, 3, np.ones(2, np.float32))


# --------------------------------------------------------------------------- weak Python numbers in graph loops

def int_accumulating_floats_in_nested_loops(n, x):
    s = 0
    for i in range(n):
        s = s + 1
        for j in range(n):
            s = s + x * 0.5
    return s


def float_variable_assigned_a_python_int(n, x):
    d = x
    for i in range(n):
        d = 0
    return d


def float_sum_of_float32_items(n, v):
    s = 0.0
    for i in range(n):
        s = s + v[i]
    return s


def float_sum_over_float32_array(v):
    s = 0.0
    for e in v:
        s += e
    return s


def float_sum_in_nested_loops(n, v):
    s = 0.0
    for i in range(n):
        for j in range(n):
            s = s + v[j]
    return s


def int_sum_under_a_condition(n, v):
    s = 0
    for i in range(n):
        if v[i] > 0:
            s = s + v[i]
    return s


@pytest.mark.parametrize("fn,argsets", [
    (int_accumulating_floats_in_nested_loops, [(3, 1.0), (0, 1.0)]),
    (float_variable_assigned_a_python_int, [(3, 1.5), (0, 1.5)]),
    (float_sum_of_float32_items, [(3, np.ones(3, np.float32))]),
    (float_sum_over_float32_array, [(np.arange(3, dtype=np.float32),)]),
    (float_sum_in_nested_loops, [(2, np.arange(3, dtype=np.float32))]),
    (int_sum_under_a_condition, [(3, np.array([1.0, -1.0, 2.0], np.float32))]),
], ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.filterwarnings("error")
def test_python_numbers_are_weak_in_graph_loops(fn, argsets):
    assert_converted_equivalent(fn, *argsets)
    if fn is not float_variable_assigned_a_python_int:  # (Python's 0 takes the variable's float64: 0.0)
        assert_same_dtype(fn, *argsets[0])  # (a loop that runs zero times leaves Python's number as it was)


# --------------------------------------------------------------------------- `and` / `or` on non-bool tensors

def int_and_comparison_as_an_if_test(m, x):
    if m and x > 0:
        return x
    return -x


def comparison_and_int_as_a_while_test(m):
    k = 0
    while k < 3 and m:
        k += 1
    return k


def int_as_a_while_test_with_a_break(m):
    k = 0
    while m:
        k += 1
        m = m - 1
        if k > 5:
            break
    return k


def float_or_in_tests_and_values(m, x):
    y = x if m or x else -x
    z = not (m and x)
    assert m or x > -1, "m or x"
    w = m or x
    return y, z, w


@pytest.mark.parametrize("fn,argsets", [
    (int_and_comparison_as_an_if_test, [(2, 1.0), (0, 1.0), (2, -1.0)]),
    (comparison_and_int_as_a_while_test, [(1,), (0,)]),
    (int_as_a_while_test_with_a_break, [(3,), (9,), (0,)]),
    (float_or_in_tests_and_values, [(0, 1.0), (2, 0.0), (0, 0.0)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_and_or_on_non_bool_tensors_used_as_truth_values(fn, argsets):
    assert_converted_equivalent(fn, *argsets)


def test_and_or_as_a_truth_value_reads_as_python():
    source = transpile.to_code(int_and_comparison_as_an_if_test)
    assert "ag.and_(ag.bool(m), lambda : x > 0)" in source


# --------------------------------------------------------------------------- globals

COUNT = 0


def increments_a_global(n):
    global COUNT
    for i in range(n):
        COUNT = COUNT + 1
    return COUNT


def test_a_global_changed_in_a_python_loop_keeps_python_semantics():
    global COUNT
    COUNT = 0
    assert transpile.function(increments_a_global, static_argnames=("n",))(3) == 3 and COUNT == 3


def test_a_global_changed_in_a_graph_loop_is_assigned_after_each_run():
    global COUNT
    COUNT = 0
    f = transpile.function(increments_a_global)
    assert f(3) == 3 and COUNT == 3
    assert f(2) == 5 and COUNT == 5     # (read at each call from now on: it changes between calls)
    assert f(0) == 5 and COUNT == 5


# --------------------------------------------------------------------------- dicts changed in graph branches and loops

def nested_dict_item_set_in_a_tensor_if(x):
    d = {"a": {"v": x}}
    if x > 0:
        d["a"]["v"] = x * 2
    return d


def nested_list_item_set_in_a_tensor_if(x):
    d = {"a": [x, x]}
    if x > 0:
        d["a"][1] = x * 2
    else:
        d["a"][0] += 1.0
    return d


def dict_gains_a_key_in_a_graph_loop(n, x):
    d = {"t": 0.0}
    for i in range(n):
        d["s"] = x * i
        if d["s"] > 1:
            d["t"] = d["t"] + d["s"]
    return d


def nested_dict_gains_keys_in_a_graph_loop(n, x):
    d = {"a": {}}
    for i in range(n):
        d["a"]["k"] = x + i
        d["a"]["j"] = d["a"]["k"] * 2
    return d["a"]["j"] + 1


@pytest.mark.parametrize("fn,argsets", [
    (nested_dict_item_set_in_a_tensor_if, [(1.0,), (-1.0,)]),
    (nested_list_item_set_in_a_tensor_if, [(1.0,), (-1.0,)]),
    (dict_gains_a_key_in_a_graph_loop, [(3, 1.0), (1, 2.0)]),
    (nested_dict_gains_keys_in_a_graph_loop, [(3, 1.0)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_containers_changed_in_graph_branches_and_loops(fn, argsets):
    assert_converted_equivalent(fn, *argsets)


def test_a_dict_key_first_assigned_in_a_loop_that_runs_zero_times_is_named_when_the_graph_runs():
    converted = transpile.function(dict_gains_a_key_in_a_graph_loop)
    with pytest.raises(Exception, match=r"d\['s'\] is used .* but was never assigned: the for loop at .*"
                                        r"test_exact_semantics.py:\d+, which ran zero times"):
        converted(0, 1.0)


# --------------------------------------------------------------------------- static loops with a tensor-dependent exit

class Layers:
    def __init__(self):
        self.weights = [np.eye(2) * 0.5, np.eye(2) * 2.0, np.eye(2) * 3.0]

    def forward(self, x, limit):
        h = x
        for i in range(3):
            h = self.weights[i] @ h
            if np.sum(h) > limit:
                break
        return h


def python_list_with_a_tensor_break(x, limit):
    h = x
    for w in [0.5, 2.0, 3.0]:
        h = h * w
        if h > limit:
            break
    return h


def static_range_with_a_tensor_return(x, limit):
    scales = {0: 1.5, 1: -2.0, 2: 0.5}
    for i in range(3):
        x = x * scales[i]
        if x > limit:
            return x, i
    return x, -1


@pytest.mark.parametrize("fn,argsets", [
    (Layers().forward, [(np.ones(2), 0.5), (np.ones(2), 100.0)]),
    (python_list_with_a_tensor_break, [(1.0, 0.7), (1.0, 100.0), (-1.0, 0.0)]),
    (static_range_with_a_tensor_return, [(1.0, 1.0), (1.0, 100.0), (-1.0, 2.0)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_static_loop_with_a_tensor_exit_keeps_its_items_python_values(fn, argsets):
    assert_converted_equivalent(fn, *argsets)


# --------------------------------------------------------------------------- try / except

TABLE = {"a": 1.0}


def except_of_a_python_error_while_tracing(x, key):
    try:
        y = x * TABLE[key]
    except KeyError:
        y = -x
    if y > 0:
        y = y + 1
    return y


def raise_in_a_tensor_branch_that_no_except_catches(x):
    try:
        if x > 0:
            raise ValueError("positive")
        y = x
    except KeyError:
        y = -x
    return y


def raise_in_a_tensor_branch_caught_by_except(x):
    try:
        if x > 0:
            raise ValueError("positive")
        y = x
    except ValueError:
        y = -x
    return y


def graph_assert_caught_by_except(x):
    try:
        assert x > 0, "x must be positive"
        y = x
    except AssertionError:
        y = 0.0
    return y


def python_error_in_a_graph_loop_caught_by_except(n, x):
    try:
        for i in range(n):
            x = x + TABLE["b"]
    except Exception:
        x = -x
    return x


def test_except_catches_what_python_raises_while_tracing():
    assert_converted_equivalent(except_of_a_python_error_while_tracing, (2.0, "b"), (2.0, "a"),
                                static_argnames=("key",))


def test_a_raise_in_a_tensor_branch_that_no_except_catches_fails_when_taken():
    converted = assert_converted_equivalent(raise_in_a_tensor_branch_that_no_except_catches, (-1.0,))
    with pytest.raises(Exception, match="ValueError: positive"):
        converted(1.0)


@pytest.mark.parametrize("fn,args,raised,handler", [
    (raise_in_a_tensor_branch_caught_by_except, (np.float64(1.0),), "ValueError('positive') at {file}:{def_line_plus_3}",
     "`except ValueError` at {file}:{def_line_plus_5}"),
    (graph_assert_caught_by_except, (np.float64(1.0),), "AssertionError('x must be positive') at {file}:{def_line_plus_2}",
     "`except AssertionError` at {file}:{def_line_plus_4}"),
    (python_error_in_a_graph_loop_caught_by_except, (2, 1.0), "KeyError(\"'b'\") at {file}:{def_line_plus_3}",
     "`except Exception` at {file}:{def_line_plus_4}"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_an_exception_that_happens_when_the_graph_runs_cannot_be_caught(fn, args, raised, handler):
    """The error names what is raised where and the except clause, and that clause does not swallow it."""
    line = fn.__code__.co_firstlineno
    fields = {"file": __file__, **{f"def_line_plus_{k}": line + k for k in range(1, 6)}}
    with pytest.raises(transpile.StagingError) as info:
        transpile.function(fn)(*args)
    message = str(info.value)
    assert raised.format(**fields) in message and handler.format(**fields) in message, message
    assert "Decide with a value instead of an exception" in message


# --------------------------------------------------------------------------- found by the random programs

def list_truth_value_in_the_loop_that_appends(n, x):
    acc = []
    s = 0.0
    for i in range(n):
        if acc:
            s = s + acc[-1]
        acc.append(x + i)
    return s, bool(acc), not acc


def python_number_that_a_graph_loop_makes_a_python_float(n, x):
    b = 0.25
    c = 0
    if x > 0:
        for e in np.arange(n):
            c = c + b * 0.5
    return c


def returns_of_an_int_and_a_float(n, x):
    c = 0
    if x > 1:
        return x, c
    for i in range(n):
        c = c + x * 0.5
        if c > 2:
            return x, c
    return -x, c


APPEND = False


def list_read_in_a_loop_that_never_appends_to_it(n, x):
    acc = []
    b = x
    for i in range(n):
        b = b + acc[-1] if len(acc) > 0 else b - 0.25
        if APPEND:
            acc.append(b)
    return b, acc


@pytest.mark.parametrize("fn,argsets", [
    (list_truth_value_in_the_loop_that_appends, [(3, 1.0), (0, 1.0)]),
    (list_read_in_a_loop_that_never_appends_to_it, [(3, 1.0), (0, 1.0)]),
    (python_number_that_a_graph_loop_makes_a_python_float, [(3, 1.0), (3, -1.0)]),
    (returns_of_an_int_and_a_float, [(3, 2.0), (9, 1.0), (2, 0.5)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_cases_the_random_programs_found(fn, argsets):
    assert_converted_equivalent(fn, *argsets)


def numpy_int_that_a_graph_loop_adds_floats_to(n):
    i = 0
    s = np.int32(0)
    while i < n:
        s = s + 1.5
        i += 1
    return s


def python_int_from_an_inner_loop_summing_floats_later(n, x):
    c = 0
    for i in range(n):
        for j in range(n):
            c = 0
    for k in range(n):
        c = c + x * 0.5
    return c


def test_a_loop_variable_whose_dtype_the_body_changes_is_promoted_with_a_warning():
    with pytest.warns(UserWarning, match=r"variable 's' is a int32\[\] tensor before the while loop at .* and a "
                                         r"float64\[\] tensor after an iteration; it is float64 from the start"):
        assert_converted_equivalent(numpy_int_that_a_graph_loop_adds_floats_to, (3,), (0,))
    assert_converted_equivalent(python_int_from_an_inner_loop_summing_floats_later, (3, 1.0), (0, 1.0))


# --------------------------------------------------------------------------- Python numbers through graph control flow

def halved_in_a_branch_then_summing_float32(n, x, arr):
    s = 0.0
    w = arr.astype(np.float32)
    if x > 0:             # a graph cond: both sides leave s a Python float
        s = s * 0.5
    for i in range(n):
        s = s + w[0]      # numpy: float32
    return s


def halved_in_a_loop_then_summing_float32(n, x, arr):
    s = 0.0
    w = arr.astype(np.float32)
    for i in range(n):
        for j in range(n):
            s = s * 0.5   # still a Python float after the inner loop
        s = s + w[0]
    for e in arr:
        s = s * 0.5
    return s + w[1]


def halved_in_a_loop_else_then_summing_float32(n, x, arr):   # the case the random programs found
    s = 0.0
    w = arr.astype(np.float32)
    i0 = 0
    while i0 < n:
        i0 += 1
        if x > 5:
            break
    else:
        s = s * 0.5
    i3 = 0
    while i3 < n:
        i3 += 1
        i4 = 0
        while i4 < n:
            i4 += 1
            s = min(s, 1.0) * 0.5
        s = s + w[0]
    return s


def a_python_number_beside_a_float64_value_stays_float64(n, x, arr):
    s = 0.5
    if x > 0:
        s = s * 0.5
    return s + arr[0] + s * n   # float64 array element, int64 tensor: numpy gives float64


@pytest.mark.parametrize("fn", [halved_in_a_branch_then_summing_float32, halved_in_a_loop_then_summing_float32,
                                halved_in_a_loop_else_then_summing_float32,
                                a_python_number_beside_a_float64_value_stays_float64], ids=lambda f: f.__name__)
def test_a_python_number_that_graph_control_flow_keeps_a_number_takes_numpys_weak_dtype(fn):
    converted = transpile.function(fn)
    for n, x in ((3, 0.5), (2, -1.0), (1, 7.0)):
        arr = np.array([1.5, -2.0, 0.25])
        want, got = fn(n, x, arr), converted(n, x, arr)
        assert np.asarray(got).dtype == np.asarray(want).dtype, (n, x)
        np.testing.assert_allclose(got, want, rtol=1e-6)
