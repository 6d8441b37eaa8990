"""The indices of graph loops (`range`, `enumerate`) and Python-int counters are Python ints, as in the
plain program: weak beside arrays (numpy 2, NEP 50: `x32 * i` is float32, `int8_array + i` int8), ints
again where the function returns them or a list of them, and an int that does not fit a narrow integer
array is an error (numpy's OverflowError), not a wrapped value. Reduced programs, both execution modes,
values, dtypes and Python types."""
import numpy as np
import pytest

import transpile
from exec.errors import RunError
from tests.transpile.idioms import MODES, assert_like_python, assert_same_types


def assert_like_python_types(fn, *argsets):
    """assert_like_python, and the results' Python types are the plain program's."""
    converted = assert_like_python(fn, *argsets)
    for args in argsets:
        for mode in MODES:
            assert_same_types(converted[mode](*args), fn(*args), f"{mode}: result")


def scaled_by_the_index(x, n):
    y = x
    for i in range(n):
        y = x * i + y
    return y


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int16, np.uint8, np.float64])
def test_a_range_index_is_a_weak_python_int_beside_arrays(dtype):
    assert_like_python_types(scaled_by_the_index, (np.ones(3, dtype), 3), (np.ones(3, dtype), 0))


def offset_by_the_enumerate_count(x, n):
    y = x
    for i, e in enumerate(x[:n]):
        y = y + i
    for j, e in enumerate(x[:n], 2):
        y = y - j
    return y


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_an_enumerate_count_is_a_weak_python_int(dtype):
    assert_like_python_types(offset_by_the_enumerate_count, (np.ones(3, dtype), 3), (np.ones(3, dtype), 0))


def range_with_int32_bounds(x, n):
    y = x
    for i in range(n, n + 3):
        y = y + i
    return y, i


def test_the_items_of_a_range_of_numpy_ints_are_python_ints():
    assert_like_python_types(range_with_int32_bounds, (np.ones(2, np.float32), np.int32(2)))


def indices_collected(n):
    out = []
    for i in range(n):
        out.append(i)
    return out


def test_a_list_of_loop_indices_holds_python_ints():
    assert_like_python_types(indices_collected, (3,))


def floats_collected(n):
    out = []
    for i in range(n):
        out.append(i * 0.5)
    return out


def test_a_list_of_python_floats_appended_in_a_graph_loop_holds_python_floats():
    assert_like_python_types(floats_collected, (3,))


def counted(x, n):
    k = 0
    y = x
    steps = []
    for i in range(n):
        k += 2
        y = x + k
        steps.append(k)
    return y, k, steps


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_a_python_int_counter_is_weak_in_the_body_and_an_int_after_the_loop(dtype):
    assert_like_python_types(counted, (np.ones(3, dtype), 3))


def last_index(x, n):
    y = x
    for i in range(n):
        y = x + i
    return y, i


def test_the_index_read_after_the_loop_is_a_python_int():
    assert_like_python_types(last_index, (np.ones(3, np.int8), 3), (np.ones(3, np.float16), 5))


def counter_in_a_while_loop(x, n):
    k = 0
    while k < n:
        x = x * 0.5 + k
        k += 1
    return x, k


def test_a_while_loop_counter_is_a_weak_python_int():
    assert_like_python_types(counter_in_a_while_loop, (np.ones(2, np.float32), 3))


def int8_plus_the_index(x, n):
    for i in range(n):
        x = x * 0 + i
    return x


def test_an_index_out_of_a_narrow_integer_arrays_range_is_an_error_as_in_numpy():
    assert_like_python_types(int8_plus_the_index, (np.ones(2, np.int8), 128), (np.ones(2, np.uint8), 256))
    with pytest.raises(OverflowError):
        int8_plus_the_index(np.ones(2, np.int8), 129)
    for mode in MODES:
        with pytest.raises(RunError, match="Python integer out of bounds for int8"):
            transpile.function(int8_plus_the_index, mode=mode)(np.ones(2, np.int8), 129)


def test_a_counter_through_two_graph_loops_in_a_graph_if_stays_a_python_int():
    # the second loop's `k += 1` adds the constant 1, which the first loop made and the cond's Switch and
    # the loop's Enter pass on: still a Python number (the counter was np.int64 after the `if`)
    def program(n, x):
        k = 0
        if x > 0:
            for _ in range(n):
                k += 1
            for _ in range(n):
                k += 1
        return k

    for mode in MODES:
        f = transpile.function(program, mode=mode)
        for args in ((2, 1.0), (0, 1.0), (2, -1.0)):
            assert_same_types(f(*args), program(*args))
            assert f(*args) == program(*args)
