"""DQN agent step: in-graph against out-of-graph (client-driven) control flow, same run.

The workload and method are the peers' (shared/peers/dqn_step.py, RESULTS.md section 4), so the
figures compare with theirs:
  agent        Q-network 4 -> 64 (relu) -> 2, float32, the peers' seeded initial weights, and a
               target copy; replay memory of 10,000 transitions in Variables. Per interaction
               (t = transitions stored): store; if min(t, 10000) >= 500 and t % 4 == 0: one SGD
               step (lr 1e-3) on the mean squared TD error of 32 sampled transitions; if
               t % 100 == 0: copy the network to the target network; epsilon-greedy action
               (epsilon 0.1) for the next observation.
  environment  synthetic, numpy, outside the agent: observation ~ N(0,1)^4, reward 1 when the
               action is (obs[0] > 0), done with probability 0.05.
Variants:
  in_graph      examples/dqn.py `Agent.step`: ONE converted function per interaction; its `if`s
                are graph conds, counters are Variables, randomness from graph random ops
  out_of_graph  examples/dqn.py `PythonDecisions`: Python keeps the counter, draws epsilon and
                calls the converted remember / learn / update_target / greedy_action when due
  numpy_python  the peers' plain numpy + Python agent (hand-written backprop): the floor
Measured: interactions/s, median over blocks of 1000 interactions after 600 warm-up
interactions (each block holds exactly 250 learning steps and 10 target copies, checked). The
in-graph and out-of-graph agents live in one process and their blocks are interleaved (AB, BA,
...); the ratio is the median of the per-pair ratios. Blocks during which other processes used
>= 0.1 cores are dropped when at least 3 clean ones remain ("other cores" column).

Usage: python bench/dqn.py [--blocks 8] [--block-steps 1000] [--quick] [--peers]
  --peers  also runs shared/peers/dqn_step.py (jax and numpy variants; needs the `bench` extra)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))

import dqn  # noqa: E402

OBS, HID, ACT = 4, 64, 2
CAP, BATCH, LEARN_START, TRAIN_EVERY, TARGET_EVERY = 10_000, 32, 500, 4, 100
GAMMA, LR, EPS = 0.99, 1e-3, 0.1
WARMUP_STEPS = 600
CLEAN = 0.1
PEER_CONFIG = dqn.Config(hidden=(HID,), memory_size=CAP, batch_size=BATCH, learn_start=LEARN_START,
                         train_every=TRAIN_EVERY, target_every=TARGET_EVERY, gamma=GAMMA, learning_rate=LR,
                         epsilon_start=EPS, epsilon_end=EPS, double_dqn=False, optimizer="sgd")


def init_params():
    """The peers' initial weights."""
    rng = np.random.default_rng(0)
    W1 = (rng.standard_normal((OBS, HID)) / np.sqrt(OBS)).astype(np.float32)
    b1 = np.zeros(HID, np.float32)
    W2 = (rng.standard_normal((HID, ACT)) / np.sqrt(HID)).astype(np.float32)
    b2 = np.zeros(ACT, np.float32)
    return [W1, b1, W2, b2]


class Env:
    """The peers' synthetic environment."""

    def __init__(self, seed=123):
        self.rng = np.random.default_rng(seed)
        self.obs = self._o()

    def _o(self):
        return self.rng.standard_normal(OBS).astype(np.float32)

    def step(self, a):
        s = self.obs
        r = np.float32(1.0 if a == int(s[0] > 0) else 0.0)
        s2 = self._o()
        done = np.float32(self.rng.random() < 0.05)
        s_next = self._o() if done else s2
        self.obs = s_next
        return s, r, s2, done, s_next


# --------------------------------------------------------------------------- our agents

def build_ours(in_graph: bool):
    agent = dqn.Agent(PEER_CONFIG, seed=1)
    for params in (agent.q_net.params, agent.target_net.params):
        for p, value in zip(params, init_params()):
            p.load(value)
    step = agent.step if in_graph else dqn.PythonDecisions(agent, seed=7).step
    env = Env()
    st = {"a": 0}

    def run(nsteps):
        a = st["a"]
        for _ in range(nsteps):
            s, r, s2, d, s_next = env.step(a)
            a = int(step(s, a, r, s2, d, s_next))
        st["a"] = a

    run.counters = lambda: {"t": int(agent.steps.value), "train_steps": int(agent.train_steps.value),
                            "target_copies": int(agent.target_copies.value)}
    run.agent = agent
    return run


# --------------------------------------------------------------------------- the floor (the peers' code)

def build_numpy_python():
    ps = init_params()
    target = [p.copy() for p in ps]
    buf = {"s": np.zeros((CAP, OBS), np.float32), "a": np.zeros(CAP, np.int64),
           "r": np.zeros(CAP, np.float32), "s2": np.zeros((CAP, OBS), np.float32),
           "d": np.zeros(CAP, np.float32)}
    env = Env()
    rng = np.random.default_rng(7)
    st = {"t": 0, "a": 0, "train": 0, "copy": 0}
    ar = np.arange(BATCH)

    def q(p, s):
        W1, b1, W2, b2 = p
        h = np.maximum(s @ W1 + b1, 0.0)
        return h @ W2 + b2, h

    def train(count):
        W1, b1, W2, b2 = ps
        idx = rng.integers(0, count, BATCH)
        s, a, r, s2, d = (buf[k][idx] for k in ("s", "a", "r", "s2", "d"))
        qn, _ = q(target, s2)
        y = r + GAMMA * (1.0 - d) * qn.max(axis=1)
        qs, h = q(ps, s)
        diff = qs[ar, a] - y
        dq = np.zeros_like(qs)
        dq[ar, a] = 2.0 * diff / BATCH
        gW2 = h.T @ dq
        gb2 = dq.sum(0)
        dh = (dq @ W2.T) * (h > 0)
        gW1 = s.T @ dh
        gb1 = dh.sum(0)
        for p, g in zip(ps, (gW1, gb1, gW2, gb2)):
            p -= LR * g

    def run(nsteps):
        t, a = st["t"], st["a"]
        for _ in range(nsteps):
            s, r, s2, d, s_next = env.step(a)
            i = t % CAP
            buf["s"][i] = s
            buf["a"][i] = a
            buf["r"][i] = r
            buf["s2"][i] = s2
            buf["d"][i] = d
            t += 1
            count = min(t, CAP)
            if count >= LEARN_START and t % TRAIN_EVERY == 0:
                train(count)
                st["train"] += 1
            if t % TARGET_EVERY == 0:
                for tp, p in zip(target, ps):
                    tp[...] = p
                st["copy"] += 1
            if rng.random() < EPS:
                a = int(rng.integers(ACT))
            else:
                a = int(np.argmax(q(ps, s_next[None, :])[0][0]))
        st["t"], st["a"] = t, a

    run.counters = lambda: {"t": st["t"], "train_steps": st["train"], "target_copies": st["copy"]}
    return run


# --------------------------------------------------------------------------- measuring

_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _system_busy_s() -> float:
    try:
        with open("/proc/stat") as f:
            vals = [int(v) for v in f.readline().split()[1:9]]
        return (sum(vals) - vals[3] - vals[4]) / _TCK
    except OSError:
        return float("nan")


def _timed_block(run, block):
    """Seconds for `block` interactions, the cores other processes used meanwhile, and the work done."""
    c0 = run.counters()
    b0, own0 = _system_busy_s(), sum(os.times()[:4])
    t0 = time.perf_counter()
    run(block)
    dt = time.perf_counter() - t0
    other = (_system_busy_s() - b0) - (sum(os.times()[:4]) - own0)
    c1 = run.counters()
    return {"s": dt, "other_cores": max(other, 0.0) / dt,
            "train_steps": c1["train_steps"] - c0["train_steps"],
            "target_copies": c1["target_copies"] - c0["target_copies"]}


def _summary(name, blocks, block):
    clean = [b for b in blocks if b["other_cores"] < CLEAN]
    use = clean if len(clean) >= 3 else blocks
    sps = [block / b["s"] for b in use]
    return {"name": name, "steps_per_s": statistics.median(sps), "steps_per_s_min": min(sps),
            "steps_per_s_max": max(sps), "us_per_step": 1e6 / statistics.median(sps),
            "blocks_used": len(use), "blocks_total": len(blocks), "used_only_clean_blocks": use is clean,
            "max_other_cores_used": max(b["other_cores"] for b in use),
            "train_steps_per_block": sorted({b["train_steps"] for b in blocks}),
            "target_copies_per_block": sorted({b["target_copies"] for b in blocks}), "blocks": blocks}


def measure_pair(blocks, block):
    t0 = time.perf_counter()
    ra, rb = build_ours(True), build_ours(False)
    ra(WARMUP_STEPS)
    rb(WARMUP_STEPS)
    warm_s = time.perf_counter() - t0
    ba, bb = [], []
    for k in range(blocks):  # alternate the order inside each pair
        if k % 2 == 0:
            ba.append(_timed_block(ra, block))
            bb.append(_timed_block(rb, block))
        else:
            bb.append(_timed_block(rb, block))
            ba.append(_timed_block(ra, block))
    pairs = [(y["s"] / x["s"], max(x["other_cores"], y["other_cores"])) for x, y in zip(ba, bb)]
    clean = [r for r, oc in pairs if oc < CLEAN]
    use = clean if len(clean) >= 3 else [r for r, _ in pairs]
    obs = np.zeros(OBS, np.float32)
    g = ra.agent.step.get_graph(obs, 0, np.float32(0), obs, np.float32(0), obs)  # the trace the blocks ran
    return {"in_graph": _summary("in_graph", ba, block), "out_of_graph": _summary("out_of_graph", bb, block),
            "ratio_in_over_out": statistics.median(use), "ratio_min": min(use), "ratio_max": max(use),
            "ratio_pairs_used": len(use), "pairs_total": len(pairs), "warmup_s": warm_s,
            "in_graph_step_nodes": len(g.nodes),
            "graph_cond_op_counts": {op: sum(1 for n in g.nodes if n.op == op) for op in ("Switch", "Merge")}}


def measure_numpy(blocks, block):
    run = build_numpy_python()
    run(WARMUP_STEPS)
    return _summary("numpy_python", [_timed_block(run, block) for _ in range(blocks)], block)


def run_peers(block, blocks):
    script = os.path.join(ROOT, "..", "shared", "peers", "dqn_step.py")
    if not os.path.exists(script):
        return {"error": f"{script} not found"}
    p = subprocess.run([sys.executable, script, "--only", "jax,numpy_python", "--steps", str(block),
                        "--reps", str(blocks)], capture_output=True, text=True, timeout=900)
    for line in p.stdout.splitlines():
        if line.startswith("BENCH_JSON: "):
            return json.loads(line[len("BENCH_JSON: "):])
    return {"error": f"rc={p.returncode}: " + " | ".join((p.stderr or "").strip().splitlines()[-4:])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=8, help="timed blocks per variant (pairs for in/out)")
    ap.add_argument("--block-steps", type=int, default=1000, help="interactions per timed block")
    ap.add_argument("--quick", action="store_true", help="3 blocks of 400 interactions")
    ap.add_argument("--peers", action="store_true", help="also run shared/peers/dqn_step.py (jax, numpy)")
    a = ap.parse_args()
    if a.quick:
        a.blocks, a.block_steps = 3, 400
    t0 = time.perf_counter()
    pair = measure_pair(a.blocks, a.block_steps)
    floor = measure_numpy(a.blocks, a.block_steps)
    rows = [pair["in_graph"], pair["out_of_graph"], floor]
    print(f"dqn: interactions/s, median over blocks of {a.block_steps} interactions (after {WARMUP_STEPS} "
          f"warm-up); in-graph and out-of-graph interleaved in one process; {platform.machine()}, "
          f"{os.cpu_count()} cpus, Python {platform.python_version()}, numpy {np.__version__}")
    hdr = (f"{'variant':<14}{'steps/s':>9}{'us/step':>9}{'min-max steps/s':>17}{'blocks used':>13}"
           f"{'train/copies per block':>24}{'other cores':>13}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['name']:<14}{r['steps_per_s']:>9.0f}{r['us_per_step']:>9.0f}"
              f"{r['steps_per_s_min']:>8.0f}-{r['steps_per_s_max']:<8.0f}"
              f"{r['blocks_used']:>7}/{r['blocks_total']:<5}"
              f"{str(r['train_steps_per_block']) + '/' + str(r['target_copies_per_block']):>24}"
              f"{r['max_other_cores_used']:>13.2f}")
    ratio = pair["ratio_in_over_out"]
    print()
    print(f"in-graph / out-of-graph throughput: {ratio:.3f} ({(ratio - 1) * 100:+.1f}%), range "
          f"{pair['ratio_min']:.3f}-{pair['ratio_max']:.3f} over {pair['ratio_pairs_used']}/{pair['pairs_total']} "
          f"pairs (paper: +21%; peers on this machine: TF1 +36%, JAX +2%)")
    print(f"numpy floor / in-graph: {floor['steps_per_s'] / pair['in_graph']['steps_per_s']:.1f}x   "
          f"numpy floor / out-of-graph: {floor['steps_per_s'] / pair['out_of_graph']['steps_per_s']:.1f}x   "
          f"(in-graph step: {pair['in_graph_step_nodes']} graph nodes, {pair['graph_cond_op_counts']})")
    result = {"bench": "dqn", "block_steps": a.block_steps, "blocks": a.blocks, "warmup_steps": WARMUP_STEPS,
              "in_graph": pair["in_graph"], "out_of_graph": pair["out_of_graph"], "numpy_python": floor,
              **{k: v for k, v in pair.items() if k not in ("in_graph", "out_of_graph")},
              "machine": {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count()}}
    if a.peers:
        result["peers"] = peers = run_peers(a.block_steps, a.blocks)
        if "error" in peers:
            print(f"peers: {peers['error']}")
        else:
            for fw, rr in peers.get("ratio_in_over_out", {}).items():
                print(f"peers {fw}: in/out {rr['ratio_in_over_out']:.3f}")
            for name, r in peers.get("results", {}).items():
                for part in ([r.get("in_graph"), r.get("out_of_graph")] if name.startswith("pair:") else [r]):
                    if part and "steps_per_s" in part:
                        print(f"peers {part.get('name', name)}: {part['steps_per_s']:.0f} steps/s")
    result["total_wall_s"] = time.perf_counter() - t0
    print(f"total wall {result['total_wall_s']:.1f}s")
    print("BENCH_JSON: " + json.dumps(result, default=float))


if __name__ == "__main__":
    main()
