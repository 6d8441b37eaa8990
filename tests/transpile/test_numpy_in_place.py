"""numpy arrays the function makes and writes in place (`a[i] = t`, `a += t`, `out=a`), in straight-line
code, in graph branches and in graph loops: converted == plain Python, aliases included."""
import inspect

import numpy as np
import pytest

import transpile
from tests.transpile.helpers import assert_converted_equivalent


def item_of_new_array(t, i):
    buf = np.zeros(4)
    buf[i] = t                     # a graph value into a numpy array
    buf[0] = 7.0
    return buf


def test_a_graph_value_written_into_a_new_array():
    assert_converted_equivalent(item_of_new_array, (2.5, 2), (-1.0, 3))


def in_place_operators(t):
    acc = np.zeros(3)
    acc += t                       # was: np.add(..., out=...) is not supported
    acc *= 2
    other = np.arange(3.0)
    other -= t                     # an array not made by a numpy constructor
    return acc, other


def test_in_place_operators_on_new_arrays():
    assert_converted_equivalent(in_place_operators, (np.array([1.0, 2.0, 3.0]),), (np.zeros(3),))


def clip_through_aliases(a, b):
    da, db = np.zeros_like(a), np.zeros_like(b)
    da += a * 10
    db += b * 10
    for d in [da, db]:             # the list holds the same arrays as the names
        np.clip(d, -5, 5, out=d)
    return da, db


def test_out_argument_writes_the_array_every_reference_sees():
    assert_converted_equivalent(clip_through_aliases, (np.array([1.0, -2.0]), np.array([0.1, 0.9, -0.3])))


def dtype_kept(t):
    counts = np.zeros(3, dtype=np.int64)
    counts[1] = t                  # numpy casts an assigned float to the array's dtype
    return counts


def test_item_assignment_keeps_the_arrays_dtype():
    f = assert_converted_equivalent(dtype_kept, (2.7,), (-1.2,))
    assert f(2.7).dtype == np.int64


def levenshtein(seq1, seq2):
    size_x, size_y = len(seq1) + 1, len(seq2) + 1
    matrix = np.zeros((size_x, size_y))
    for x in range(size_x):
        matrix[x, 0] = x
    for y in range(size_y):
        matrix[0, y] = y
    for x in range(1, size_x):
        for y in range(1, size_y):
            if seq1[x - 1] == seq2[y - 1]:      # a graph cond: both branches write the array
                matrix[x, y] = min(matrix[x - 1, y] + 1, matrix[x - 1, y - 1], matrix[x, y - 1] + 1)
            else:
                matrix[x, y] = min(matrix[x - 1, y] + 1, matrix[x - 1, y - 1] + 1, matrix[x, y - 1] + 1)
    return matrix[size_x - 1, size_y - 1]


def codes(word):
    return np.array([ord(c) for c in word])


def test_writes_in_both_branches_of_a_graph_cond():
    f = assert_converted_equivalent(levenshtein, (codes("kitten"), codes("sitting")),
                                    (codes("flaw"), codes("lawn")))
    assert f(codes("kitten"), codes("sitting")) == 3


def writes_through_an_alias(x, n):
    buf = np.zeros(3)
    alias = buf                    # two names, one array
    if x > 0:
        alias[1] = x
    else:
        alias[2] = -x
    for _ in range(n):             # a graph loop (n is a graph input) writing the array through the alias
        alias[0] += 1.0
    return buf


def test_writes_through_an_alias_in_graph_branches_and_loops():
    assert_converted_equivalent(writes_through_an_alias, (2.0, 3), (-1.0, 0), (5.0, 1))


def rows_written_in_a_loop(xs):
    out = np.zeros((3, 2))
    rows = [out]                   # the array is also reached through a list
    for i in range(len(xs)):       # len of an array argument is static: a Python loop
        if xs[i] > 0:
            rows[0][i] = xs[i]     # a chained item assignment
    return out


def test_chained_item_assignment_in_graph_branches():
    assert_converted_equivalent(rows_written_in_a_loop, (np.array([1.0, -2.0, 3.0]),))


def grouped(xs, keys):
    groups = [[], [], []]
    for i in range(len(keys)):     # keys is an array argument of known length: a Python loop
        groups[keys[i]].append(xs[i])      # a graph index: which list grows is decided at run time
    return [np.sum(g) for g in groups]


def test_append_to_the_list_at_a_graph_index():
    f = transpile.function(grouped)
    xs, keys = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 2, 0, 1])
    assert [float(v) for v in f(xs, keys)] == [4.0, 4.0, 2.0]
    np.testing.assert_allclose(f(xs, np.array([2, 2, 2, 2])), [0.0, 0.0, 10.0])


def grouped_in_a_graph_loop(points, centers):
    clusters = [[] for _ in range(len(centers))]
    for i, x in enumerate(points):             # a graph loop over the rows of an array argument
        clusters[np.argmin(np.abs(centers - x))].append(i)
    return clusters


def test_append_at_a_graph_index_in_a_graph_loop():
    points, centers = np.array([0.1, 5.2, 9.9, 4.8, 0.3]), np.array([0.0, 5.0, 10.0])
    got = transpile.function(grouped_in_a_graph_loop)(points, centers)
    assert [list(c) for c in got] == grouped_in_a_graph_loop(points, centers) == [[0, 4], [1, 3], [2]]


def dict_in_a_graph_loop(x, n):
    hs = {-1: x}
    for t in range(n):                         # n is a graph input: t is a graph tensor
        hs[t] = np.tanh(hs[t - 1])             # <- error
    return hs[n - 1]


def test_a_dict_read_with_a_graph_key_names_the_line():
    with pytest.raises(transpile.StagingError) as info:
        transpile.function(dict_in_a_graph_loop)(np.ones(2), 3)
    lines, first = inspect.getsourcelines(dict_in_a_graph_loop)
    line = first + next(i for i, t in enumerate(lines) if "# <- error" in t)
    assert f"{__file__}:{line}: a dict is read with a graph-tensor key" in str(info.value)
