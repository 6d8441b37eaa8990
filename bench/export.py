"""Exported models: onnxruntime's run time against ours on the same inputs, and the time an export takes.

Workloads (each exported with transpile.export_onnx, then run by both on the same inputs, outputs checked
equal before timing):
  lstm_sampler  examples/deploy.py's character sampler: an LSTM cell (E=32, H=256, V=96) in a graph while
                loop over 200 rows of Gumbel noise (no newline, so all 200 steps run): one ONNX Loop
  while_scalar  `while i < n: i += 1; x = x * 0.5 + 1.0` with n=1000 (per-iteration overhead)
  nested        a loop of 20 with a loop of 10 inside and a cond in that (small vectors)
  list_append   a loop of 200 that appends to a Python list (a TensorArray; an ONNX sequence)
  dqn_policy    examples/dqn.py's greedy action: a 4-64-2 MLP and an argmax (one call, no loop)
Reported per workload: export time (trace excluded: the function is called once first), onnxruntime
session creation, the median run time of ours (`transpile.function` call, default Session mode) and of
onnxruntime (InferenceSession.run, one intra-op thread, CPU provider), and ours / onnxruntime: a reference
for our compiled path (the baseline is measured in the same run). "other cores" is the mean number of
cores other processes used while timing (the machine is shared). Ends with one line `BENCH_JSON: {...}`.

Usage: python bench/export.py [--repeats 20] [--quick] [--only lstm_sampler,nested]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

import deploy  # noqa: E402  (examples/)
import dqn  # noqa: E402
import onnxruntime as ort  # noqa: E402
import rnn  # noqa: E402

import transpile  # noqa: E402
from bench._procs import Contention  # noqa: E402


def lstm_sampler():
    rng = np.random.default_rng(0)
    vocab = 96
    m = rnn.LSTM(vocab, 256, vocab, rng, n_embed=32)
    fn = transpile.function(lambda first, noise, newline, temperature:
                            deploy.sample_line(m, first, noise, newline, temperature))
    args = (np.array([5], np.int64), deploy.gumbel_noise(rng, 200, vocab), np.int64(-1), np.float32(0.8))
    return fn, args


def while_scalar():
    def loop(n, x):
        i = 0
        while i < n:
            i += 1
            x = x * 0.5 + 1.0
        return i, x
    return transpile.function(loop), (np.int64(1000), np.float32(0.0))


def nested():
    def program(n, v):
        total = v * 0.0
        for i in range(n):
            for j in range(10):
                if np.sum(total) > 10.0:
                    total = total * 0.5
                else:
                    total = total + v * (i + j)
        return total
    return transpile.function(program), (np.int64(20), np.linspace(-1.0, 1.0, 8))


def list_append():
    def program(n, x):
        out = []
        for i in range(n):
            x = np.tanh(x + 0.1)
            out.append(x)
        return np.stack(out)
    return transpile.function(program), (np.int64(200), np.zeros(16, np.float32))


def dqn_policy():
    agent = dqn.Agent(dqn.Config(), seed=0)
    return agent.greedy_action, (np.array([0.01, -0.2, 0.03, 0.4], np.float32),)


WORKLOADS = {"lstm_sampler": lstm_sampler, "while_scalar": while_scalar, "nested": nested,
             "list_append": list_append, "dqn_policy": dqn_policy}


def _median_time(run, repeats: int) -> float:
    run()  # warm-up: plans, caches, allocations
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(name: str, repeats: int, directory: str) -> dict:
    fn, args = WORKLOADS[name]()
    ours = fn(*args)  # traces: the export below times the export alone
    path = os.path.join(directory, f"{name}.onnx")
    t0 = time.perf_counter()
    model = transpile.export_onnx(fn, args, path)
    export_s = time.perf_counter() - t0
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    t0 = time.perf_counter()
    sess = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    session_s = time.perf_counter() - t0
    feeds = {i.name: np.asarray(a) for i, a in zip(model.graph.input, args, strict=True)}
    got = sess.run(None, feeds)
    want = [np.asarray(v) for v in (ours if isinstance(ours, tuple) else (ours,))]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=name)
    with Contention() as busy:
        ours_s = _median_time(lambda: fn(*args), repeats)
        ort_s = _median_time(lambda: sess.run(None, feeds), repeats)
    return {"export_ms": export_s * 1e3, "session_ms": session_s * 1e3, "ours_ms": ours_s * 1e3,
            "onnxruntime_ms": ort_s * 1e3, "ours_vs_onnxruntime": ours_s / ort_s,
            "onnx_nodes": len(model.graph.node), "other_cores": busy.other_cores}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="5 repeats")
    ap.add_argument("--only", default="", help="comma-separated workloads")
    a = ap.parse_args()
    repeats = 5 if a.quick else a.repeats
    names = [n for n in WORKLOADS if not a.only or n in a.only.split(",")]
    with tempfile.TemporaryDirectory() as directory:
        results = {name: measure(name, repeats, directory) for name in names}
    print(f"export: median of {repeats}, {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"numpy {np.__version__}, onnxruntime {ort.__version__}")
    hdr = (f"{'workload':<14}{'export ms':>10}{'session ms':>11}{'ours ms':>10}{'ort ms':>10}{'ours/ort':>10}"
           f"{'other cores':>12}")
    print(hdr)
    print("-" * len(hdr))
    for name, r in results.items():
        print(f"{name:<14}{r['export_ms']:>10.1f}{r['session_ms']:>11.1f}{r['ours_ms']:>10.3f}"
              f"{r['onnxruntime_ms']:>10.3f}{r['ours_vs_onnxruntime']:>9.2f}x{r['other_cores']:>12.2f}")
    print("BENCH_JSON: " + json.dumps({"bench": "export", "repeats": repeats, "onnxruntime": ort.__version__,
                                       "results": results}, default=float))


if __name__ == "__main__":
    main()
