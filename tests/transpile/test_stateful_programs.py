"""Random programs that keep numpy state between calls (tests/transpile/stateful_programs.py): over
several successive calls, with the state changed between them, the converted program gives the plain
program's results and leaves the state as the plain program does."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import transpile
from tests.transpile.stateful_programs import define, forget, stateful_programs

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
