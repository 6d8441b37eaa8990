"""A loop whose body is placed on "/gpu:0": what it costs against the same loop on the CPU, and what it copies.

Model: h_t = tanh(h_{t-1} @ W + b) for t < T, and loss = sum(h_T), with its gradient wrt (W, b);
float32, B x H = 64 x 256. The counter, the predicate and T are integer scalars: placement keeps
them on the host (dist/placement.py, rule 4), so the device's part of the loop receives its
predicate without a copy. Variants:
  cpu        every node on the host (Session without a device)
  simulated  the body (and its gradient) on SimulatedDevice "/gpu:0": numpy kernels launched on its
             compute stream, copies on its worker-thread copy streams
  cupy       the same on CupyDevice, where cupy sees a GPU (skipped otherwise)
Reported: step time (median of --repeats runs after a warm-up), copies per run in each direction
(the partitioned plan's `copies`) for T and 2T iterations (equal: nothing is copied per iteration),
and the gradients' largest difference from the CPU's. Ends with one line `BENCH_JSON: {...}`.

Usage: python bench/gpu_partition.py [--steps 50] [--repeats 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import grad
import graph
from exec import Session
from exec.device import CupyDevice, SimulatedDevice, cupy_available
from exec.multi_device import DevicesPlan

B, H = 64, 256


def build(on_gpu: bool):
    g = graph.Graph()
    with g.as_default():
        n = graph.placeholder(np.int64, (), name="n")
        w = graph.placeholder(np.float32, (H, H), name="w")
        b = graph.placeholder(np.float32, (H,), name="b")
        h0 = graph.placeholder(np.float32, (B, H), name="h0")
        with graph.device("/gpu:0" if on_gpu else "/cpu:0"):
            _, h = graph.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, graph.tanh(h @ w + b)),
                                    (graph.constant(0), h0))
            loss = graph.reduce_sum(h)
        grads = grad.gradients(loss, [w, b])
    return g, (n, w, b, h0), [loss, *grads]


def measure(device, steps: int, repeats: int, values):
    g, feeds, fetches = build(device is not None)
    sess = Session(g, device=device, inter_op_threads=0, mode="dataflow")
    out, copies = None, []
    for t in (steps, 2 * steps):
        out = sess.run(fetches, dict(zip(feeds, (t, *values))))
        plans = [p for p in sess._plans.values() if isinstance(p, DevicesPlan)]
        copies.append(dict(plans[-1].copies) if plans else None)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = sess.run(fetches, dict(zip(feeds, (steps, *values))))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), copies, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    values = ((rng.standard_normal((H, H)) / np.sqrt(H)).astype(np.float32),
              rng.standard_normal(H).astype(np.float32) * 0.1, rng.standard_normal((B, H)).astype(np.float32))
    variants = {"cpu": None, "simulated": SimulatedDevice()}
    if cupy_available():
        variants["cupy"] = CupyDevice()
    result, base = {}, None
    for name, device in variants.items():
        step, copies, out = measure(device, args.steps, args.repeats, values)
        base = out if base is None else base
        diff = max(float(np.max(np.abs(np.asarray(a) - np.asarray(c)))) for a, c in zip(out, base))
        result[name] = {"step_s": round(step, 5), "copies_T": copies[0], "copies_2T": copies[1], "max_diff": diff}
        print(f"{name:10s} step {step * 1e3:8.2f} ms  copies at T {copies[0]}  at 2T {copies[1]}  "
              f"max |diff| vs cpu {diff:.2e}")
    print("BENCH_JSON: " + json.dumps({"steps": args.steps, "B": B, "H": H, **result}))


if __name__ == "__main__":
    main()
