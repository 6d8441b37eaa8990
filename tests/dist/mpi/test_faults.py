"""A rank that dies, or fails outside a run, ends the whole job in bounded time: no rank is left waiting.

Each case starts a job of its own (`mpiexec -n 2`, from rank 0 of the test job, with the outer job's
launcher environment removed); the other ranks of the test job pass these tests at once.
"""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from dist.launch import command, find_mpiexec, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# a loop whose predicate is on task 0 and body on task 1: each iteration crosses ranks twice
LOOP = textwrap.dedent("""
    import os, signal, sys, threading
    import numpy as np
    import dist.mpi
    import graph
    from exec import Session
    from mpi4py import MPI

    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, (), name="n")
        def body(i, x):
            with graph.device("/task:1/cpu:0"):
                x = x * 0.5 + 1.0
            return i + 1, x
        with graph.device("/task:0/cpu:0"):
            i, x = graph.while_loop(lambda i, x: i < n, body, (graph.constant(np.int64(0)), graph.constant(3.0)))
    sess = Session(g)
    sess.run(x, {n: 3})  # both ranks are up and talking
    if MPI.COMM_WORLD.Get_rank() == 1:
        how = sys.argv[1]
        if how == "kill":
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGKILL)).start()
        elif how == "raise":
            raise SystemExit("rank 1 gave up before its run")
    sess.run(x, {n: 10 ** 9})
    print("rank", MPI.COMM_WORLD.Get_rank(), "finished a run that should not finish")
""")


def _job(tmp_path, argv, timeout):
    script = tmp_path / "job.py"
    script.write_text(LOOP)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "PMIX_", "HYDRA_", "MPIR_", "MPICH_", "OMPI_", "I_MPI_"))}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["FLOWGRAPH_RECV_TIMEOUT"] = "120"  # far past `took`'s bound: the timeout must not be what ends these
    out = tmp_path / "out.txt"
    start = time.monotonic()
    with open(out, "w") as f:
        rc = run([a.replace("SCRIPT", str(script)) for a in argv], timeout=timeout, env=env, stdout=f,
                 stderr=subprocess.STDOUT)
    return rc, time.monotonic() - start, out.read_text()


@pytest.fixture(autouse=True)
def in_step(comm):
    """The other ranks wait for rank 0's job here, not in the next test's runs (which have timeouts)."""
    yield
    comm.Barrier()


@pytest.fixture
def on_rank_0(comm):
    if comm.Get_rank() != 0:
        pytest.skip("the job is started from rank 0")


@pytest.mark.parametrize("how", ["kill", "raise"])
def test_a_rank_that_dies_ends_the_job_under_dist_launch(tmp_path, on_rank_0, how):
    rc, took, out = _job(tmp_path, command(2, ["SCRIPT", how]), timeout=90)
    assert rc not in (0, 124), out
    assert took < 30, f"the job took {took:.0f} s to end:\n{out}"
    assert "should not finish" not in out


def test_an_error_outside_a_run_ends_a_plain_mpiexec_job(tmp_path, on_rank_0):
    rc, took, out = _job(tmp_path, [find_mpiexec(), "-n", "2", sys.executable, "SCRIPT", "raise"], timeout=90)
    assert rc not in (0, 124), out
    assert took < 30, f"the job took {took:.0f} s to end:\n{out}"
    assert "rank 1 gave up" in out
    # rank 0, left waiting, names the value it waited for by the user's op and loop, not by its rendezvous key
    assert "rank 1 exited while rank 0 still waited for the value of Add computed at" in out, out
    assert "job.py:14, sent from /task:1/cpu:0 to /task:0/cpu:0, in iteration" in out and "while@" not in out, out
