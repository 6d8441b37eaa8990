"""BLAS threads in compiled code: does the load rule (exec/compiled/threads.py) pick the faster count, here, now?

Compiled code runs a program with large matmuls under `blas.at_most(free_cores(cores, other_cores))`, where
`other_cores` is the mean number of cores other processes used during the program's last run (exec/load.py).
This bench times the LSTM step's matmuls (bench/lstm.py: x_t @ Wx, h @ Wh, dz @ Wh.T on B=32, H=256
float32) with one BLAS thread and with all of them, in alternating blocks, measures the other processes'
load during each block, and says per block which count the rule would have chosen and which was faster.
On a quiet machine the rule must take every thread, and every thread must be faster; on a busy one, one
thread (OpenBLAS's workers spin while they wait: a descheduled worker stalls a multithreaded matmul).

Usage: python bench/blas_threads.py [--blocks 10] [--calls 200]
Ends with one line `BENCH_JSON: {...}`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from exec import blas, load  # noqa: E402
from exec.compiled.threads import _cores, free_cores  # noqa: E402

B, D, H = 32, 64, 256


def _operands():
    rng = np.random.default_rng(0)
    m = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return m(B, D), m(D, 4 * H), m(B, H), m(H, 4 * H), m(B, 4 * H), np.ascontiguousarray(m(H, 4 * H).T)


def _block(ops, calls: int, threads: int | None) -> tuple[float, float]:
    """us per LSTM step's three matmuls with `threads` BLAS threads (None: all), and the other cores' load."""
    x, wx, h, wh, dz, wht = ops
    before = load.snapshot()
    t0 = time.perf_counter()
    if threads is None:
        for _ in range(calls):
            x @ wx, h @ wh, dz @ wht
    else:
        with blas.at_most(threads):
            for _ in range(calls):
                x @ wx, h @ wh, dz @ wht
    us = (time.perf_counter() - t0) / calls * 1e6
    other = load.other_cores(before, load.snapshot())
    return us, other if other is not None else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--calls", type=int, default=200)
    a = ap.parse_args()
    cores = _cores()
    ops = _operands()
    _block(ops, 20, 1)
    _block(ops, 20, None)
    rows = []
    for k in range(a.blocks):
        order = (1, None) if k % 2 == 0 else (None, 1)
        got = {n: _block(ops, a.calls, n) for n in order}
        one, every = got[1], got[None]
        other = statistics.mean([one[1], every[1]])
        rule = free_cores(cores, other)
        faster = 1 if one[0] < every[0] else cores
        rows.append({"one_us": one[0], "all_us": every[0], "other_cores": other, "rule_threads": rule,
                     "faster_threads": faster, "rule_right": (rule >= cores) == (faster == cores)})
    print(f"LSTM step matmuls (x@Wx, h@Wh, dz@Wh.T; B={B} H={H} float32): us per step, {cores} cores, "
          f"BLAS threads now {blas.threads()}")
    print(f"{'block':>5}{'1 thread':>11}{'all':>11}{'other cores':>13}{'rule':>6}{'faster':>8}{'right':>7}")
    for k, r in enumerate(rows):
        print(f"{k:>5}{r['one_us']:>11.0f}{r['all_us']:>11.0f}{r['other_cores']:>13.2f}{r['rule_threads']:>6}"
              f"{r['faster_threads']:>8}{'yes' if r['rule_right'] else 'NO':>7}")
    right = sum(r["rule_right"] for r in rows)
    print(f"the rule chose the faster count in {right} of {len(rows)} blocks; median all/1 thread "
          f"{statistics.median(r['all_us'] / r['one_us'] for r in rows):.2f}")
    print("BENCH_JSON: " + json.dumps({"bench": "blas_threads", "cores": cores, "calls": a.calls, "blocks": rows,
                                       "rule_right": right}))


if __name__ == "__main__":
    main()
