"""The DQN agent step of bench/dqn.py in the peer frameworks: TensorFlow 1, JAX, torch and plain numpy.

Same workload (bench/_dqn_workload.py: network, replay memory, schedule, environment, initial weights) and
method as bench/dqn.py, so every ratio it prints can be reproduced from a clean clone with
`pip install -e '.[bench]'`. Variants (each framework in a process of its own; an in-graph / out-of-graph
pair shares one, its blocks interleaved):
  tf1_in_graph      TF1 graph mode, control flow v1 (Switch / Merge, the paper's executor): the whole step as
                    ONE Session.run per interaction; its conditionals are tf.compat.v1.cond, ordered store ->
                    train -> copy -> act by control dependencies
  tf1_out_of_graph  TF1 graph; Python decides; separate Session.runs for store / train / copy / act
  jax_in_graph      ONE jax.jit per interaction (state donated), lax.cond for the decisions, the PRNG key in
                    the state
  jax_out_of_graph  Python decides; separate jitted store (donated buffers), train, act
  torch_eager       torch, Python decides (torch has no in-graph conditionals outside torch.compile): replay
                    memory in tensors, autograd, SGD under no_grad
  numpy_python      plain numpy + Python, hand-written backprop (the floor)
A framework that is not installed is skipped. Ends with one line `BENCH_JSON: {...}`.

Usage: python bench/dqn_peers.py [--only tf1,jax,torch,numpy] [--blocks 8] [--block-steps 1000]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _dqn_workload as W  # noqa: E402
import _procs as P  # noqa: E402
from _dqn_workload import ACT, BATCH, CAP, EPS, GAMMA, LEARN_START, LR, OBS, TARGET_EVERY, TRAIN_EVERY  # noqa: E402

# framework -> (its module, the builders: a pair (in-graph, out-of-graph) or one variant)
FRAMEWORKS = {"tf1": ("tensorflow", ("tf1_in_graph", "tf1_out_of_graph")),
              "jax": ("jax", ("jax_in_graph", "jax_out_of_graph")),
              "torch": ("torch", ("torch_eager",)),
              "numpy": ("numpy", ("numpy_python",))}


# ======================================================================= TF1 (control flow v1)

def _tf1_graph(in_graph):
    """The TF1 graph (tf.compat.v1.cond -> Switch / Merge), its session, placeholders and fetches."""
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.disable_control_flow_v2()
    g = tf.Graph()
    nodes = {}
    with g.as_default():
        tf.compat.v1.set_random_seed(1)
        init = W.init_params()
        params = [tf.compat.v1.get_variable(f"q{k}", initializer=p) for k, p in enumerate(init)]
        target = [tf.compat.v1.get_variable(f"t{k}", initializer=p) for k, p in enumerate(init)]
        buf = {k: tf.compat.v1.get_variable(f"b{k}", initializer=z) for k, z in (
            ("s", tf.zeros([CAP, OBS])), ("a", tf.zeros([CAP], tf.int32)), ("r", tf.zeros([CAP])),
            ("s2", tf.zeros([CAP, OBS])), ("d", tf.zeros([CAP])))}
        step, n_train, n_copy = (tf.compat.v1.get_variable(n, initializer=tf.constant(0, tf.int32))
                                 for n in ("step", "n_train", "n_copy"))
        ph = {k: tf.compat.v1.placeholder(dt, sh, name=k) for k, dt, sh in (
            ("s", tf.float32, [OBS]), ("a", tf.int32, []), ("r", tf.float32, []),
            ("s2", tf.float32, [OBS]), ("d", tf.float32, []), ("s_next", tf.float32, [OBS]),
            ("i", tf.int32, []), ("count", tf.int32, []))}

        def q(ps, s):
            W1, b1, W2, b2 = ps
            return tf.matmul(tf.nn.relu(tf.matmul(s, W1) + b1), W2) + b2

        def store_ops(i):
            return [buf[k].scatter_nd_update([[i]], [ph[k]]) for k in ("s", "a", "r", "s2", "d")]

        def train_ops(count):
            idx = tf.random.uniform([BATCH], 0, count, dtype=tf.int32)
            s, a, r, s2, d = (tf.gather(buf[k], idx) for k in ("s", "a", "r", "s2", "d"))
            y = r + GAMMA * (1.0 - d) * tf.reduce_max(q(target, s2), axis=1)
            q_sa = tf.gather(q(params, s), a[:, None], batch_dims=1)[:, 0]
            loss = tf.reduce_mean(tf.square(q_sa - tf.stop_gradient(y)))
            return [p.assign_sub(LR * gr) for p, gr in zip(params, tf.gradients(loss, params))], loss

        def greedy(s):
            return tf.argmax(q(params, s[None, :]), axis=1, output_type=tf.int32)[0]

        if in_graph:
            with tf.control_dependencies(store_ops(step % CAP)):
                t = step.assign_add(1)
            count = tf.minimum(t, CAP)

            def do_train():
                ups, loss = train_ops(count)
                with tf.control_dependencies(ups + [n_train.assign_add(1)]):
                    return tf.identity(loss)

            train_out = tf.compat.v1.cond(tf.logical_and(count >= LEARN_START, tf.equal(t % TRAIN_EVERY, 0)),
                                          do_train, lambda: tf.constant(0.0))
            with tf.control_dependencies([train_out]):
                t_after_train = tf.identity(t)

            def do_copy():
                with tf.control_dependencies([tp.assign(p) for tp, p in zip(target, params)]
                                             + [n_copy.assign_add(1)]):
                    return tf.constant(1)

            copy_out = tf.compat.v1.cond(tf.equal(t_after_train % TARGET_EVERY, 0), do_copy, lambda: tf.constant(0))
            with tf.control_dependencies([copy_out]):
                coin = tf.random.uniform([])
            nodes["action"] = tf.compat.v1.cond(coin < EPS, lambda: tf.random.uniform([], 0, ACT, dtype=tf.int32),
                                                lambda: greedy(ph["s_next"]))
        else:
            nodes["store"] = tf.group(*store_ops(ph["i"]))
            nodes["train"] = tf.group(*train_ops(ph["count"])[0])
            nodes["copy"] = tf.group(*[tp.assign(p) for tp, p in zip(target, params)])
            nodes["act"] = greedy(ph["s_next"])
        nodes["counters"] = [step, n_train, n_copy]
        init_op = tf.compat.v1.global_variables_initializer()
    sess = tf.compat.v1.Session(graph=g)
    sess.run(init_op)
    return sess, ph, nodes


def build_tf1_in_graph():
    sess, ph, nodes = _tf1_graph(True)
    env, state, act = W.Env(), {"a": 0}, nodes["action"]

    def run(nsteps):
        a = state["a"]
        for _ in range(nsteps):
            s, r, s2, d, s_next = env.step(a)
            a = int(sess.run(act, {ph["s"]: s, ph["a"]: np.int32(a), ph["r"]: r, ph["s2"]: s2, ph["d"]: d,
                                   ph["s_next"]: s_next}))
        state["a"] = a

    def counters():
        t, n_tr, n_cp = sess.run(nodes["counters"])
        return {"t": int(t), "train_steps": int(n_tr), "target_copies": int(n_cp)}

    run.counters = counters
    return run


def build_tf1_out_of_graph():
    sess, ph, nodes = _tf1_graph(False)
    env, rng = W.Env(), np.random.default_rng(7)
    st = {"t": 0, "a": 0, "train": 0, "copy": 0}

    def run(nsteps):
        t, a = st["t"], st["a"]
        for _ in range(nsteps):
            s, r, s2, d, s_next = env.step(a)
            sess.run(nodes["store"], {ph["i"]: np.int32(t % CAP), ph["s"]: s, ph["a"]: np.int32(a), ph["r"]: r,
                                      ph["s2"]: s2, ph["d"]: d})
            t += 1
            count = min(t, CAP)
            if count >= LEARN_START and t % TRAIN_EVERY == 0:
                sess.run(nodes["train"], {ph["count"]: np.int32(count)})
                st["train"] += 1
            if t % TARGET_EVERY == 0:
                sess.run(nodes["copy"])
                st["copy"] += 1
            a = int(rng.integers(ACT)) if rng.random() < EPS else int(sess.run(nodes["act"], {ph["s_next"]: s_next}))
        st["t"], st["a"] = t, a

    run.counters = lambda: {"t": st["t"], "train_steps": st["train"], "target_copies": st["copy"]}
    return run


# ======================================================================= JAX

def _jax_common():
    import jax
    import jax.numpy as jnp

    def q(ps, s):
        W1, b1, W2, b2 = ps
        return jax.nn.relu(s @ W1 + b1) @ W2 + b2

    def loss_fn(ps, target, s, a, r, s2, d):
        y = r + GAMMA * (1.0 - d) * jnp.max(q(target, s2), axis=1)
        q_sa = jnp.take_along_axis(q(ps, s), a[:, None], axis=1)[:, 0]
        return jnp.mean((q_sa - y) ** 2)

    def train(ps, target, buf, count, key):
        idx = jax.random.randint(key, (BATCH,), 0, count)
        g = jax.grad(loss_fn)(ps, target, *(buf[k][idx] for k in ("s", "a", "r", "s2", "d")))
        return tuple(p - LR * gp for p, gp in zip(ps, g))

    def store(buf, i, s, a, r, s2, d):
        return {k: buf[k].at[i].set(v) for k, v in (("s", s), ("a", a), ("r", r), ("s2", s2), ("d", d))}

    def greedy(ps, s):
        return jnp.argmax(q(ps, s[None, :]), axis=1)[0].astype(jnp.int32)

    ps = tuple(jnp.asarray(p) for p in W.init_params())
    buf = {"s": jnp.zeros((CAP, OBS)), "a": jnp.zeros((CAP,), jnp.int32), "r": jnp.zeros((CAP,)),
           "s2": jnp.zeros((CAP, OBS)), "d": jnp.zeros((CAP,))}
    return jax, jnp, train, store, greedy, ps, buf


def build_jax_in_graph():
    from jax import lax

    jax, jnp, train, store, greedy, ps, buf = _jax_common()

    def agent_step(state, s, a, r, s2, d, s_next):
        buf = store(state["buf"], state["t"] % CAP, s, a, r, s2, d)
        t = state["t"] + 1
        count = jnp.minimum(t, CAP)
        key, k_train, k_eps, k_act = jax.random.split(state["key"], 4)
        do_train = (count >= LEARN_START) & (t % TRAIN_EVERY == 0)
        ps = lax.cond(do_train, lambda: train(state["ps"], state["target"], buf, count, k_train), lambda: state["ps"])
        do_copy = t % TARGET_EVERY == 0
        target = lax.cond(do_copy, lambda: ps, lambda: state["target"])
        a_next = lax.cond(jax.random.uniform(k_eps) < EPS,
                          lambda: jax.random.randint(k_act, (), 0, ACT, dtype=jnp.int32), lambda: greedy(ps, s_next))
        return {"ps": ps, "target": target, "buf": buf, "t": t, "key": key,
                "n_train": state["n_train"] + do_train.astype(jnp.int32),
                "n_copy": state["n_copy"] + do_copy.astype(jnp.int32)}, a_next

    step_fn = jax.jit(agent_step, donate_argnums=0)
    st = {"state": {"ps": ps, "target": tuple(jnp.array(p) for p in ps), "buf": buf, "t": jnp.int32(0),
                    "key": jax.random.PRNGKey(1), "n_train": jnp.int32(0), "n_copy": jnp.int32(0)}, "a": 0}
    env = W.Env()

    def run(nsteps):
        state, a = st["state"], st["a"]
        for _ in range(nsteps):
            s, r, s2, d, s_next = env.step(a)
            state, a_arr = step_fn(state, s, np.int32(a), r, s2, d, s_next)
            a = int(a_arr)
        st["state"], st["a"] = state, a

    run.counters = lambda: {"t": int(st["state"]["t"]), "train_steps": int(st["state"]["n_train"]),
                            "target_copies": int(st["state"]["n_copy"])}
    return run


def build_jax_out_of_graph():
    jax, jnp, train, store, greedy, ps, buf = _jax_common()
    base_key = jax.random.PRNGKey(1)
    store_fn = jax.jit(store, donate_argnums=0)
    train_fn = jax.jit(lambda ps, target, buf, count, t: train(ps, target, buf, count, jax.random.fold_in(base_key, t)))
    act_fn = jax.jit(greedy)
    env, rng = W.Env(), np.random.default_rng(7)
    st = {"ps": ps, "target": ps, "buf": buf, "t": 0, "a": 0, "train": 0, "copy": 0}

    def run(nsteps):
        t, a, ps, target, buf = st["t"], st["a"], st["ps"], st["target"], st["buf"]
        for _ in range(nsteps):
            s, r, s2, d, s_next = env.step(a)
            buf = store_fn(buf, np.int32(t % CAP), s, np.int32(a), r, s2, d)
            t += 1
            count = min(t, CAP)
            if count >= LEARN_START and t % TRAIN_EVERY == 0:
                ps = train_fn(ps, target, buf, np.int32(count), np.int32(t))
                st["train"] += 1
            if t % TARGET_EVERY == 0:
                target = ps  # immutable arrays: a reference is a copy
                st["copy"] += 1
            a = int(rng.integers(ACT)) if rng.random() < EPS else int(act_fn(ps, s_next))
        st.update(t=t, a=a, ps=ps, target=target, buf=buf)

    run.counters = lambda: {"t": st["t"], "train_steps": st["train"], "target_copies": st["copy"]}
    return run


# ======================================================================= torch

def build_torch_eager():
    import torch

    ps = [torch.tensor(p, requires_grad=True) for p in W.init_params()]
    target = [p.detach().clone() for p in ps]
    buf = {"s": torch.zeros(CAP, OBS), "a": torch.zeros(CAP, dtype=torch.int64), "r": torch.zeros(CAP),
           "s2": torch.zeros(CAP, OBS), "d": torch.zeros(CAP)}
    env, rng = W.Env(), np.random.default_rng(7)
    gen = torch.Generator().manual_seed(1)
    st = {"t": 0, "a": 0, "train": 0, "copy": 0}
    rows = torch.arange(BATCH)

    def q(p, s):
        W1, b1, W2, b2 = p
        return torch.relu(s @ W1 + b1) @ W2 + b2

    def train(count):
        idx = torch.randint(0, count, (BATCH,), generator=gen)
        s, a, r, s2, d = (buf[k][idx] for k in ("s", "a", "r", "s2", "d"))
        with torch.no_grad():
            y = r + GAMMA * (1.0 - d) * q(target, s2).max(dim=1).values
        loss = torch.mean((q(ps, s)[rows, a] - y) ** 2)
        loss.backward()
        with torch.no_grad():
            for p in ps:
                p -= LR * p.grad
                p.grad = None

    def run(nsteps):
        t, a = st["t"], st["a"]
        for _ in range(nsteps):
            s, r, s2, d, s_next = env.step(a)
            i = t % CAP
            with torch.no_grad():
                buf["s"][i] = torch.from_numpy(s)
                buf["a"][i] = a
                buf["r"][i] = float(r)
                buf["s2"][i] = torch.from_numpy(s2)
                buf["d"][i] = float(d)
            t += 1
            count = min(t, CAP)
            if count >= LEARN_START and t % TRAIN_EVERY == 0:
                train(count)
                st["train"] += 1
            if t % TARGET_EVERY == 0:
                with torch.no_grad():
                    for tp, p in zip(target, ps):
                        tp.copy_(p)
                st["copy"] += 1
            if rng.random() < EPS:
                a = int(rng.integers(ACT))
            else:
                with torch.no_grad():
                    a = int(torch.argmax(q(ps, torch.from_numpy(s_next)[None, :])[0]))
        st["t"], st["a"] = t, a

    run.counters = lambda: {"t": st["t"], "train_steps": st["train"], "target_copies": st["copy"]}
    return run


BUILDERS = {"tf1_in_graph": build_tf1_in_graph, "tf1_out_of_graph": build_tf1_out_of_graph,
            "jax_in_graph": build_jax_in_graph, "jax_out_of_graph": build_jax_out_of_graph,
            "torch_eager": build_torch_eager, "numpy_python": W.build_numpy_python}


# ======================================================================= child and parent

def child(framework: str, blocks: int, block: int) -> None:
    module, names = FRAMEWORKS[framework]
    if len(names) == 2:
        out = W.measure_pair(BUILDERS[names[0]](), BUILDERS[names[1]](), names, blocks, block)
    else:
        out = {"single": W.measure_single(names[0], BUILDERS[names[0]](), blocks, block)}
    out["framework"], out["version"] = framework, __import__(module).__version__
    P.child_emit(out)


def installed(framework: str) -> bool:
    return importlib.util.find_spec(FRAMEWORKS[framework][0]) is not None


def run_all(only: list[str], blocks: int, block: int) -> dict:
    """Each framework in a child process of its own: {framework: its results or an error}, and the skipped."""
    results, skipped = {}, [f for f in only if not installed(f)]
    for fw in (f for f in only if installed(f)):
        results[fw] = P.run_child(os.path.abspath(__file__), [fw, "--blocks", blocks, "--block-steps", block],
                                  timeout=900)
        print(f"[peers {fw}] " + (results[fw]["error"] if "error" in results[fw] else "done"), file=sys.stderr,
              flush=True)
    return {"results": results, "skipped": skipped}


def rows(results: dict) -> list[dict]:
    """The variants' summaries, in order."""
    out = []
    for r in results.values():
        if "error" not in r:
            out += [r["in_graph"], r["out_of_graph"]] if "in_graph" in r else [r["single"]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only", default=",".join(FRAMEWORKS), help="frameworks, comma-separated")
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--block-steps", type=int, default=1000)
    ap.add_argument("framework", nargs="?")
    a = ap.parse_args()
    if a.child:
        return child(a.framework, a.blocks, a.block_steps)
    t0 = time.perf_counter()
    got = run_all(a.only.split(","), a.blocks, a.block_steps)
    print(f"dqn peers: interactions/s, median over blocks of {a.block_steps} (after {W.WARMUP_STEPS} warm-up)")
    for r in rows(got["results"]):
        print(f"{r['name']:<18}{r['steps_per_s']:>9.0f} steps/s{r['us_per_step']:>7.0f} us/step"
              f"   other cores {r['max_other_cores_used']:.2f}")
    for fw, r in got["results"].items():
        if "error" in r:
            print(f"{fw}: ERROR {r['error'][:120]}")
        elif "ratio_in_over_out" in r:
            print(f"{fw} in-graph / out-of-graph: {r['ratio_in_over_out']:.3f}")
    print(f"not installed, skipped: {', '.join(got['skipped']) or 'none'}; total wall {time.perf_counter() - t0:.0f} s")
    print("BENCH_JSON: " + json.dumps({"bench": "dqn_peers", **got}, default=float))


if __name__ == "__main__":
    main()
