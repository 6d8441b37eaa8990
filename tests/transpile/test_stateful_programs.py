"""Random programs that keep numpy state between calls (tests/transpile/stateful_programs.py): over
several successive calls, with the state changed between them, the converted program gives the plain
program's results and leaves the state as the plain program does, second names of its arrays included.
A numpy array converted code did not make (a library's) that another name refers to and that gets a
graph value cannot follow the write: converting is an error naming both."""
import inspect
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import transpile
from tests.transpile.stateful_programs import define, forget, stateful_programs
from transpile.operators import StagingError

_floats = st.floats(-1, 1, allow_nan=False).map(lambda v: round(v, 2))


def _calls(namespace, fn, inputs):
    out = []
    for k, (x, n) in enumerate(inputs):
        out.append((float(fn(x, n)), *namespace["state"]()))
        namespace["between_calls"](k)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stateful_programs(), st.lists(st.tuples(st.lists(_floats, min_size=3, max_size=3), st.integers(0, 2)),
                                      min_size=3, max_size=4))
def test_converted_stateful_program_matches_python_over_successive_calls(source, calls):
    inputs = [(np.array(x), n) for x, n in calls]
    plain, plain_file = define(source)
    converted, converted_file = define(source)
    try:
        want = _calls(plain, plain["program"], inputs)
        got = _calls(converted, transpile.function(converted["program"]), inputs)
        for k, (g, w) in enumerate(zip(got, want)):
            for name, a, b in zip(("result", "G", "box.w", "box.rate"), g, w):
                np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12,
                                           err_msg=f"call {k}: {name}\nprogram:\n{source}\ninputs: {calls}")
    finally:
        forget(plain_file)
        forget(converted_file)


# --------------------------------------------------------------------------- second names of arrays

class _Holder:
    pass


_holder = _HELD = None


def _alias_local(x):
    a = np.arange(3) * 2.0
    b = a
    a[1] = x                      # write
    return b


def _alias_attribute(x):
    a = np.arange(3) * 2.0
    _holder.arr = a
    a[1] = x                      # write
    return _holder.arr


def _alias_global(x):
    global _HELD
    a = np.arange(3) * 2.0
    _HELD = a
    a += x                        # write
    return _HELD


def _alias_list_item(x):
    a = np.arange(3) * 2.0
    rows = [a]
    a[0] = x                      # write
    return rows[0]


def _written_by_callee(a, x):
    a[0] = x                      # write


def _alias_callers_variable(x):
    a = np.arange(3) * 2.0
    _written_by_callee(a, x)
    return a


def _alias_view(x):
    a = np.arange(6) * 1.0
    head = a[:3]
    a[0] = x                      # write
    return head


def _alias_in_a_graph_branch(x):
    a = np.arange(3) * 2.0
    b = a
    if x > 0:
        a[2] = 7.0                # write
    return b


@pytest.mark.parametrize("fn", [_alias_local, _alias_attribute, _alias_global, _alias_list_item,
                                _alias_callers_variable, _alias_view, _alias_in_a_graph_branch])
def test_every_name_of_an_array_made_by_arithmetic_sees_a_graph_write(fn):
    global _holder
    for x in (1.5, np.float64(-0.5)):
        _holder = _Holder()
        want = fn(x)
        _holder = _Holder()
        got = transpile.function(fn)(x)
        np.testing.assert_array_equal(got, want)


@transpile.do_not_convert
def _library_array():
    return np.arange(3) * 2.0


def _alias_of_a_library_array(x):
    a = _library_array()          # a numpy array converted code did not make
    b = a
    a[1] = x                      # write
    return b


def test_a_graph_write_into_a_library_s_array_that_others_refer_to_is_an_error():
    lines, first = inspect.getsourcelines(_alias_of_a_library_array)
    line = first + next(k for k, text in enumerate(lines) if "# write" in text)
    with pytest.raises(StagingError, match=re.escape(f"{__file__}:{line}: ") + ".*" +
                       re.escape("into numpy array 'a', which is also variable 'b'")):
        transpile.function(_alias_of_a_library_array)(np.float64(1.5))


def _made_by_arithmetic_alone(x, n):
    a = np.arange(3) * 2.0
    a[1] = x
    if x > 0:
        a[2] = x * 2.0
    for i in range(n):
        a[i % 3] += 1.0
    r = (np.arange(6) * 1.0).reshape(2, 3)   # a view of an array nothing else refers to
    r[0, 1] = x
    return a, r


def test_an_array_made_by_arithmetic_that_nothing_else_refers_to_takes_graph_writes_as_python_does():
    f = transpile.function(_made_by_arithmetic_alone)
    for x, n in ((1.5, 2), (-0.5, 0), (2.0, 4)):
        for got, want in zip(f(x, n), _made_by_arithmetic_alone(x, n), strict=True):
            np.testing.assert_array_equal(got, want)
