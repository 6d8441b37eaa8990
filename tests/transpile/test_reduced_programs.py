"""Reduced programs of what once differed from plain Python (transpile/README.md's known limits, and the
corpus's former xfails): converted == plain Python, values and dtypes, in both execution modes."""
import numpy as np
import pytest

import transpile
from tests.transpile.idioms import assert_like_python


def unpack_a_state_vector(z0, n):
    z = np.array(z0, dtype=float)
    for _ in range(n):
        x, y = z                      # a float64[2] tensor in the graph loop: its two rows
        z = np.array([1.5 * x - x * y, -3.0 * y + x * y]) * 0.1 + z
    a, b = z
    return a, b


def test_a_tensor_of_known_length_unpacks_into_its_rows():
    assert_like_python(unpack_a_state_vector, (np.array([1.0, 0.5]), 3), (np.array([2.0, 1.0]), 0))


def indices_on_a_stack(a):
    out = np.zeros(len(a), dtype=np.int64)
    stack = []                        # empty: its items' dtype is told by the append after the read
    for i, v in enumerate(a):
        while stack and a[stack[-1]] < v:
            out[stack.pop()] = i
        stack.append(i)
    return out, len(stack)


def test_a_stack_of_loop_indices_read_before_its_first_append_indexes():
    assert_like_python(indices_on_a_stack, (np.array([1.0, 3.0, -1.0, 5.0]),), (np.zeros(0),))


def last_two_kept(a):
    stack = []
    for v in a:
        if len(stack) > 1:
            stack.pop(0)
        stack.append(7)
    return stack


def test_an_empty_list_a_graph_loop_resizes_keeps_its_python_int_items():
    """The list enters the body empty with a guessed item dtype (Python ints); the body's first item told
    the same, and the loop was not built again, so each iteration began from an empty list ([7], not
    [7, 7])."""
    assert_like_python(last_two_kept, (np.arange(5.0),), (np.zeros(1),))


def backtrack_over_reversed_pointers(scores, n):
    pointers = []                     # built in a graph loop: a list whose length the graph decides
    for t in range(n):
        pointers.append(np.argmax(scores[t]))
    path = [0]
    for p in reversed(pointers):
        path.append(int(p) + path[-1])
    return path


def test_reversed_of_a_list_built_in_a_graph_loop_is_iterated_by_a_graph_loop():
    scores = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    assert_like_python(backtrack_over_reversed_pointers, (scores, 3), (scores, 0))


def reversed_python_list_with_a_tensor_exit(n, x):
    acc = [0.5, 1.5, -1.0]
    b = 0.5
    for _ in range(n):
        for e in reversed(acc):       # runs in Python, each iteration in a graph cond on the exit
            b = b + e * 0.25
            if b > x:
                return b
    return b


def test_reversed_python_list_whose_loop_exit_depends_on_a_tensor():
    assert_like_python(reversed_python_list_with_a_tensor_exit, (2, 0.7), (0, 0.7), (3, 5.0))


# --------------------------------------------------------------------------- not fixed yet (transpile/README.md)

def int_sum_of_float_items(n, x):
    s = 0
    for i in range(n):
        s += x[i]
    return s


def float_returned_from_a_loop_or_float32_after(n, x, arr):
    s = 0.0
    w = arr.astype(np.float32)
    for _ in range(n):
        if x > 1.0:
            return s
        s = s * 0.5
    return s + w[0]


@pytest.mark.xfail(strict=True, reason="known limit: a zero-trip loop leaves Python's int 0, the graph a float64")
def test_a_zero_trip_loop_keeps_a_python_int():
    assert_like_python(int_sum_of_float_items, (0, np.ones(3)))


@pytest.mark.xfail(strict=True, reason="known limit: a return from inside a graph loop merges a later float32 "
                                       "return into float64")
@pytest.mark.filterwarnings("ignore:the return value has dtype")
def test_a_float32_returned_after_a_loop_that_returns_a_python_float():
    assert_like_python(float_returned_from_a_loop_or_float32_after, (2, 0.5, np.ones(3)))


def reversed_inside_the_loop_that_appends(n):
    acc = []
    b = 0.5
    for _ in range(n):
        for e in reversed(acc):
            b = b + e * 0.25
        acc.append(b * 0.5)
    return b


def test_reversed_inside_the_loop_that_appends_is_refused_naming_the_line():
    with pytest.raises(Exception, match=r"test_reduced_programs\.py:\d+.*reversed\(\) of a list inside the graph "
                                        r"loop that appends to it"):
        transpile.function(reversed_inside_the_loop_that_appends)(3)
