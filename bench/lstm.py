"""LSTM training step: our in-graph while loop against static unrolling, numpy, torch and JAX, same run.

Model (the peers' LSTM workload; float32):
    z_t = x_t @ Wx + h_{t-1} @ Wh + b ;  i, f, g, o = split(z_t, 4)
    c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g) ;  h_t = sigmoid(o) * tanh(c_t)
    loss = mean((stack_t h_t - Y)^2) ;  gradient wrt (Wx, Wh, b) ;  SGD, lr 0.1
  D=64, H=256, B=32, T=100 and 200, h_0 = c_0 = 0, data from numpy with seed 0 (the
  peers' make_data), so the first step's loss is 0.278955 (T=100) / 0.279086 (T=200)
  in every variant: checked, as proof that all compute the same function.
Variants (each in its own process; peak RSS belongs to one variant):
  dynamic    ours: a plain Python training step under @transpile.function, `for t in
             range(seq_len)` with seq_len a tensor argument -> ONE graph while loop (and its
             gradient loop with stacks); numpy-style cell; grad.gradients; grad.SGD(...).apply;
             run as the session's "auto" mode chooses (compiled code, exec/compiled/)
  dynamic_df the same run by the frame-tagged dataflow executor (mode="dataflow")
  static     the same function with seq_len in static_argnames: the loop unrolled at trace time
  numpy      plain numpy, the same per-step computation, hand-written backprop (the floor for
             a system that calls numpy kernels); numpy's BLAS threads as configured
  numpy_1t   the same with BLAS limited to one thread (exec.blas), as our executor runs it
  torch      torch eager, Python loop + autograd + SGD (when torch is installed)
  jax_scan   jax.jit(value_and_grad(lax.scan)) + SGD, params donated (when jax is installed)
  tf1_while  TensorFlow 1-style: graph mode, control flow v1 (Switch / Merge / Enter / Exit /
             NextIteration: the design we implement) tf.compat.v1.while_loop over TensorArrays,
             parallel_iterations=32, tf.gradients, assign_sub (when tensorflow is installed)
Method: every variant runs in a child process: 2 warm-up steps (the first, with tracing or
compiling, is reported apart), then the median of 5-15 timed steps (about 3 s). Variants run
interleaved, `--rounds` times each; a variant's figure is the median over all its timed steps.
"other cores" is the mean number of cores other processes used while the steps were timed (the
machine is shared: read every figure with it). Ratios compare figures from the same run.
Ends with one line `BENCH_JSON: {...}`.

Usage: python bench/lstm.py [--seq 100,200] [--rounds 2] [--only dynamic,torch] [--skip jax_scan]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _procs as P  # noqa: E402

D, H, B = 64, 256, 32
LR = 0.1
EXPECTED_LOSS = {100: 0.278955, 200: 0.279086}
VARIANTS = ["dynamic", "dynamic_df", "static", "numpy", "numpy_1t", "torch", "jax_scan", "tf1_while"]
OPTIONAL = {"torch": "torch", "jax_scan": "jax", "tf1_while": "tensorflow"}
MIN_REPEATS, MAX_REPEATS, TARGET_TIMED_S = 5, 15, 3.0


def make_data(T):
    """The peers' data: same generator, seed and order of draws."""
    rng = np.random.default_rng(0)
    Wx = (rng.standard_normal((D, 4 * H)) * 0.1).astype(np.float32)
    Wh = (rng.standard_normal((H, 4 * H)) * 0.05).astype(np.float32)
    b = np.zeros(4 * H, np.float32)
    X = rng.standard_normal((T, B, D)).astype(np.float32)
    Y = (rng.standard_normal((T, B, H)) * 0.5).astype(np.float32)
    return Wx, Wh, b, X, Y


# ---------------------------------------------------------------- ours

def build_ours(T, static, mode="auto"):
    import grad
    import graph
    import transpile

    Wx0, Wh0, b0, X, Y = make_data(T)
    Wx, Wh, b = graph.Variable(Wx0, name="Wx"), graph.Variable(Wh0, name="Wh"), graph.Variable(b0, name="b")
    params = [Wx, Wh, b]

    def train_step(X, Y, seq_len):
        h = np.zeros((B, H), np.float32)
        c = np.zeros((B, H), np.float32)
        hs = []
        for t in range(seq_len):
            z = X[t] @ Wx + h @ Wh + b
            i, f, g, o = np.split(z, 4, axis=1)
            c = graph.sigmoid(f) * c + graph.sigmoid(i) * np.tanh(g)
            h = graph.sigmoid(o) * np.tanh(c)
            hs.append(h)
        loss = np.mean((np.stack(hs) - Y) ** 2)
        grads = grad.gradients(loss, params)
        grad.SGD(LR).apply(grads, params)
        return loss

    step_fn = transpile.function(train_step, static_argnames=("seq_len",) if static else (), mode=mode)
    seq_len = T if static else np.int64(T)

    def step():
        return float(step_fn(X, Y, seq_len))

    def info():
        g = step_fn.get_graph(X, Y, seq_len)
        ops: dict = {}
        for n in g.nodes:
            ops[n.op] = ops.get(n.op, 0) + 1
        keep = ("Switch", "Merge", "Enter", "Exit", "NextIteration", "StackPush", "StackPop", "MatMul")
        return {"graph_nodes": len(g.nodes), "op_counts": {k: v for k, v in ops.items() if k in keep},
                "runs_on": _back_ends(step_fn)}

    step.info = info
    step.transpiled = step_fn  # bench/op_profile.py times its kernels
    return step


def _back_ends(fn) -> list[str]:
    """What runs each plan of a transpile.function's traces: compiled code or the dataflow executor (what
    mode="auto" chose)."""
    from op_profile import traces_of
    return sorted({"dataflow" if program is None else "compiled"
                   for trace in traces_of(fn) for _plan, program in trace.session._programs.values()})


# ---------------------------------------------------------------- numpy

def build_numpy(T, one_thread):
    Wx, Wh, b, X, Y = make_data(T)
    if one_thread:
        from exec import blas
        limit = blas.single_threaded
    else:
        from contextlib import nullcontext as limit

    def sigmoid_(v):
        np.negative(v, out=v)
        np.exp(v, out=v)
        v += 1.0
        np.reciprocal(v, out=v)

    def step():
        with limit(), np.errstate(over="ignore"):
            return _numpy_step(Wx, Wh, b, X, Y, sigmoid_)

    return step


def _numpy_step(Wx, Wh, b, X, Y, sigmoid_):
    T = X.shape[0]
    h = np.zeros((B, H), np.float32)
    c = np.zeros((B, H), np.float32)
    hs = np.empty((T, B, H), np.float32)
    saved = []
    for t in range(T):
        z = X[t] @ Wx
        z += h @ Wh
        z += b
        i, f, g, o = z[:, :H], z[:, H:2 * H], z[:, 2 * H:3 * H], z[:, 3 * H:]
        sigmoid_(i)
        sigmoid_(f)
        np.tanh(g, out=g)
        sigmoid_(o)
        c_prev = c
        c = f * c_prev
        c += i * g
        tc = np.tanh(c)
        h_prev = h
        h = hs[t]
        np.multiply(o, tc, out=h)
        saved.append((h_prev, c_prev, z, tc))
    diff = hs - Y
    loss = float(np.mean(np.square(diff)))
    dhs = diff
    dhs *= np.float32(2.0 / diff.size)
    dWx, dWh, db = np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)
    dh = np.zeros((B, H), np.float32)
    dc = np.zeros((B, H), np.float32)
    dz = np.empty((B, 4 * H), np.float32)
    di, df, dg, do = dz[:, :H], dz[:, H:2 * H], dz[:, 2 * H:3 * H], dz[:, 3 * H:]
    for t in range(T - 1, -1, -1):
        h_prev, c_prev, z, tc = saved[t]
        i, f, g, o = z[:, :H], z[:, H:2 * H], z[:, 2 * H:3 * H], z[:, 3 * H:]
        dh += dhs[t]
        np.multiply(dh, tc, out=do)
        do *= o
        do *= 1.0 - o                    # d pre-activation of o
        dc += dh * o * (1.0 - tc * tc)
        np.multiply(dc, g, out=di)
        di *= i
        di *= 1.0 - i
        np.multiply(dc, i, out=dg)
        dg *= 1.0 - g * g
        np.multiply(dc, c_prev, out=df)
        df *= f
        df *= 1.0 - f
        dc *= f
        dWx += X[t].T @ dz
        dWh += h_prev.T @ dz
        db += dz.sum(axis=0)
        dh = dz @ Wh.T
    Wx -= LR * dWx
    Wh -= LR * dWh
    b -= LR * db
    return loss


# ---------------------------------------------------------------- peers: torch, jax, TensorFlow 1 (the peers' method)

def build_torch(T):
    import torch

    Wx0, Wh0, b0, Xn, Yn = make_data(T)
    Wx, Wh, b = (torch.tensor(a, requires_grad=True) for a in (Wx0, Wh0, b0))
    params = [Wx, Wh, b]
    X, Y = torch.from_numpy(Xn), torch.from_numpy(Yn)

    def step():
        h, c = torch.zeros(B, H), torch.zeros(B, H)
        outs = []
        for t in range(T):
            z = X[t] @ Wx + h @ Wh + b
            i, f, g, o = torch.chunk(z, 4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        loss = torch.mean((torch.stack(outs) - Y) ** 2)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= LR * p.grad
                p.grad = None
        return float(loss)

    return step


def build_jax(T):
    import jax
    import jax.numpy as jnp
    from jax import lax

    Wx0, Wh0, b0, Xn, Yn = make_data(T)
    state = {"p": (jnp.asarray(Wx0), jnp.asarray(Wh0), jnp.asarray(b0))}
    X, Y = jnp.asarray(Xn), jnp.asarray(Yn)

    def cell(p, carry, x):
        Wx, Wh, b = p
        h, c = carry
        z = x @ Wx + h @ Wh + b
        i, f, g, o = jnp.split(z, 4, axis=1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    def loss_fn(p, X, Y):
        carry = (jnp.zeros((B, H), jnp.float32), jnp.zeros((B, H), jnp.float32))
        _, Hs = lax.scan(lambda cr, x: cell(p, cr, x), carry, X)
        return jnp.mean((Hs - Y) ** 2)

    def train_step_fn(p, X, Y):
        loss, gr = jax.value_and_grad(loss_fn)(p, X, Y)
        return tuple(a - LR * g for a, g in zip(p, gr)), loss

    train_step = jax.jit(train_step_fn, donate_argnums=0)

    def step():
        p, loss = train_step(state["p"], X, Y)
        loss.block_until_ready()
        state["p"] = p
        return float(loss)

    return step


def build_tf1(T):
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.disable_control_flow_v2()  # Switch / Merge / Enter / Exit / NextIteration
    Wx0, Wh0, b0, Xn, Yn = make_data(T)
    g = tf.Graph()
    with g.as_default():
        params = [tf.compat.v1.get_variable(name, initializer=v) for name, v in (("Wx", Wx0), ("Wh", Wh0), ("b", b0))]
        Wx, Wh, b = params
        xs = tf.TensorArray(tf.float32, size=T).unstack(tf.constant(Xn))

        def body(t, h, c, hs):
            z = tf.matmul(xs.read(t), Wx) + tf.matmul(h, Wh) + b
            i, f, gate, o = tf.split(z, 4, axis=1)
            c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(gate)
            h = tf.sigmoid(o) * tf.tanh(c)
            return t + 1, h, c, hs.write(t, h)

        zeros = tf.zeros([B, H])
        _, _, _, hs = tf.compat.v1.while_loop(lambda t, *_: t < T, body,
                                              [tf.constant(0), zeros, zeros, tf.TensorArray(tf.float32, size=T)],
                                              parallel_iterations=32)
        loss = tf.reduce_mean(tf.square(hs.stack() - tf.constant(Yn)))
        train = tf.group(*[p.assign_sub(LR * gr) for p, gr in zip(params, tf.gradients(loss, params))])
        init = tf.compat.v1.global_variables_initializer()
    sess = tf.compat.v1.Session(graph=g)
    sess.run(init)

    def step():
        value, _ = sess.run([loss, train])
        return float(value)

    return step


BUILDERS = {
    "dynamic": lambda T: build_ours(T, static=False),
    "dynamic_df": lambda T: build_ours(T, static=False, mode="dataflow"),
    "static": lambda T: build_ours(T, static=True),
    "numpy": lambda T: build_numpy(T, one_thread=False),
    "numpy_1t": lambda T: build_numpy(T, one_thread=True),
    "torch": build_torch,
    "jax_scan": build_jax,
    "tf1_while": build_tf1,
}


# ---------------------------------------------------------------- child and parent

def _current_rss_mib() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except OSError:
        return float("nan")


def child(variant: str, T: int) -> None:
    if variant in OPTIONAL:
        __import__(OPTIONAL[variant])  # the framework is part of the RSS baseline
    rss_base = _current_rss_mib()
    t0 = time.perf_counter()
    step = BUILDERS[variant](T)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    loss_first = step()
    first_s = time.perf_counter() - t0
    step()
    t0 = time.perf_counter()
    step()
    reps = int(max(MIN_REPEATS, min(MAX_REPEATS, TARGET_TIMED_S / max(time.perf_counter() - t0, 1e-6))))
    times = []
    with P.Contention() as cont:
        for _ in range(reps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
    out = {"variant": variant, "T": T, "times_ms": [t * 1e3 for t in times], "build_s": build_s,
           "first_step_s": first_s, "loss_first": loss_first, "other_cores": cont.other_cores,
           "rss_before_build_mib": rss_base}
    if hasattr(step, "info"):
        out["graph_info"] = step.info()
    out["peak_rss_mib"] = P.peak_rss_mib()
    out["rss_growth_mib"] = out["peak_rss_mib"] - rss_base
    P.child_emit(out)


def _available(variant: str) -> bool:
    return variant not in OPTIONAL or importlib.util.find_spec(OPTIONAL[variant]) is not None


def _summary(runs: list[dict]) -> dict:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"] if runs else "not run"}
    times = [t for r in ok for t in r["times_ms"]]
    return {"ms": statistics.median(times), "ms_min": min(times), "ms_max": max(times), "steps": len(times),
            "round_medians_ms": [statistics.median(r["times_ms"]) for r in ok],
            "other_cores": statistics.mean(r["other_cores"] for r in ok),
            "other_cores_max": max(r["other_cores"] for r in ok),
            "first_step_s": statistics.median(r["first_step_s"] for r in ok),
            "loss_first": ok[0]["loss_first"], "peak_rss_mib": max(r["peak_rss_mib"] for r in ok),
            "rss_growth_mib": max(r["rss_growth_mib"] for r in ok),
            **({"graph_info": ok[0]["graph_info"]} if "graph_info" in ok[0] else {})}


RATIOS = [("dynamic", "torch"), ("static", "torch"), ("dynamic", "static"), ("dynamic", "dynamic_df"), ("dynamic", "numpy"),
          ("dynamic", "numpy_1t"), ("dynamic", "jax_scan"), ("dynamic", "tf1_while")]


def _ratios(runs: dict) -> dict:
    """Each ratio twice: of the medians, and the median of the per-round ratios (pairs timed close together)."""
    out = {}
    for a, b in RATIOS:
        ra, rb = runs.get(a, []), runs.get(b, [])
        pairs = [statistics.median(x["times_ms"]) / statistics.median(y["times_ms"])
                 for x, y in zip(ra, rb) if "error" not in x and "error" not in y]
        if pairs:
            all_a = [t for x in ra if "error" not in x for t in x["times_ms"]]
            all_b = [t for y in rb if "error" not in y for t in y["times_ms"]]
            out[f"{a}/{b}"] = {"of_medians": statistics.median(all_a) / statistics.median(all_b),
                               "per_round_median": statistics.median(pairs)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--seq", default="100,200", help="sequence lengths, comma-separated")
    ap.add_argument("--rounds", type=int, default=2, help="times each variant runs, interleaved")
    ap.add_argument("--only", default="")
    ap.add_argument("--skip", default="")
    ap.add_argument("--max-wait", type=float, default=0.0,
                    help="seconds to wait before each child for other processes to go quiet (< 0.15 cores)")
    ap.add_argument("variant", nargs="?")
    a = ap.parse_args()
    if a.child:
        return child(a.variant, int(a.seq))
    names = [v for v in VARIANTS if (not a.only or v in a.only.split(",")) and v not in a.skip.split(",")]
    skipped = [v for v in names if not _available(v)]
    names = [v for v in names if v not in skipped]
    seqs = [int(s) for s in a.seq.split(",")]
    t_start = time.perf_counter()
    results: dict = {}
    for T in seqs:
        runs: dict = {v: [] for v in names}
        for r in range(a.rounds):
            order = names[r % len(names):] + names[:r % len(names)]  # a different variant goes first each round
            for v in order:
                before = P.wait_quiet(0.15, a.max_wait) if a.max_wait > 0 else None
                res = P.run_child(os.path.abspath(__file__), [v, "--seq", T])
                res["other_cores_before"] = before
                runs[v].append(res)
                msg = res["error"] if "error" in res else f"median {statistics.median(res['times_ms']):.1f} ms"
                print(f"[T={T} round {r + 1} {v}] {msg}", file=sys.stderr, flush=True)
        summary = {v: _summary(runs[v]) for v in names}
        ratios = _ratios(runs)
        results[T] = {"variants": summary, "ratios": ratios, "runs": runs}
        _print_table(T, summary, ratios, a.rounds)
    print(f"\ntotal wall {time.perf_counter() - t_start:.0f} s; not installed, skipped: {', '.join(skipped) or 'none'}")
    print("BENCH_JSON: " + json.dumps({
        "bench": "lstm", "B": B, "D": D, "H": H, "lr": LR, "rounds": a.rounds,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "numpy": np.__version__,
                    "platform": platform.platform()},
        "skipped": skipped, "results": {str(T): v for T, v in results.items()}}, default=float))


def _print_table(T, summary, ratios, rounds) -> None:
    print(f"\nlstm T={T} B={B} D={D} H={H}: ms per training step (fwd + bwd + SGD), median over {rounds} "
          f"interleaved round(s)")
    hdr = (f"{'variant':<10}{'ms/step':>9}{'min-max':>15}{'steps':>7}{'first s':>9}{'peak MiB':>10}"
           f"{'growth MiB':>12}{'loss step 1':>13}{'ok':>4}{'other cores':>13}")
    print(hdr)
    print("-" * len(hdr))
    for v, s in summary.items():
        if "error" in s:
            print(f"{v:<10} ERROR {s['error'][:100]}")
            continue
        ok = "yes" if abs(s["loss_first"] - EXPECTED_LOSS.get(T, s["loss_first"])) < 2e-6 else "NO"
        print(f"{v:<10}{s['ms']:>9.1f}{s['ms_min']:>7.1f}-{s['ms_max']:<7.1f}{s['steps']:>7}{s['first_step_s']:>9.2f}"
              f"{s['peak_rss_mib']:>10.0f}{s['rss_growth_mib']:>12.0f}{s['loss_first']:>13.6f}{ok:>4}"
              f"{s['other_cores']:>8.2f} (≤{s['other_cores_max']:.2f})")
    for v, s in summary.items():
        if "graph_info" in s and "runs_on" in s["graph_info"]:
            print(f"{v}: runs on {' and '.join(s['graph_info']['runs_on'])}")
    if ratios:
        print("ratios (time; > 1 = first is slower): " + "; ".join(
            f"{k} {v['of_medians']:.2f} (per round {v['per_round_median']:.2f})" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
