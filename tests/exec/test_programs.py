"""Executor == compiled code == reference interpreter == plain Python on random nested control flow."""
import numpy as np
from hypothesis import HealthCheck, given, settings

from exec import Session
from exec.reference import run_reference
from tests.exec import programs as P


def _check_equal(got, env, out, what):
    for k in ("i0", "i1", "f0", "v0"):
        np.testing.assert_array_equal(got[k], env[k], err_msg=f"{what}: variable {k}")
        assert np.asarray(got[k]).dtype == np.asarray(env[k]).dtype, (what, k)
    np.testing.assert_array_equal(got["out"], np.asarray(out, np.float64).reshape(-1), err_msg=f"{what}: out")
    assert got["n"] == len(out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(P.programs, P.inputs)
def test_executor_matches_reference_and_python(program, values):
    env, out = P.run_python(program, values)
    for par in (1, 2, 32):
        g, ph, fetches = P.build_graph(program, parallel_iterations=par)
        fd = P.feed(ph, values)
        _check_equal(Session(g, inter_op_threads=0, mode="dataflow").run(fetches, fd), env, out,
                     f"executor par={par}")
        if par == 32:
            _check_equal(run_reference(fetches, fd), env, out, "reference")
            _check_equal(Session(g, inter_op_threads=2, mode="dataflow").run(fetches, fd), env, out,
                         "executor with pool")
            compiled = Session(g, mode="compiled")
            compiled.compiled_source(fetches, fd)  # raises if the plan would fall back to the executor
            _check_equal(compiled.run(fetches, fd), env, out, "compiled")
