"""Longest sequence under a device memory limit: keep, swap and recompute (the paper's Table 1, §5.3).

Model (an LSTM training step's loss and gradient; float32):
    z_t = x_t @ Wx + h_{t-1} @ Wh + b ;  i, f, g, o = split(z_t, 4)
    c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g) ;  h_t = sigmoid(o) * tanh(c_t)
    loss = sum_t mean((h_t - y_t)^2) / T, accumulated in the loop ;  gradient wrt (Wx, Wh, b)
  One graph.while_loop over t and its gradient loop (grad.gradients), run by a Session on an
  exec.device.SimulatedDevice with a fixed memory limit (default 8 MiB): the values the loops
  save for the gradient (stack slots) are device buffers accounted against it, and a step that
  needs more fails with DeviceOutOfMemory (on a GPU, the same with --device cupy).
Variants (the same graph but for the loop's memory options):
  keep       every value the gradient loop reads stays on the device
  swap       while_loop(swap_memory=True): above 70% of the limit, saved values over 2 KB are copied
             to host memory on the d2h stream and prefetched back for the gradient loop
             (exec/device/swapping.py)
  recompute  while_loop(memory_policy="recompute", checkpoint_every=--k): the loop state is saved
             every k-th iteration and the forward values are computed again in the gradient loop
             (grad/recompute.py); null where that option is not available
Measured: for each variant the longest sequence length that trains (doubling from --start, then
bisection to a multiple of --granularity, up to --max-seq: a variant that reaches it reports it
with "capped"), then the step time of each at the longest sequence keep can do (median of
--repeats steps after a warm-up step, variants interleaved) and the cost against keep. The
gradients of swap and recompute are checked against keep's there. Step times are Python on the
simulated device (copies are memcpy on its stream threads): read them for the overhead of the
protocol, not for a PCIe link. The default mode is the dataflow executor, where a pop whose value is
still being copied back does not block (compiled programs wait in the pop); "other cores" is the mean number of cores other processes used while
they were timed (the machine is shared). Ends with one JSON line with keys device, longest_keep,
longest_swap, longest_recompute, swap_cost, recompute_cost (and the settings).

Usage: python bench/swap.py [--limit-mib 8] [--hidden 128] [--batch 16] [--max-seq 512] [--mode dataflow]
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _procs as P  # noqa: E402
from _lstm_loop import lstm_step_graph  # noqa: E402

import graph  # noqa: E402
from exec import RunError, Session  # noqa: E402
from exec.device import CupyDevice, DeviceOutOfMemory, SimulatedDevice  # noqa: E402

D = 32


def recompute_available() -> bool:
    return "memory_policy" in inspect.signature(graph.while_loop).parameters


def build(T, H, B, variant, k):
    """The graph, its fetches (loss, gradients) and feeds of one training step over T steps."""
    rng = np.random.default_rng(0)
    feeds_np = [(rng.standard_normal((D, 4 * H)) * 0.1).astype(np.float32),
                (rng.standard_normal((H, 4 * H)) * 0.05).astype(np.float32),
                np.zeros(4 * H, np.float32),
                rng.standard_normal((T, B, D)).astype(np.float32),
                (rng.standard_normal((T, B, H)) * 0.5).astype(np.float32)]
    opts = {"swap": {"swap_memory": True}, "keep": {},
            "recompute": {"memory_policy": "recompute", "checkpoint_every": k}}[variant]
    g, placeholders, loss, grads = lstm_step_graph(T, B, D, H, **opts)
    return g, [loss, *grads], dict(zip(placeholders, feeds_np))


class Bench:
    def __init__(self, args):
        self.args = args
        self.limit = int(args.limit_mib * 2**20)

    def device(self):
        if self.args.device == "cupy":
            return CupyDevice(memory_limit=self.limit)
        return SimulatedDevice(memory_limit=self.limit)

    def session(self, T, variant):
        a = self.args
        g, fetches, feeds = build(T, a.hidden, a.batch, variant, a.k)
        device = self.device()
        return Session(g, mode=a.mode, device=device), fetches, feeds, device

    def trains(self, T, variant) -> bool:
        sess, fetches, feeds, device = self.session(T, variant)
        try:
            sess.run(fetches, feeds)
            return True
        except RunError as e:
            if isinstance(e.__cause__, DeviceOutOfMemory):
                return False
            raise
        finally:
            device.synchronize()
            device.close()

    def longest(self, variant) -> tuple[int, bool]:
        """The longest T (a multiple of the granularity) that trains, and whether it is the cap."""
        a = self.args
        lo, hi = 0, a.start
        while hi <= a.max_seq and self.trains(hi, variant):
            lo, hi = hi, hi * 2
        if hi > a.max_seq:
            if lo == a.max_seq or self.trains(a.max_seq, variant):
                return a.max_seq, True
            hi = a.max_seq
        while hi - lo > a.granularity:
            mid = (lo + hi) // 2 // a.granularity * a.granularity
            if mid <= lo:
                break
            lo, hi = (mid, hi) if self.trains(mid, variant) else (lo, mid)
        return lo, False

    def step_times(self, T, variants) -> dict:
        """{variant: (median step seconds, fetched values, device peak bytes)} at sequence length T."""
        runs = {}
        for v in variants:
            sess, fetches, feeds, device = self.session(T, v)
            values = sess.run(fetches, feeds)  # warm-up (and compiling)
            runs[v] = (sess, fetches, feeds, device, values, [])
        with P.Contention() as busy:
            for _ in range(self.args.repeats):
                for v, (sess, fetches, feeds, device, _, times) in runs.items():
                    device.synchronize()
                    t0 = time.perf_counter()
                    sess.run(fetches, feeds)
                    times.append(time.perf_counter() - t0)
        self.other_cores = busy.other_cores
        out = {}
        for v, (sess, fetches, feeds, device, values, times) in runs.items():
            device.synchronize()
            out[v] = (statistics.median(times), values, device.peak_bytes, sess.runtime.memory.stats())
            device.close()
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit-mib", type=float, default=8.0)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--k", type=int, default=8, help="recompute: checkpoint every k iterations")
    ap.add_argument("--start", type=int, default=32)
    ap.add_argument("--granularity", type=int, default=8)
    ap.add_argument("--max-seq", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--mode", default="dataflow", choices=["auto", "compiled", "dataflow"])
    ap.add_argument("--device", default="simulated", choices=["simulated", "cupy"])
    args = ap.parse_args()
    bench = Bench(args)
    variants = ["keep", "swap"] + (["recompute"] if recompute_available() else [])
    longest = {}
    for v in variants:
        t0 = time.perf_counter()
        longest[v] = bench.longest(v)
        print(f"# {v}: longest {longest[v][0]}{' (the cap)' if longest[v][1] else ''} "
              f"({time.perf_counter() - t0:.1f} s of probes)", file=sys.stderr)
    T = longest["keep"][0]
    timed = bench.step_times(T, variants)
    keep_ms, keep_values = timed["keep"][0] * 1e3, timed["keep"][1]
    print(f"LSTM training step, H={args.hidden}, B={args.batch}, D={D}, float32; device {args.device} with "
          f"{args.limit_mib:g} MiB; mode {args.mode}; step times at T={T} (median of {args.repeats}, variants "
          f"interleaved; other processes used {bench.other_cores:.2f} cores meanwhile)")
    print(f"{'variant':10} {'longest T':>10} {'vs keep':>8} {'step ms':>9} {'cost':>7} {'device peak':>12} "
          f"{'swap-outs':>10} {'waited pops':>12}")
    costs = {}
    for v in variants:
        sec, values, peak, stats = timed[v]
        for a, ref in zip(values, keep_values, strict=True):
            np.testing.assert_allclose(a, ref, rtol=1e-5, atol=1e-7)
        costs[v] = sec * 1e3 / keep_ms - 1.0
        n, capped = longest[v]
        print(f"{v:10} {n:>9}{'+' if capped else ' '} {n / max(T, 1):7.1f}x {sec * 1e3:9.1f} {costs[v]:+7.1%} "
              f"{peak / 2**20:8.2f} MiB {stats.get('swap_outs', 0):>10} {stats.get('waited_pops', 0):>12}")
    result = {"device": f"{args.device} ({args.limit_mib:g} MiB limit)",
              "longest_keep": longest["keep"][0],
              "longest_swap": longest["swap"][0],
              "longest_recompute": longest["recompute"][0] if "recompute" in longest else None,
              "swap_cost": round(costs["swap"], 4),
              "recompute_cost": round(costs["recompute"], 4) if "recompute" in costs else None,
              "capped": [v for v in variants if longest[v][1]], "max_seq": args.max_seq, "T_timed": T,
              "hidden": args.hidden, "batch": args.batch, "k": args.k, "mode": args.mode,
              "other_cores": round(bench.other_cores, 2)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
