"""Random programs with nested control flow: converted (tensor inputs) == plain Python, run as compiled
code or by the dataflow executor (each example draws one)."""
import contextlib
import io

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import transpile
from tests.transpile.helpers import _same
from tests.transpile.programs import define, forget, programs

_floats = st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 2))
_modes = st.sampled_from(["compiled", "dataflow"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(max_depth=3, max_statements=20), st.integers(0, 3), _floats, st.lists(_floats, min_size=3, max_size=3),
       _modes)
def test_converted_random_program_matches_python(source, n, x, arr, mode):
    fn, filename = define(source)
    try:
        want = fn(n, x, np.array(arr))
        got = transpile.function(fn, mode=mode)(n, x, np.array(arr))
        try:
            _same(got, want)
        except AssertionError as e:
            raise AssertionError(f"{e}\nprogram:\n{source}\ninputs: n={n} x={x} arr={arr}") from None
    finally:
        forget(filename)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(max_depth=4, max_statements=25, prints=True), st.integers(0, 3), _floats,
       st.lists(_floats, min_size=3, max_size=3), _modes)
def test_random_program_prints_and_lists_match_python(source, n, x, arr, mode):
    """Deeper programs with prints (compared line by line) and lists appended to in loops."""
    fn, filename = define(source)
    try:
        python_out, graph_out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(python_out):
            want = fn(n, x, np.array(arr))
        with contextlib.redirect_stdout(graph_out):
            got = transpile.function(fn, mode=mode)(n, x, np.array(arr))
        try:
            _same(got, want)
            assert graph_out.getvalue() == python_out.getvalue()
        except AssertionError as e:
            raise AssertionError(f"{e}\nprogram:\n{source}\ninputs: n={n} x={x} arr={arr}") from None
    finally:
        forget(filename)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(max_depth=2, max_statements=10), st.integers(0, 3), _floats, _modes)
def test_random_program_gives_the_same_result_on_every_call(source, n, x, mode):
    """One trace, many runs: a graph does not remember anything from an earlier run."""
    fn, filename = define(source)
    try:
        compiled = transpile.function(fn, mode=mode)
        for arr in ([1.0, -1.0, 0.5], [0.0, 2.0, -2.0], [1.0, -1.0, 0.5]):
            _same(compiled(n, x, np.array(arr)), fn(n, x, np.array(arr)))
        assert compiled.traces == 1
    finally:
        forget(filename)
