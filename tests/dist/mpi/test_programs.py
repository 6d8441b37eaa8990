"""Partitioned programs across 2 MPI ranks (rank k runs the devices of task k) compute what they compute
on one device, values and gradients; a failure in one iteration on one rank fails the run on both, naming
the node, the rank and the user's line. Runs under `mpiexec -n 2` (see conftest.py).

Both ranks draw the same examples (derandomized, no database) and do not shrink: a rank that shrank
alone would run programs the other never builds.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import graph
from exec import Session, multi_device
from exec.errors import NoProgressError, RunError
from exec.multi_device import DevicesPlan
from tests.dist.helpers import loss_and_gradients, scatter, vec, within
from tests.exec import programs as P
from tests.grad import programs as GP

# a device per task, and two on task 0: a cut between devices of one rank stays in memory
DEVICES = ("/task:0/cpu:0", "/task:0/cpu:1", "/task:1/cpu:0")
def same_on_every_rank(max_examples: int):
    return settings(max_examples=max_examples, derandomize=True, database=None, deadline=None,
                    phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))



seeds = st.integers(0, 2 ** 31)


def _spans_both_ranks(sess) -> bool:
    plans = [p for p in sess._plans.values() if isinstance(p, DevicesPlan)]
    return any(len({d.split("/")[1] for d in p.devices}) == 2 for p in plans)


@same_on_every_rank(12)
@given(P.programs, P.inputs, seeds, st.sampled_from([1, 2, 32]))
def test_partitioned_programs_match_python(program, values, seed, par):
    env, out = P.run_python(program, values)
    g, ph, fetches = P.build_graph(program, parallel_iterations=par)
    scatter(g, seed, DEVICES)
    sess = Session(g, inter_op_threads=0)
    for what in ("first run", "second run"):  # the second run: new rendezvous keys, a new step
        got = within(60, sess.run, fetches, P.feed(ph, values))
        for k in ("i0", "i1", "f0", "v0"):
            np.testing.assert_array_equal(got[k], env[k], err_msg=f"{what}: variable {k}")
        np.testing.assert_array_equal(got["out"], np.asarray(out, np.float64).reshape(-1), err_msg=f"{what}: out")


def _loss_and_gradients(prog, x0, w0, par, seed):
    return loss_and_gradients(prog, x0, w0, par, seed, DEVICES, seconds=60)


def _in_one_process(fn, *args):
    """fn(*args) with every device of a multi-device run in this process, as without MPI."""
    group = multi_device._process_group
    multi_device.set_process_group(None)
    try:
        return fn(*args)
    finally:
        multi_device.set_process_group(group)


@same_on_every_rank(10)
@given(GP.programs(depth=2), vec, vec, st.sampled_from([1, 2, 32]), seeds)
def test_partitioned_gradients_match_one_device(prog, x0, w0, par, seed):
    want, _ = _loss_and_gradients(prog, x0, w0, par, None)  # one device: each rank alone
    try:
        _in_one_process(_loss_and_gradients, prog, x0, w0, par, seed)
    except (RunError, NoProgressError):
        # partitioning this program goes wrong in one process too (tests/dist/test_programs.py's
        # business): across ranks it must fail as well, not hang
        from dist.mpi import RemoteRunError
        with pytest.raises((RunError, NoProgressError, RemoteRunError)):
            _loss_and_gradients(prog, x0, w0, par, seed)
        return
    got, _ = _loss_and_gradients(prog, x0, w0, par, seed)
    for a, b in zip(graph.nest.flatten(got), graph.nest.flatten(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _loop_with_a_body_on_task_1(fail_at=None):
    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, (), name="n")

        def body(i, x):
            with graph.device("/task:1/cpu:0"):
                checks = [graph.assert_(i != fail_at, f"i reached {fail_at}")] if fail_at is not None else []
                with graph.control_dependencies(checks):
                    x = x * 0.5 + 1.0
            return i + 1, x

        with graph.device("/task:0/cpu:0"):
            i, x = graph.while_loop(lambda i, x: i < n, body, (graph.constant(np.int64(0)), graph.constant(3.0)))
    return g, n, i, x


def test_a_loop_whose_predicate_and_body_are_on_different_ranks(comm):
    g, n, i, x = _loop_with_a_body_on_task_1()
    sess = Session(g)
    for steps in (0, 1, 50):
        got_i, got_x = within(60, sess.run, [i, x], {n: steps})
        want = 3.0
        for _ in range(steps):
            want = want * 0.5 + 1.0
        assert got_i == steps and got_x == want  # on both ranks: each gets every fetch
    assert _spans_both_ranks(sess)


def test_an_error_in_iteration_k_on_one_rank_fails_the_run_on_both(comm):
    from dist.mpi import RemoteRunError
    g, n, i, x = _loop_with_a_body_on_task_1(fail_at=7)
    sess = Session(g)
    with pytest.raises((RunError, RemoteRunError)) as info:
        within(60, sess.run, [i, x], {n: 20})
    text = str(info.value)
    assert "i reached 7" in text and "test_programs.py" in text
    if comm.Get_rank() == 0:  # the failure came from rank 1, and says so
        assert isinstance(info.value, RemoteRunError) and info.value.rank == 1 and "rank 1" in text
    else:
        assert "iteration 7" in text
    # the session still works: the next run is a new step
    assert within(60, sess.run, i, {n: 3}) == 3
