"""`python -m dist.launch -n 2 script.py args...`: runs script.py on 2 MPI ranks.

A thin wrapper over `mpiexec`: it finds the one the `mpich` wheel installed next to this Python
(else the first on PATH), runs `python -m mpi4py -m dist.run script.py args` on every rank (mpi4py
makes an uncaught exception on one rank abort the job instead of leaving the others waiting;
dist.run imports dist.mpi before the script) and exits with the job's status. The same script
also runs under a plain `mpiexec -n 2 python script.py` if it imports dist.mpi itself.

Every rank runs the whole script and builds the same graph; `Session.run` on rank k runs the
partitions placed on "/task:k/...".
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig


def find_mpiexec() -> str:
    """The mpiexec to start jobs with: the one beside this Python's scripts, else the first on PATH."""
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(folder, "mpiexec")
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("mpiexec")
    if found is None:
        raise FileNotFoundError("no mpiexec found beside this Python or on PATH: pip install -e '.[dist]' "
                                "installs the mpich wheel, which brings one")
    return found


def command(n: int, argv: list[str], module: bool = False) -> list[str]:
    """The mpiexec command line that runs `argv` (a script and its arguments) on `n` ranks."""
    target = ["-m", *argv] if module else argv
    return [find_mpiexec(), "-n", str(n), sys.executable, "-m", "mpi4py", "-m", "dist.run", *target]


def main(args: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dist.launch", description=__doc__.splitlines()[0])
    p.add_argument("-n", "--ranks", type=int, default=2, help="number of processes (MPI ranks); default 2")
    p.add_argument("-m", dest="module", action="store_true", help="run a module (like python -m) instead of a script")
    p.add_argument("--timeout", type=float, default=None, help="kill the job after this many seconds")
    p.add_argument("script", help="the script (or, with -m, the module) every rank runs")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    ns = p.parse_args(args)
    if ns.ranks < 1:
        p.error("-n must be at least 1")
    rc = run(command(ns.ranks, [ns.script, *ns.args], ns.module), timeout=ns.timeout)
    if rc == 124:
        print(f"dist.launch: the job ran past --timeout {ns.timeout:g} s and was stopped", file=sys.stderr)
    return rc


def run(cmd: list[str], timeout: float | None = None, **popen) -> int:
    """Runs an mpiexec command line; past `timeout` seconds it stops the job and returns 124.

    mpiexec is sent SIGTERM first, which it passes on to every rank before it exits, so no rank is
    left behind; SIGKILL follows if it has not ended 5 s later.
    """
    proc = subprocess.Popen(cmd, **popen)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return 124
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()
        raise


if __name__ == "__main__":
    sys.exit(main())
