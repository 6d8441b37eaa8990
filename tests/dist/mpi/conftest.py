"""The tests here run on every rank of an MPI job: `mpiexec -n 2 python -m pytest tests/dist/mpi`
(what .ci/run does). Under a plain pytest run, with no MPI job around it, they are skipped, and
nothing here imports mpi4py.

Every rank collects the same tests in the same order and runs them in step, so a test may
exchange values between ranks; each rendezvous a test makes is a new run ("step"), numbered
alike on every rank, so a test's leftovers never meet the next test's values.
"""
import os

import pytest


def world_size() -> int:
    """The size of the MPI job this process belongs to (1 outside one), from the launcher's environment."""
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"):
        if var in os.environ:
            return int(os.environ[var])
    return 1


def pytest_configure(config):
    if world_size() >= 2:
        import dist.mpi  # noqa: F401  (multi-device runs go across the ranks; dist.launch imports it too)


def pytest_collection_modifyitems(config, items):
    if world_size() >= 2:
        return
    skip = pytest.mark.skip(reason="MPI test: runs under `mpiexec -n 2 python -m pytest tests/dist/mpi`")
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(skip)


def pytest_runtest_logreport(report):
    """A failure on one rank ends the job: the other ranks would wait for this one's values (or at
    a barrier) for ever. The report goes to stderr first, since pytest prints it only at the end."""
    if not report.failed or world_size() < 2:
        return
    import sys

    from mpi4py import MPI
    sys.stderr.write(f"\n[rank {MPI.COMM_WORLD.Get_rank()}] {report.nodeid} failed ({report.when}):\n"
                     f"{report.longreprtext}\n")
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(1)


@pytest.fixture(scope="session")
def comm():
    from mpi4py import MPI
    return MPI.COMM_WORLD
