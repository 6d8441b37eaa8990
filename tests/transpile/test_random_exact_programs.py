"""Random programs with the constructs that once gave wrong results or failed on valid code (programs.py,
`extended=True`): converted (tensor inputs) == plain Python, values and float precision."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import transpile
from tests.transpile.helpers import _same
from tests.transpile.programs import define, forget, programs

_floats = st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 2))
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _float32_kept(got, want, path="result"):
    """A float32 in Python is one in the graph too (a float64 may be float32 in the graph: a loop that
    ran zero times leaves Python's `s = 0.0` as it was, where the graph has the dtype the loop gives it)."""
    if isinstance(want, dict):
        for k in want:
            _float32_kept(got[k], want[k], f"{path}[{k!r}]")
    elif isinstance(want, (tuple, list)) and isinstance(got, (tuple, list)):
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _float32_kept(g, w, f"{path}[{i}]")
    elif want is not None and np.asarray(want).dtype == np.float32:
        assert np.asarray(got).dtype == np.float32, f"{path}: dtype {np.asarray(got).dtype}, Python's float32"


def assert_matches_python(fn, source, *args):
    want = fn(*args)
    got = transpile.function(fn)(*args)
    try:
        _same(got, want)
        if source.count("return ") == 1:  # (an earlier return in a graph loop holds `s = 0.0` as a float64:
            _float32_kept(got, want)      # transpile/README.md, known limits)
    except AssertionError as e:
        raise AssertionError(f"{e}\nprogram:\n{source}\ninputs: {args}") from None


@settings(max_examples=150, **_SETTINGS)
@given(programs(max_depth=3, max_statements=20, extended=True), st.integers(0, 3), _floats,
       st.lists(_floats, min_size=3, max_size=3))
def test_converted_extended_random_program_matches_python(source, n, x, arr):
    fn, filename = define(source)
    try:
        assert_matches_python(fn, source, n, x, np.array(arr))
    finally:
        forget(filename)


@settings(max_examples=30, **_SETTINGS)
@given(programs(max_depth=2, max_statements=12, extended=True), _floats)
def test_extended_random_program_gives_the_same_result_on_every_call(source, x):
    """One trace, many runs (n and arr change, so loops run zero or more times)."""
    fn, filename = define(source)
    try:
        converted = transpile.function(fn)
        for n, arr in ((2, [1.0, -1.0, 0.5]), (0, [0.0, 2.0, -2.0]), (3, [1.0, -1.0, 0.5])):
            _same(converted(n, x, np.array(arr)), fn(n, x, np.array(arr)))
        assert converted.traces == 1
    finally:
        forget(filename)
