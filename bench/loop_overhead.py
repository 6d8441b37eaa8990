"""While-loop overhead: the frame-tagged executor against plain Python + numpy, same run.

Loop: `i = 0; while i < N: i = i + 1; <body>` with
  scalar body: x = x + 1.0                          (float32 scalar)
  vector body: 5 x (x = x * 0.5; x = x + 1.0)       (10 elementwise ops, float32[1000])
Variants:
  numpy       the loop in Python on numpy values (the floor for a numpy-kernel system)
  dataflow    graph.while_loop run by the executor (parallel_iterations=32, no pool)
  compiled    the same graph run as compiled Python code (Session(mode="compiled"))
  transpiled  the same Python function under @transpile.function (when available)
Reported: iterations/s (median of repeats), µs per iteration, µs per executed node, and
the ratio graph / numpy time per iteration. Ends with one JSON line.

Usage: python bench/loop_overhead.py [--n 100000] [--repeats 5] [--quick]
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

import graph as G  # noqa: E402
from exec import Session  # noqa: E402

VEC = 1000


def numpy_loop(body):
    def run(n):
        i = np.int64(0)
        x = np.float32(0) if body == "scalar" else np.zeros(VEC, np.float32)
        while i < n:
            i = i + 1
            if body == "scalar":
                x = x + np.float32(1.0)
            else:
                for _ in range(5):
                    x = x * np.float32(0.5)
                    x = x + np.float32(1.0)
        return i, x
    return run, None


def graph_loop(body, mode):
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [], name="n")
        x0 = G.constant(np.float32(0)) if body == "scalar" else G.constant(np.zeros(VEC, np.float32))

        def step(i, x):
            if body == "scalar":
                return G.add(i, 1), G.add(x, np.float32(1.0))
            for _ in range(5):
                x = G.add(G.mul(x, np.float32(0.5)), np.float32(1.0))
            return G.add(i, 1), x
        i, x = G.while_loop(lambda i, x: G.less(i, n), step, (G.constant(0), x0))
    sess = Session(g, inter_op_threads=0, mode=mode)
    run = lambda nv: sess.run([i, x], {n: nv})  # noqa: E731
    return run, _nodes_per_iteration(sess, [i, x], {n: 3}, run)


def dataflow_loop(body):
    return graph_loop(body, "dataflow")


def compiled_loop(body):
    return graph_loop(body, "compiled")


def transpiled_loop(body):
    try:
        import transpile
        fn = getattr(transpile, "function")
    except (ImportError, AttributeError):
        return None, None

    def loop(n, x):
        i = 0
        while i < n:
            i = i + 1
            if body == "scalar":
                x = x + np.float32(1.0)
            else:
                for _ in range(5):
                    x = x * np.float32(0.5)
                    x = x + np.float32(1.0)
        return i, x
    try:
        f = fn(loop)
        x0 = np.float32(0) if body == "scalar" else np.zeros(VEC, np.float32)
        f(np.int64(2), x0)
    except Exception as e:  # the transpiler is optional for this bench
        print(f"transpiled variant unavailable: {type(e).__name__}: {e}", file=sys.stderr)
        return None, None
    return (lambda nv: f(np.int64(nv), x0)), None


def _nodes_per_iteration(sess, fetches, feeds, run):
    """Executed nodes per iteration, from a node count of the plan and the trip count."""
    plan = next(iter(sess._plans.values()), None)
    if plan is None:
        run(1)
        plan = next(iter(sess._plans.values()))
    loop_nodes = [n for n in plan.nodes if n.frame is not None]
    # Merge, cond, LoopCond, Switch, body, NextIteration run once per iteration; Enters once per loop
    return sum(1 for n in loop_nodes if n.op != "Enter")


def measure(run, n, repeats):
    run(min(n, 1000))  # warm-up: plan building, caches
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(n)
        times.append(time.perf_counter() - t0)
    t1 = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(1)
        t1.append(time.perf_counter() - t0)
    med, call = statistics.median(times), statistics.median(t1)
    return {"n": n, "median_s": med, "iters_per_s": n / med, "us_per_iter": (med - call) / (n - 1) * 1e6,
            "call_us": call * 1e6, "min_s": min(times), "max_s": max(times)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="n=10000, 3 repeats")
    a = ap.parse_args()
    if a.quick:
        a.n, a.repeats = 10_000, 3
    results = {}
    for body in ("scalar", "vector"):
        for name, make in (("numpy", numpy_loop), ("dataflow", dataflow_loop), ("compiled", compiled_loop),
                           ("transpiled", transpiled_loop)):
            run, nodes = make(body)
            if run is None:
                continue
            n = a.n if body == "scalar" or name != "numpy" else a.n
            r = measure(run, n, a.repeats)
            r["nodes_per_iter"] = nodes
            if nodes:
                r["us_per_node"] = r["us_per_iter"] / nodes
            results[f"{name}/{body}"] = r
    print(f"loop_overhead: N={a.n}, median of {a.repeats}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cpus, numpy {np.__version__}")
    hdr = (f"{'variant':<20}{'iters/s':>12}{'us/iter':>10}{'call us':>10}{'nodes/it':>10}{'us/node':>9}"
           f"{'vs numpy':>10}{'vs dataflow':>12}")
    print(hdr)
    print("-" * len(hdr))
    for key, r in results.items():
        body = key.split("/")[1]
        base = results.get(f"numpy/{body}")
        ratio = r["us_per_iter"] / base["us_per_iter"] if base else float("nan")
        r["ratio_vs_numpy"] = ratio
        dataflow = results.get(f"dataflow/{body}")
        r["ratio_vs_dataflow"] = r["us_per_iter"] / dataflow["us_per_iter"] if dataflow else float("nan")
        print(f"{key:<20}{r['iters_per_s']:>12,.0f}{r['us_per_iter']:>10.2f}{r['call_us']:>10.1f}"
              f"{(r['nodes_per_iter'] or 0):>10}{r.get('us_per_node', float('nan')):>9.2f}{ratio:>10.2f}"
              f"{r['ratio_vs_dataflow']:>12.2f}")
    print("BENCH_JSON: " + json.dumps({"bench": "loop_overhead", "n": a.n, "repeats": a.repeats,
                                       "results": results}))


if __name__ == "__main__":
    main()
