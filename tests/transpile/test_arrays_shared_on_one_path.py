"""An array that a name keeps on one path of a graph `if` and loses on the other (`al = buf`, then one
branch binds a new array to `buf`): after the `if`, writes through either name reach the other on the path
where they are still one numpy array, as in Python, and views of it are views."""
import numpy as np
import pytest

import transpile
from tests.transpile.idioms import assert_same
from transpile.operators.staging import StagingError


def written_after_the_if(x):
    b = 0.5
    buf = np.zeros(3)
    al = buf
    if b < x:
        nb = np.zeros_like(buf)
        nb[0] = buf[0] * 0.5 + b
        buf = nb
    buf[0] = b
    return buf, al


def rebound_in_the_false_branch(x):
    buf = np.ones(3)
    al = buf
    if x > 0:
        buf[1] = x
    else:
        buf = buf * 2.0
    buf[2] = 7.0
    return buf, al


def the_alias_written(x):
    buf = np.zeros(3)
    al = buf
    if x > 0:
        buf = np.ones(3)
    al[1] = 5.0
    return buf, al


def a_view_after_the_if(x):
    buf = np.zeros((2, 3))
    al = buf
    if x > 0:
        buf = buf + 1.0
    row = buf[1]
    buf[1, 2] = 9.0
    return row, al


def written_in_a_later_loop(x, n):
    buf = np.zeros(3)
    al = buf
    if x > 0:
        buf = np.ones(3)
    for i in range(n):
        buf[i % 3] += 1.0
    return buf, al


def written_in_a_later_if(x, y):
    buf = np.zeros(3)
    al = buf
    if x > 0:
        buf = np.ones(3)
    if y > 0:
        buf[0] = y
    return buf, al


@pytest.mark.parametrize("mode", ["compiled", "dataflow"])
@pytest.mark.parametrize("program, args", [
    (written_after_the_if, [(0.0,), (1.0,)]),
    (rebound_in_the_false_branch, [(-1.0,), (1.5,)]),
    (the_alias_written, [(-1.0,), (1.0,)]),
    (a_view_after_the_if, [(-1.0,), (1.0,)]),
    (written_in_a_later_loop, [(-1.0, 4), (1.0, 4), (-1.0, 0)]),
    (written_in_a_later_if, [(-1.0, 2.0), (1.0, 2.0), (-1.0, -2.0), (1.0, -2.0)]),
])
def test_names_of_one_array_on_one_path_see_each_others_writes(program, args, mode):
    f = transpile.function(program, mode=mode)
    for a in args:
        assert_same(f(*a), program(*a), f"{program.__name__}{a}")


def test_a_shape_that_differs_between_the_paths_is_refused_naming_the_if():
    def grown(x):
        buf = np.zeros(3)
        al = buf
        if x > 0:
            buf = np.zeros(4)
        buf[0] = 1.0
        return buf, al

    with pytest.raises(StagingError, match=r"after the `if` at .*test_arrays_shared_on_one_path.py:\d+.*Copy"):
        transpile.function(grown)(1.0)


def rebound_by_a_loop_then_written(n):
    buf = np.zeros(3)
    for i in range(n):
        buf = buf + 1.0
    buf[0] = 5.0
    row = buf[1:]
    buf[2] = 3.0
    return buf, row


def written_by_a_loop_that_keeps_the_array(n):
    buf = np.zeros(3)
    al = buf
    for i in range(n):
        buf[i % 3] += 1.0
    buf[0] = 5.0
    return buf, al


@pytest.mark.parametrize("program", [rebound_by_a_loop_then_written, written_by_a_loop_that_keeps_the_array])
def test_an_array_a_graph_loop_rebinds_or_writes_is_numpys_after_it(program):
    f = transpile.function(program)
    for n in (0, 1, 4):
        assert_same(f(n), program(n), f"{program.__name__}({n})")


def test_a_write_another_name_sees_only_if_a_loop_ran_zero_times_is_refused_naming_it():
    # Python: `al` sees the write when n == 0 only; a graph does not know at trace time
    def program(n):
        buf = np.zeros(3)
        al = buf
        for i in range(n):
            buf = buf + 1.0
        buf[0] = 5.0
        return buf, al

    with pytest.raises(StagingError, match=r"after the for loop at .*:\d+.*variable 'al' on some of the paths"):
        transpile.function(program)(2)


def test_an_inner_if_that_rebinds_on_one_of_its_paths_is_refused_where_the_alias_would_see_it():
    # the outer `if` leaves `buf` on its true path; its false path leaves it where the inner `if` does not
    # bind a new array: Python's `al` sees the write on those paths only
    def program(x, y):
        buf = np.zeros(3)
        al = buf
        if x > 0:
            pass
        elif y > 0:
            buf = np.ones(3)
        buf[0] = 2.0
        return buf, al

    with pytest.raises(StagingError, match=r"variable 'al' on some of the paths"):
        transpile.function(program)(1.0, 1.0)
