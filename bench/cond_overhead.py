"""Cost of an untaken cond branch: a cond with a large branch against a graph without it, same run.

Graphs (float32 scalar x fed, bool p fed, inter_op_threads=0):
  baseline    y = x + 1                                   (one run of a tiny graph: the per-run floor)
  cond        y = cond(p, lambda: K chained ops on x, lambda: x + 1)
              run with p=False (the K-node branch is untaken) and p=True (it runs)
  loop        a while loop of N iterations whose body is `x = cond(p, K ops, x + 1)`, against the
              same loop with the body `x = x + 1` (per-iteration cost of the untaken branch)
  "dead"      the same, with exec.branches.SKIP_UNTAKEN off: the untaken branch's nodes run dead
              one by one (the executor before branch skipping)
Reported: µs per run (median of repeats), the extra µs over the baseline, µs per branch node of
that extra, and the ratio to the baseline. An untaken branch that costs O(1) shows the same extra
for every K; dead-token propagation through the branch costs about a microsecond per node.
Ends with one JSON line.

Usage: python bench/cond_overhead.py [--repeats 7] [--quick]
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
from exec import Session, branches, load  # noqa: E402

BRANCH_SIZES = (10, 100, 400)
LOOP_BRANCH, LOOP_N = 100, 200


def _chain(x, k):
    for j in range(k // 2):
        x = G.add(G.mul(x, np.float32(0.5)), np.float32(j % 3))
    return x


def build(variant, k, skip=True):
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float32, [], name="x")
        p = G.placeholder(np.bool_, [], name="p")
        if variant == "baseline":
            y = G.add(x, np.float32(1))
        elif variant == "cond":
            y = G.cond(p, lambda: _chain(x, k), lambda: G.add(x, np.float32(1)))
        else:
            with_cond = variant == "loop_cond"

            def body(i, v):
                v = G.cond(p, lambda: _chain(v, k), lambda: G.add(v, np.float32(1))) if with_cond \
                    else G.add(v, np.float32(1))
                return G.add(i, 1), v
            _, y = G.while_loop(lambda i, v: G.less(i, LOOP_N), body, (G.constant(0), x))
    sess = Session(g, inter_op_threads=0)
    run = lambda pv: sess.run(y, {x: np.float32(1), p: pv})  # noqa: E731
    saved, branches.SKIP_UNTAKEN = branches.SKIP_UNTAKEN, skip
    try:
        run(False)  # builds the plan, which keeps the choice
    finally:
        branches.SKIP_UNTAKEN = saved
    return run


def timed(cases, reps):
    """Median µs per run of each (run, predicate, runs per repeat) case; the cases take turns in
    every repeat, so that a slow spell of the machine falls on all of them."""
    for run, pv, _ in cases:
        run(pv)  # plan building
    times = [[] for _ in cases]
    for _ in range(reps):
        for t, (run, pv, inner) in zip(times, cases):
            t0 = time.perf_counter()
            for _ in range(inner):
                run(pv)
            t.append((time.perf_counter() - t0) / inner)
    return [statistics.median(t) * 1e6 for t in times]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="3 repeats, fewer runs each")
    a = ap.parse_args()
    reps, inner = (3, 100) if a.quick else (a.repeats, 400)
    before = load.snapshot()
    t_start = time.perf_counter()
    loop_inner = max(inner // 20, 5)
    cases, labels = [(build("baseline", 0), False, inner)], [("baseline", 0)]
    for k in BRANCH_SIZES:
        run = build("cond", k)
        cases += [(run, False, inner), (run, True, inner)]
        labels += [("cond untaken", k), ("cond taken", k)]
        cases.append((build("cond", k, skip=False), False, inner))
        labels.append(("cond untaken dead", k))
    cases += [(build("loop_plain", 0), False, loop_inner), (build("loop_cond", LOOP_BRANCH), False, loop_inner)]
    labels += [("loop plain", 0), ("loop cond untaken", LOOP_BRANCH)]
    cases.append((build("loop_cond", LOOP_BRANCH, skip=False), False, loop_inner))
    labels.append(("loop cond untaken dead", LOOP_BRANCH))
    us = timed(cases, reps)
    rows = []
    for (name, k), t in zip(labels, us):
        loop = name.startswith("loop")
        base = us[labels.index(("loop plain", 0))] if loop else us[0]
        per = k * LOOP_N if loop else k
        rows.append({"variant": name, "branch_nodes": k, "us": t, "extra_us": t - base,
                     "us_per_branch_node": (t - base) / per if per else None, "ratio_vs_baseline": t / base})
    other = load.other_cores(before, load.snapshot())
    print(f"cond_overhead: median of {reps} x {inner} runs (loops: {loop_inner}; {LOOP_N} iterations), "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus, numpy {np.__version__}, "
          f"other processes used {other if other is not None else float('nan'):.2f} cores")
    hdr = f"{'variant':<22}{'branch nodes':>13}{'us/run':>10}{'extra us':>10}{'us/br.node':>11}{'vs base':>9}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        per = r["us_per_branch_node"]
        print(f"{r['variant']:<22}{r['branch_nodes']:>13}{r['us']:>10.1f}{r['extra_us']:>10.1f}"
              f"{per if per is not None else float('nan'):>11.3f}{r['ratio_vs_baseline']:>9.2f}")
    print("(loop rows: against the loop without the cond; extra per branch node is per iteration)")
    print("BENCH_JSON: " + json.dumps({"bench": "cond_overhead", "repeats": reps, "runs": inner,
                                       "loop_iterations": LOOP_N, "other_cores": other, "rows": rows,
                                       "wall_s": time.perf_counter() - t_start}))


if __name__ == "__main__":
    main()
