"""Random programs where graph loop indices and Python-int counters meet float32, float16 and narrow
integer arrays and a list of ints (programs.index_programs): converted == plain Python, values, dtypes and
Python types (an index or counter is a Python int, weak beside arrays, as in numpy 2)."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import transpile
from tests.transpile.idioms import assert_same, assert_same_types
from tests.transpile.programs import define, forget, index_programs

_floats = st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 2))
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=60, **_SETTINGS)
@given(index_programs(), st.integers(0, 3), _floats, st.lists(_floats, min_size=3, max_size=3))
def test_converted_index_program_matches_python_values_and_types(source, n, x, arr):
    fn, filename = define(source)
    try:
        want = fn(n, x, np.array(arr))
        got = transpile.function(fn)(n, x, np.array(arr))
        try:
            assert_same(got, want)
            assert_same_types(got, want)
        except AssertionError as e:
            raise AssertionError(f"{e}\nprogram:\n{source}\ninputs: {(n, x, arr)}") from None
    finally:
        forget(filename)
