"""bench/dist_loop.py's loop across MPI ranks: iterations per second, spawned through `python -m dist.launch`.

The loop counter and its predicate live on task 0; each other task k holds a loop variable x_k whose
body op (x_k + 1) runs there. Each iteration rank 0 sends the predicate to every other rank (and, with
`barrier`, waits for each x_k + 1 before its next counter: a round trip per iteration). The ranks run
as separate processes, so they do not share a GIL; on this 2-core box 4 ranks share 2 cores.

`mpi_rate(n, repeats, ranks, barrier)` starts the job and returns iterations/s (None when the dist
extra is not installed). Run directly under MPI (`python -m dist.launch -n 2 bench/dist_loop_mpi.py`)
it prints rank 0's result as a JSON line.

Usage: python bench/dist_loop_mpi.py [--ranks 2 4] [--n 5000] [--repeats 5]   (spawns the jobs)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import graph as G  # noqa: E402
from exec import Session  # noqa: E402


def loop(ranks: int, barrier: bool, par: int = 32):
    g = G.Graph()
    with g.as_default():
        limit = G.placeholder(np.int64, (), name="n")
        with G.device("/task:0/cpu:0"):
            i0 = G.constant(np.int64(0))
        xs0 = []
        for k in range(1, ranks):
            with G.device(f"/task:{k}/cpu:0"):
                xs0.append(G.constant(0.0))

        def cond(i, *xs):
            with G.device("/task:0/cpu:0"):
                return i < limit

        def body(i, *xs):
            new = []
            for k, x in enumerate(xs, 1):
                with G.device(f"/task:{k}/cpu:0"):
                    new.append(x + 1.0)
            with G.device("/task:0/cpu:0"):
                with G.control_dependencies(new if barrier else []):
                    return (i + 1, *new)
        out = G.while_loop(cond, body, [i0, *xs0], parallel_iterations=par)
    return g, limit, out


def worker(n: int, repeats: int, barrier: bool) -> float:
    """Rank-side: the median iterations/s of `repeats` runs of n iterations (every rank runs them)."""
    from mpi4py import MPI

    import dist.mpi  # noqa: F401  (runs the multi-device plans across the ranks)
    ranks = MPI.COMM_WORLD.Get_size()
    g, limit, out = loop(ranks, barrier)
    sess = Session(g, inter_op_threads=0)
    got = sess.run(out, {limit: 10})  # warm-up: plans, partitions and the transport
    assert got[0] == 10 and all(x == 10.0 for x in got[1:]), got
    times = []
    for _ in range(repeats):
        MPI.COMM_WORLD.Barrier()
        start = time.perf_counter()
        got = sess.run(out, {limit: n})
        times.append(time.perf_counter() - start)
        assert got[0] == n and all(x == float(n) for x in got[1:]), got
    return n / statistics.median(times)


def mpi_rate(n: int, repeats: int, ranks: int = 2, barrier: bool = False, timeout: float = 300) -> float | None:
    """Starts `ranks` processes that run the loop; iterations/s, or None without the dist extra."""
    try:
        import mpi4py  # noqa: F401

        from dist.launch import command
        cmd = command(ranks, [os.path.abspath(__file__), "--worker", "--n", str(n), "--repeats", str(repeats)]
                      + (["--barrier"] if barrier else []))
    except (ImportError, FileNotFoundError):
        return None
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"the {ranks}-rank job failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return json.loads(lines[-1])["iters_per_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help="run as one rank of the job (what mpi_rate starts)")
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--barrier", action="store_true")
    args = ap.parse_args()
    if args.worker:
        r = worker(args.n, args.repeats, args.barrier)
        from mpi4py import MPI
        if MPI.COMM_WORLD.Get_rank() == 0:
            print(json.dumps({"iters_per_s": r}), flush=True)
        return
    results = {}
    print(f"while loop across MPI ranks, trivial body, n={args.n}, median of {args.repeats}; {os.cpu_count()} cores")
    print(f"{'ranks':>5} {'barrier':>8} {'iterations/s':>13} {'us/iteration':>13}")
    for ranks in args.ranks:
        for barrier in (False, True):
            r = mpi_rate(args.n, args.repeats, ranks, barrier)
            if r is None:
                print("the dist extra is not installed: pip install -e '.[dist]'")
                return
            print(f"{ranks:5} {str(barrier):>8} {r:13,.0f} {1e6 / r:13.1f}")
            results[f"mpi_{ranks}_ranks{'_barrier' if barrier else ''}_iters_per_s"] = round(r)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
