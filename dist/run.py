"""`python -m dist.run script.py args...` (or `-m module args...`): runs a script as one rank of an MPI job.

It imports dist.mpi first, so the script's multi-device runs go across the job's ranks (rank k
runs task k's devices) without the script importing it itself; `python -m dist.launch` starts
every rank this way. A script run by a plain `mpiexec -n 2 python script.py` does `import dist.mpi`.
"""
from __future__ import annotations

import runpy
import sys

import dist.mpi  # noqa: F401  (installs the MPI process group in an MPI job)


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m dist.run script.py [args...] | -m module [args...]")
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
