"""Random programs (nested loops and conds, TensorArrays) with a random device per node compute, partitioned
and run one executor per device, what they compute on one device: values for parallel_iterations 1, 2 and
32, and gradients, whose loops span the devices their forward loops do."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graph
from exec import Session
from exec.multi_device import DevicesPlan
from tests.dist.helpers import loss_and_gradients, scatter, vec, within
from tests.exec import programs as P
from tests.grad import programs as GP

seeds = st.integers(0, 2 ** 31)


def _check_equal(got, env, out, what):
    for k in ("i0", "i1", "f0", "v0"):
        np.testing.assert_array_equal(got[k], env[k], err_msg=f"{what}: variable {k}")
    np.testing.assert_array_equal(got["out"], np.asarray(out, np.float64).reshape(-1), err_msg=f"{what}: out")
    assert got["n"] == len(out)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(P.programs, P.inputs, seeds)
def test_partitioned_programs_match_python(program, values, seed):
    env, out = P.run_python(program, values)
    for par in (1, 2, 32):
        g, ph, fetches = P.build_graph(program, parallel_iterations=par)
        scatter(g, seed + par)
        sess = Session(g, inter_op_threads=0)
        got = within(30, sess.run, fetches, P.feed(ph, values))
        _check_equal(got, env, out, f"partitioned, par={par}")
        again = within(30, sess.run, fetches, P.feed(ph, values))  # a second run: fresh rendezvous keys
        _check_equal(again, env, out, f"partitioned again, par={par}")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GP.programs(depth=2), vec, vec, st.sampled_from([1, 2, 32]), seeds)
def test_partitioned_gradients_match_one_device(prog, x0, w0, par, seed):
    want, _ = loss_and_gradients(prog, x0, w0, par, None)
    got, sess = loss_and_gradients(prog, x0, w0, par, seed)
    for a, b in zip(graph.nest.flatten(got), graph.nest.flatten(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    plans = [p for p in sess._plans.values() if isinstance(p, DevicesPlan)]
    for plan in plans:  # each gradient node runs where the forward node it differentiates does
        placement = plan.partitioned.placement
        for n, d in placement.items():
            f = n.graph.colocation.get(n)
            if f is not None and f in placement and n.device == "" and _alone(n, placement):
                assert d == placement[f], f"{n.name} is not with {f.name}"


def _alone(n, placement) -> bool:
    """Whether `n` is in no colocation group that the user (here: scatter) placed elsewhere: a
    gradient rule's stack push belongs with its stack, wherever the forward node is."""
    return not any(t.dtype is graph.dtypes.variant for t in list(n.inputs) + list(n.outputs))


def test_a_dead_predicate_received_where_it_skips_branches():
    """A cond's predicate arrives dead through a Recv (the loop's final iteration) on a device whose
    branches on it are skippable: what skipping them queues counts in the iteration (it once ended
    the iteration early, a NoProgressError in some runs)."""
    prog = [("while", "a", 0.5, 1, False, [("if", "a", -0.5, [("assign", "a", ("mul_w", "a"))],
                                                 [("assign", "a", ("mul_w", "a")), ("assign", "a", ("mul_w", "a"))])])]
    want, _ = loss_and_gradients(prog, np.zeros(2), np.zeros(2), 1, None)
    for _ in range(15):
        got, _ = loss_and_gradients(prog, np.zeros(2), np.zeros(2), 1, 0)
        for a, b in zip(graph.nest.flatten(got), graph.nest.flatten(want), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
