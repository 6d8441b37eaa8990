"""A while loop whose body spans two devices, in-process: iterations per second (the paper's Figure 11 analog).

The loop counter i and its predicate i < n live on device 0; a second loop variable x lives on device 1,
where its body op (x + 1) runs. Each iteration device 0 sends the predicate to device 1 (keyed by
iteration, exec/rendezvous.py), and device 1's copy of the loop control structure follows it
(dist/partition.py). Variants, all measured in this run (median of repeats; each round runs every variant once, so that the
shared machine's changing load hits all of them alike):
  1 device           the same loop with both variables on one device (dataflow executor; and compiled code)
  2 devices          the loop above: the predicate crosses each iteration, iterations pipeline
                     (parallel_iterations=32)
  2 devices barrier  device 0's next counter also waits for device 1's x + 1 (a control edge across
                     devices): a round trip per iteration, nothing to pipeline
  (1 iteration in flight: the same with parallel_iterations=1)
Reported: iterations/s and the ratio against one device (dataflow). Ends with one JSON line whose key
`in_process_iters_per_s` is the "2 devices" rate. The MPI transport adds `mpi_iters_per_s` (2 ranks)
next to it: see `MPI_VARIANTS` below.

Usage: python bench/dist_loop.py [--n 20000] [--repeats 5] [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dist_loop_mpi import mpi_rate  # noqa: E402

import graph as G  # noqa: E402
from exec import Session  # noqa: E402
from exec.multi_device import DevicesPlan  # noqa: E402

# The cross-process variants (dist/mpi.py) register here: name -> function(n, repeats) returning
# iterations/s, or None where that transport cannot run; their results join the table and the JSON line.
MPI_VARIANTS: dict = {
    # the same loop across 2 MPI ranks, task k on rank k (bench/dist_loop_mpi.py starts the job)
    "mpi_iters_per_s": lambda n, repeats: mpi_rate(n, repeats, ranks=2),
    "mpi_barrier_iters_per_s": lambda n, repeats: mpi_rate(n, repeats, ranks=2, barrier=True),
}


def loop(n: int, devices: tuple[str, str], barrier: bool, par: int):
    g = G.Graph()
    with g.as_default():
        limit = G.placeholder(np.int64, (), name="n")
        with G.device(devices[0]):
            i0 = G.constant(np.int64(0))
        with G.device(devices[1]):
            x0 = G.constant(0.0)

        def cond(i, x):
            with G.device(devices[0]):
                return i < limit

        def body(i, x):
            with G.device(devices[1]):
                x1 = x + 1.0
            with G.device(devices[0]):
                if barrier:
                    with G.control_dependencies([x1]):
                        return i + 1, x1
                return i + 1, x1
        out = G.while_loop(cond, body, [i0, x0], parallel_iterations=par)
    return g, limit, out


def prepare(n: int, devices, barrier: bool = False, par: int = 32, mode: str = "dataflow"):
    """A function that runs the loop once (n iterations) and returns its wall time; plans and partitions
    are built and warmed up here."""
    g, limit, out = loop(n, devices, barrier, par)
    sess = Session(g, inter_op_threads=0, mode=mode)
    got = sess.run(out, {limit: 10})
    assert got[0] == 10 and got[1] == 10.0, got
    multi = any(isinstance(p, DevicesPlan) for p in sess._plans.values())
    assert multi == (devices[0] != devices[1]), "the loop did not run partitioned as meant"

    def once() -> float:
        start = time.perf_counter()
        i, x = sess.run(out, {limit: n})
        elapsed = time.perf_counter() - start
        assert i == n and x == float(n)
        return elapsed
    return once


def rates(n: int, repeats: int, variants: dict) -> dict:
    """Iterations/s of each variant (name -> prepare's function), the median over `repeats` rounds that
    run every variant once each, so that a change in the machine's load hits all of them alike."""
    times: dict = {name: [] for name in variants}
    for _ in range(repeats):
        for name, once in variants.items():
            times[name].append(once())
    return {name: n / statistics.median(ts) for name, ts in times.items()}


def rate(n: int, repeats: int, devices, barrier: bool = False, par: int = 32, mode: str = "dataflow") -> float:
    """Iterations/s of one variant alone (median of `repeats` runs)."""
    return rates(n, repeats, {"": prepare(n, devices, barrier, par, mode)})[""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="a short run (n=2000, 3 repeats)")
    args = ap.parse_args()
    n, repeats = (2000, 3) if args.quick else (args.n, args.repeats)
    one, two = ("/cpu:0", "/cpu:0"), ("/cpu:0", "/cpu:1")
    measured = rates(n, repeats, {
        "1 device (dataflow)": prepare(n, one),
        "1 device (compiled)": prepare(n, one, mode="compiled"),
        "2 devices": prepare(n, two),
        "2 devices barrier": prepare(n, two, barrier=True),
        "2 devices, 1 iteration in flight": prepare(n, two, par=1),
        "2 devices barrier, 1 iteration in flight": prepare(n, two, barrier=True, par=1),
    })
    rows = list(measured.items())
    results = {"in_process_iters_per_s": round(rows[2][1]), "in_process_barrier_iters_per_s": round(rows[3][1]),
               "one_device_iters_per_s": round(rows[0][1])}
    for name, fn in MPI_VARIANTS.items():
        value = fn(n, repeats)
        if value is not None:
            rows.append((name, value))
            results[name] = round(value)
    base = rows[0][1]
    print(f"while loop, trivial body, n={n}, median of {repeats}; {platform.python_version()}, "
          f"{os.cpu_count()} cores")
    print(f"{'variant':44} {'iterations/s':>13} {'vs 1 device':>12}")
    for name, r in rows:
        print(f"{name:44} {r:13,.0f} {r / base:11.2f}x")
    results["ratio_2_devices_vs_1"] = round(rows[2][1] / base, 3)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
