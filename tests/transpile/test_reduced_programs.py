"""Reduced programs of what once differed from plain Python (transpile/README.md's known limits, and the
corpus's former xfails): converted == plain Python, values and dtypes, in both execution modes."""
import numpy as np

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
