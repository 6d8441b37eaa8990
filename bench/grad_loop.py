"""Gradient of a data-dependent-style loop of small matmuls: what reverse mode through a loop costs.

Loop (N iterations, default 1000): h = tanh(h @ W) with h float64[4, 32], W float64[32, 32],
loss = sum(h_N); the gradient is d loss / d W.
Variants, all measured in the same run (median of repeats):
  graph fwd        graph.while_loop, forward only (the session's "auto" mode: compiled code)
  graph fwd+bwd    the same loop and its gradient loop (grad.gradients): one run computes both
  dataflow fwd+bwd the same graph run by the frame-tagged dataflow executor (mode="dataflow")
  unrolled fwd     the body repeated N times in Python at graph-build time (a straight-line graph)
  unrolled fwd+bwd its gradient (also straight-line)
  numpy fwd+bwd    the loop and a hand-written backward loop in plain numpy (the floor)
Reported: ms per run, the backward's overhead (fwd+bwd / fwd), the in-graph loop against the
unrolled graph, against numpy, and the peak bytes held on gradient stacks against the bytes the
backward needs (2 float64[4, 32] per iteration: h for the matmul's gradient, tanh's output).
Ends with one JSON line.

Usage: python bench/grad_loop.py [--n 1000] [--repeats 7] [--quick]
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

import grad  # noqa: E402
import graph as G  # noqa: E402
from exec import Session  # noqa: E402
from exec.memory import memory_manager  # noqa: E402

B, D = 4, 32


def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(B, D)), rng.normal(size=(D, D)) / np.sqrt(D)


def graph_loop(n):
    g = G.Graph()
    with g.as_default():
        W = G.placeholder(np.float64, (D, D), name="W")
        h0 = G.placeholder(np.float64, (B, D), name="h0")
        _, h = G.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, G.tanh(G.matmul(h, W))), (G.constant(0), h0))
        loss = G.reduce_sum(h)
        (gW,) = grad.gradients(loss, [W])
    return g, W, h0, loss, gW


def unrolled(n):
    g = G.Graph()
    with g.as_default():
        W = G.placeholder(np.float64, (D, D), name="W")
        h0 = G.placeholder(np.float64, (B, D), name="h0")
        h = h0
        for _ in range(n):
            h = G.tanh(G.matmul(h, W))
        loss = G.reduce_sum(h)
        (gW,) = grad.gradients(loss, [W])
    return g, W, h0, loss, gW


def numpy_fwd_bwd(h0, W, n):
    hs, h = [], h0
    for _ in range(n):
        hs.append(h)
        h = np.tanh(h @ W)
        hs.append(h)
    loss = h.sum()
    g, gW = np.ones_like(h), np.zeros_like(W)
    for k in range(n - 1, -1, -1):
        y, x = hs[2 * k + 1], hs[2 * k]
        g = g * (1 - y * y)
        gW += x.T @ g
        g = g @ W.T
    return loss, gW


def timed(fn, repeats):
    fn()  # warm-up: plans, caches
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=0, help="executor pool threads (0: run kernels inline)")
    ap.add_argument("--quick", action="store_true", help="n=200, 3 repeats")
    a = ap.parse_args()
    if a.quick:
        a.n, a.repeats = 200, 3
    h0v, Wv = data()
    t_build = time.perf_counter()
    g, W, h0, loss, gW = graph_loop(a.n)
    build_loop_s = time.perf_counter() - t_build
    t_build = time.perf_counter()
    gu, Wu, h0u, lossu, gWu = unrolled(a.n)
    build_unrolled_s = time.perf_counter() - t_build
    sess = Session(g, inter_op_threads=a.threads)
    sessu = Session(gu, inter_op_threads=a.threads)
    sessdf = Session(g, inter_op_threads=a.threads, mode="dataflow")
    feeds, feedsu = {W: Wv, h0: h0v}, {Wu: Wv, h0u: h0v}

    ref_loss, ref_gW = numpy_fwd_bwd(h0v, Wv, a.n)
    got_loss, got_gW = sess.run([loss, gW], feeds)
    un_loss, un_gW = sessu.run([lossu, gWu], feedsu)
    err = float(np.max(np.abs(got_gW - ref_gW)) / np.max(np.abs(ref_gW)))
    err_unrolled = float(np.max(np.abs(got_gW - un_gW)) / np.max(np.abs(ref_gW)))

    mem = memory_manager(sess.runtime)
    mem.reset_peak()
    sess.run(gW, feeds)
    peak = mem.peak_bytes
    needed = a.n * 2 * B * D * 8

    t = {
        "graph_fwd": timed(lambda: sess.run(loss, feeds), a.repeats),
        "graph_fwd_bwd": timed(lambda: sess.run([loss, gW], feeds), a.repeats),
        "dataflow_fwd_bwd": timed(lambda: sessdf.run([loss, gW], feeds), a.repeats),
        "unrolled_fwd": timed(lambda: sessu.run(lossu, feedsu), a.repeats),
        "unrolled_fwd_bwd": timed(lambda: sessu.run([lossu, gWu], feedsu), a.repeats),
        "numpy_fwd_bwd": timed(lambda: numpy_fwd_bwd(h0v, Wv, a.n), a.repeats),
    }
    print(f"grad_loop: N={a.n} iterations of h = tanh(h @ W), h float64[{B},{D}], W float64[{D},{D}]; "
          f"median of {a.repeats}; {platform.machine()}, {os.cpu_count()} cpus, numpy {np.__version__}, "
          f"pool threads {a.threads}")
    hdr = f"{'variant':<20}{'ms/run':>10}{'us/iter':>10}{'vs graph fwd':>14}{'vs numpy':>10}"
    print(hdr)
    print("-" * len(hdr))
    for k, v in t.items():
        print(f"{k:<20}{v * 1e3:>10.2f}{v / a.n * 1e6:>10.1f}{v / t['graph_fwd']:>14.2f}{v / t['numpy_fwd_bwd']:>10.2f}")
    ratios = {
        "backward_overhead": t["graph_fwd_bwd"] / t["graph_fwd"],
        "unrolled_backward_overhead": t["unrolled_fwd_bwd"] / t["unrolled_fwd"],
        "loop_vs_unrolled_fwd_bwd": t["graph_fwd_bwd"] / t["unrolled_fwd_bwd"],
        "loop_vs_numpy_fwd_bwd": t["graph_fwd_bwd"] / t["numpy_fwd_bwd"],
        "compiled_vs_dataflow_fwd_bwd": t["graph_fwd_bwd"] / t["dataflow_fwd_bwd"],
    }
    print()
    print(f"fwd+bwd / fwd (in-graph loop): {ratios['backward_overhead']:.2f}   "
          f"(unrolled: {ratios['unrolled_backward_overhead']:.2f})")
    print(f"in-graph loop / unrolled, fwd+bwd: {ratios['loop_vs_unrolled_fwd_bwd']:.2f}   "
          f"vs numpy: {ratios['loop_vs_numpy_fwd_bwd']:.2f}   "
          f"compiled / dataflow: {ratios['compiled_vs_dataflow_fwd_bwd']:.2f}")
    print(f"peak stack memory: {peak} bytes = {peak / needed:.3f} x the {needed} bytes the backward reads "
          f"({peak / a.n:.0f} bytes/iteration)")
    print(f"graph build: loop + gradient {build_loop_s * 1e3:.1f} ms ({len(g.nodes)} nodes), "
          f"unrolled + gradient {build_unrolled_s * 1e3:.1f} ms ({len(gu.nodes)} nodes)")
    print(f"max |dW - numpy| / max |dW| = {err:.2e} (unrolled graph: {err_unrolled:.2e})")
    print(json.dumps({"bench": "grad_loop", "n": a.n, "batch": B, "dim": D, "repeats": a.repeats,
                      "threads": a.threads, "seconds": t, "ratios": ratios, "peak_stack_bytes": peak,
                      "needed_bytes": needed, "graph_nodes": len(g.nodes), "unrolled_nodes": len(gu.nodes),
                      "build_loop_s": build_loop_s, "build_unrolled_s": build_unrolled_s,
                      "rel_err_vs_numpy": err, "loss": float(got_loss), "numpy_loss": float(ref_loss)}))


if __name__ == "__main__":
    main()
