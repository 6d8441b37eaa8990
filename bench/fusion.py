"""Fusing an LSTM cell's elementwise chains: numpy's kernels against numexpr and numba, same run.

The chains compiled code runs in `bench/lstm.py`'s loop bodies (B=32, H=256, float32; the gate inputs
are the column blocks of one (32, 1024) matrix, as np.split gives them):
  forward   c = sigmoid(f) * c + sigmoid(i) * tanh(g) ;  h = sigmoid(o) * tanh(c)
  backward  the gates' gradients from dh, dc and the saved values (no transcendentals), joined into
            one (32, 1024) dz, and dc for the step before
Variants:
  numpy            one numpy call per op, as compiled code calls the kernels (sigmoid in one buffer)
  numpy_out        the same ops into buffers kept across calls (`out=`): no allocation
  numexpr          one `numexpr.evaluate` per result (one thread: the cores are shared)
  numba            one @njit loop over the elements computing every result
  numba_vectorize  one @vectorize ufunc per result (forward only)
and one op at a time (multiply, exp, tanh): numpy's ufunc against a precompiled numexpr program with one
and with two threads.
Method: every variant runs `--calls` times per round, the variants interleaved round by round;
the figure is the median over rounds of µs per call, the ratio against numpy in the same round's
median. Results are checked against numpy's (float32 rounding). A variant whose library is not
installed is skipped (`pip install -e '.[bench]'` has both). Ends with one line `BENCH_JSON: {...}`.

Usage: python bench/fusion.py [--rounds 7] [--calls 2000]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import time

import numpy as np

B, H = 32, 256


def _data():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((B, 4 * H)).astype(np.float32)
    c = rng.standard_normal((B, H)).astype(np.float32)
    saved = [rng.random((B, H)).astype(np.float32) for _ in range(8)]  # dh, tc, o, c_prev, i, f, g, dc
    return z, c, saved


def _sigmoid(x):
    out = np.negative(x)
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


def forward_numpy(z, c):
    i, f, g, o = np.split(z, 4, axis=1)
    c2 = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return c2, _sigmoid(o) * np.tanh(c2)


def forward_numpy_out():
    bufs = [np.empty((B, H), np.float32) for _ in range(5)]

    def run(z, c):
        i, f, g, o = np.split(z, 4, axis=1)
        a, b, e, c2, h = bufs
        np.negative(f, out=a)
        np.exp(a, out=a)
        a += 1
        np.divide(c, a, out=a)
        np.negative(i, out=b)
        np.exp(b, out=b)
        b += 1
        np.tanh(g, out=c2)
        np.divide(c2, b, out=c2)
        c2 += a
        np.negative(o, out=e)
        np.exp(e, out=e)
        e += 1
        np.tanh(c2, out=h)
        np.divide(h, e, out=h)
        return c2, h
    return run


def backward_numpy(dh, tc, o, cp, i, f, g, dc):
    do = (dh * tc) * o * (1 - o)
    dc2 = dc + (1 - tc * tc) * (o * dh)
    di = (dc2 * g) * i * (1 - i)
    dg = (dc2 * i) * (1 - g * g)
    df = (dc2 * cp) * f * (1 - f)
    return np.concatenate([di, df, dg, do], axis=1), dc2 * f


def numexpr_variants():
    import numexpr as ne
    ne.set_num_threads(1)

    def forward(z, c):
        i, f, g, o = np.split(z, 4, axis=1)
        c2 = ne.evaluate("c / (1 + exp(-f)) + tanh(g) / (1 + exp(-i))", local_dict={"c": c, "f": f, "g": g, "i": i})
        return c2, ne.evaluate("tanh(c2) / (1 + exp(-o))", local_dict={"c2": c2, "o": o})

    def backward(dh, tc, o, cp, i, f, g, dc):
        dz = np.empty((B, 4 * H), np.float32)
        names = {"dh": dh, "tc": tc, "o": o, "cp": cp, "i": i, "f": f, "g": g, "dc": dc}
        names["dc2"] = ne.evaluate("dc + (1 - tc * tc) * (o * dh)", local_dict=names)
        ne.evaluate("(dh * tc) * o * (1 - o)", local_dict=names, out=dz[:, 3 * H:])
        ne.evaluate("(dc2 * g) * i * (1 - i)", local_dict=names, out=dz[:, :H])
        ne.evaluate("(dc2 * cp) * f * (1 - f)", local_dict=names, out=dz[:, H:2 * H])
        ne.evaluate("(dc2 * i) * (1 - g * g)", local_dict=names, out=dz[:, 2 * H:3 * H])
        return dz, ne.evaluate("dc2 * f", local_dict=names)
    return forward, backward


def numba_variants():
    import numba

    @numba.njit
    def cell(z, c, c2, h):
        for b in range(z.shape[0]):
            for j in range(c.shape[1]):
                i = 1 / (1 + np.exp(-z[b, j]))
                f = 1 / (1 + np.exp(-z[b, H + j]))
                o = 1 / (1 + np.exp(-z[b, 3 * H + j]))
                cc = f * c[b, j] + i * np.tanh(z[b, 2 * H + j])
                c2[b, j] = cc
                h[b, j] = o * np.tanh(cc)

    @numba.njit
    def cell_grad(dh, tc, o, cp, i, f, g, dc, dz, dcn):
        for b in range(dh.shape[0]):
            for j in range(dh.shape[1]):
                oo, t, d = o[b, j], tc[b, j], dh[b, j]
                dz[b, 3 * H + j] = d * t * oo * (1 - oo)
                c2 = dc[b, j] + (1 - t * t) * (oo * d)
                ii, gg, ff = i[b, j], g[b, j], f[b, j]
                dz[b, j] = c2 * gg * ii * (1 - ii)
                dz[b, 2 * H + j] = c2 * ii * (1 - gg * gg)
                dz[b, H + j] = c2 * cp[b, j] * ff * (1 - ff)
                dcn[b, j] = c2 * ff

    @numba.vectorize(["float32(float32, float32, float32, float32)"])
    def c_next(i, f, g, c):
        return c / (np.float32(1) + np.exp(-f)) + np.tanh(g) / (np.float32(1) + np.exp(-i))

    @numba.vectorize(["float32(float32, float32)"])
    def h_next(c2, o):
        return np.tanh(c2) / (np.float32(1) + np.exp(-o))

    def forward(z, c):
        c2, h = np.empty_like(c), np.empty_like(c)
        cell(z, c, c2, h)
        return c2, h

    def forward_vectorize(z, c):
        i, f, g, o = np.split(z, 4, axis=1)
        c2 = c_next(i, f, g, c)
        return c2, h_next(c2, o)

    def backward(*saved):
        dz, dcn = np.empty((B, 4 * H), np.float32), np.empty((B, H), np.float32)
        cell_grad(*saved, dz, dcn)
        return dz, dcn
    return forward, forward_vectorize, backward


def variants() -> tuple[dict, dict, list]:
    fwd = {"numpy": forward_numpy, "numpy_out": forward_numpy_out()}
    bwd = {"numpy": backward_numpy}
    skipped = []
    if importlib.util.find_spec("numexpr"):
        fwd["numexpr"], bwd["numexpr"] = numexpr_variants()
    else:
        skipped.append("numexpr")
    if importlib.util.find_spec("numba"):
        fwd["numba"], fwd["numba_vectorize"], bwd["numba"] = numba_variants()
    else:
        skipped.append("numba")
    return fwd, bwd, skipped


def measure(fns: dict, args: tuple, rounds: int, calls: int) -> dict:
    want = fns["numpy"](*args)
    for name, fn in fns.items():  # checks the results, and compiles numba's functions before timing
        for a, b in zip(fn(*args), want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
    times: dict = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn(*args)
            times[name].append((time.perf_counter() - t0) / calls * 1e6)
    base = times["numpy"]
    return {k: {"us": statistics.median(v), "vs_numpy": statistics.median(x / y for x, y in zip(v, base)),
                "rounds_us": v} for k, v in times.items()}


def single_ops(rounds: int, calls: int) -> dict:
    """One op on a (32, 256) float32 block: numpy's ufunc against a precompiled numexpr program (its cheapest
    call), with one thread and with two."""
    import numexpr as ne
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((B, H)).astype(np.float32) for _ in range(2))
    ops = {"multiply": ("x * y", lambda: np.multiply(x, y)), "exp": ("exp(x)", lambda: np.exp(x)),
           "tanh": ("tanh(x)", lambda: np.tanh(x))}
    out = {}
    for name, (expr, numpy_fn) in ops.items():
        names = ("x", "y") if "y" in expr else ("x",)
        program = ne.NumExpr(expr, signature=[(n, float) for n in names])  # numexpr's `float` is float32
        args = (x, y)[:len(names)]
        fns = {"numpy": numpy_fn, "numexpr_1": lambda p=program: p(*args), "numexpr_2": lambda p=program: p(*args)}
        times: dict = {k: [] for k in fns}
        for _ in range(rounds):
            for k, fn in fns.items():
                ne.set_num_threads(2 if k == "numexpr_2" else 1)
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                times[k].append((time.perf_counter() - t0) / calls * 1e6)
        out[name] = {k: statistics.median(v) for k, v in times.items()}
    ne.set_num_threads(1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args()
    z, c, saved = _data()
    fwd, bwd, skipped = variants()
    results = {"forward": measure(fwd, (z, c), a.rounds, a.calls),
               "backward": measure(bwd, tuple(saved), a.rounds, a.calls)}
    load = os.getloadavg()
    print(f"LSTM cell chains, B={B} H={H} float32: us per call, median of {a.rounds} interleaved rounds of "
          f"{a.calls} calls (load average {load[0]:.2f})")
    for chain, res in results.items():
        print(f"\n{chain:<16}{'us/call':>10}{'x numpy':>10}")
        for name, r in res.items():
            print(f"{name:<16}{r['us']:>10.1f}{r['vs_numpy']:>10.2f}")
    if "numexpr" not in skipped:
        results["single_ops"] = single_ops(a.rounds, a.calls)
        print(f"\n{'one op':<16}{'numpy us':>10}{'numexpr 1t':>12}{'numexpr 2t':>12}")
        for name, r in results["single_ops"].items():
            print(f"{name:<16}{r['numpy']:>10.1f}{r['numexpr_1']:>12.1f}{r['numexpr_2']:>12.1f}")
    print(f"\nnot installed, skipped: {', '.join(skipped) or 'none'}")
    versions = {m: __import__(m).__version__ for m in ("numexpr", "numba") if m not in skipped}
    print("BENCH_JSON: " + json.dumps({
        "bench": "fusion", "B": B, "H": H, "rounds": a.rounds, "calls": a.calls, "load_average": load,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "numpy": np.__version__,
                    **versions}, "skipped": skipped, "results": results}))


if __name__ == "__main__":
    main()
