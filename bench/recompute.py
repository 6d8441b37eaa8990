"""Memory policies of a differentiated loop: what "keep" and "recompute" hold and what they cost.

Model (an LSTM training step's loss and gradient; float32; D=64, H=256, B=32, T=200):
    z_t = x_t @ Wx + h_{t-1} @ Wh + b ;  i, f, g, o = split(z_t, 4)
    c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g) ;  h_t = sigmoid(o) * tanh(c_t)
    loss = sum_t mean((h_t - y_t)^2) / T, accumulated in the loop ;  gradient wrt (Wx, Wh, b)
  One graph.while_loop over t (x_t, y_t gathered from loop constants), its gradient loop from
  grad.gradients. The loss is carried by the loop rather than stacked from a TensorArray: a
  recomputed body may not write arrays.
Variants (the same graph but for the loop's memory_policy):
  keep          every value the gradient reads, saved in every iteration (and the rows of the
                weight gradients, summed after the gradient loop: grad/loop_sums.py)
  recompute/1   the loop state (t, h, c, loss) saved in every iteration; the gradient loop
                computes the gates again from it
  recompute/8   the state saved every 8th iteration; each segment of 8 iterations is run again
                once from its checkpoint, in an inner loop of the gradient loop, keeping the
                values the gradient reads for those 8 iterations
Reported per variant and execution mode (compiled code, the dataflow executor): the peak bytes
held by saved values (the memory manager's peak_bytes: stack slots, exec/memory.py), the step time
(median of --rounds x --repeats runs after a warm-up run, the variants of a mode interleaved round by
round; the first run, with compiling, is not timed) and the cost against keep. Gradients are checked equal to keep's (to 1e-5 relative, float32 summed in
another order). "other cores" is the mean number of cores other processes used while timing.
Ends with one line `BENCH_JSON: {...}`.

Usage: python bench/recompute.py [--seq 200] [--rounds 3] [--repeats 2] [--modes compiled,dataflow]
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _procs as P  # noqa: E402
from _lstm_loop import lstm_step_graph  # noqa: E402

import graph  # noqa: E402
from exec import Session  # noqa: E402
from exec.memory import memory_manager  # noqa: E402

D, H, B = 64, 256, 32
POLICIES = [("keep", None), ("recompute", 1), ("recompute", 8)]


def make_data(T):
    rng = np.random.default_rng(0)
    Wx = (rng.standard_normal((D, 4 * H)) * 0.1).astype(np.float32)
    Wh = (rng.standard_normal((H, 4 * H)) * 0.05).astype(np.float32)
    b = np.zeros(4 * H, np.float32)
    X = rng.standard_normal((T, B, D)).astype(np.float32)
    Y = (rng.standard_normal((T, B, H)) * 0.5).astype(np.float32)
    return Wx, Wh, b, X, Y


def build(T, policy, k):
    """The graph, its fetches (loss, gradients) and feeds."""
    Wx0, Wh0, b0, X0, Y0 = make_data(T)
    opts = {} if policy == "keep" else {"memory_policy": policy, "checkpoint_every": k}
    g, (Wx, Wh, b, X, Y), loss, grads = lstm_step_graph(T, B, D, H, **opts)
    return g, (loss, grads), {Wx: Wx0, Wh: Wh0, b: b0, X: X0, Y: Y0}


def measure(T, mode, rounds, repeats):
    """{(policy, k): figures}: the variants' sessions built and warmed up, then timed interleaved
    (`rounds` times `repeats` steps each), so that load from other processes falls on all alike."""
    runs = {}
    for policy, k in POLICIES:
        g, fetches, feeds = build(T, policy, k)
        sess = Session(g, mode=mode)
        t0 = time.perf_counter()
        values = sess.run(fetches, feeds)
        runs[policy, k] = {"run": (sess, fetches, feeds), "first_ms": 1e3 * (time.perf_counter() - t0),
                           "values": values, "times": [], "busy": []}
    for _ in range(rounds):
        for r in runs.values():
            sess, fetches, feeds = r["run"]
            mem = memory_manager(sess.runtime)
            with P.Contention() as busy:
                for _ in range(repeats):
                    mem.reset_peak()
                    t0 = time.perf_counter()
                    sess.run(fetches, feeds)
                    r["times"].append(time.perf_counter() - t0)
            r["busy"].append(busy.other_cores)
            r["peak_bytes"] = int(mem.stats()["peak_bytes"])
    return {key: {"peak_bytes": r["peak_bytes"], "step_ms": 1e3 * statistics.median(r["times"]),
                  "first_ms": r["first_ms"], "other_cores": statistics.mean(r["busy"]), "values": r["values"]}
            for key, r in runs.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seq", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--modes", default="compiled,dataflow")
    args = ap.parse_args()
    modes = args.modes.split(",")
    rows = {}
    for mode in modes:
        for (policy, k), r in measure(args.seq, mode, args.rounds, args.repeats).items():
            rows[mode, policy, k] = r
    print(f"LSTM-like loop, T={args.seq}, H={H}, B={B}, D={D}, float32; {platform.machine()}, "
          f"{os.cpu_count()} cores; median of {args.rounds} x {args.repeats} steps, variants interleaved")
    print(f"{'mode':9} {'policy':12} {'saved peak':>12} {'vs keep':>8} {'step ms':>9} {'cost':>7} {'other cores':>12}")
    results = {}
    for mode in modes:
        keep = rows[mode, "keep", None]
        for policy, k in POLICIES:
            r = rows[mode, policy, k]
            name = policy if k is None else f"{policy}/{k}"
            for a, ref in zip(graph.nest.flatten(r["values"]), graph.nest.flatten(keep["values"]), strict=True):
                np.testing.assert_allclose(a, ref, rtol=1e-5, atol=1e-7)
            ratio = r["peak_bytes"] / keep["peak_bytes"]
            cost = r["step_ms"] / keep["step_ms"] - 1.0
            print(f"{mode:9} {name:12} {r['peak_bytes'] / 2**20:9.2f} MiB {ratio:8.3f} {r['step_ms']:9.1f} "
                  f"{cost:+7.0%} {r['other_cores']:12.2f}")
            results[f"{mode}:{name}"] = {"peak_bytes": r["peak_bytes"], "step_ms": round(r["step_ms"], 2),
                                         "peak_vs_keep": round(ratio, 4), "cost_vs_keep": round(cost, 4),
                                         "other_cores": round(r["other_cores"], 2)}
    print("BENCH_JSON: " + json.dumps({"bench": "recompute", "T": args.seq, "H": H, "B": B, "D": D,
                                       "steps": args.rounds * args.repeats, "results": results}))


if __name__ == "__main__":
    main()
