"""Random programs written with everyday idioms (tests/transpile/programs.py, `idioms=True`): arrays
allocated, filled by index and rebound in loop bodies, second names and views, lists resized in loops,
swaps under tensor conditions, float32 arrays beside Python numbers, closures and local classes, calls
that raise inside try, a variable assigned in one branch of an `if` on a Python int argument. Converted
== plain Python, values and dtypes, in both execution modes."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.transpile.idioms import assert_like_python
from tests.transpile.programs import define, forget, programs

_floats = st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 2))
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=120, **_SETTINGS)
@given(programs(max_depth=3, max_statements=16, idioms=True), st.integers(0, 3), _floats,
       st.lists(_floats, min_size=3, max_size=3))
def test_converted_idiom_program_matches_python(source, n, x, arr):
    fn, filename = define(source)
    try:
        assert_like_python(fn, (n, x, np.array(arr)), (0, x, np.array(arr)), python_numbers_may_differ=True)
    except AssertionError as e:
        raise AssertionError(f"{e}\nprogram:\n{source}\ninputs: {n, x, arr}") from None
    finally:
        forget(filename)
