"""The DQN agent-step workload that bench/dqn.py and bench/dqn_peers.py share: sizes, initial weights, the
synthetic environment, the plain numpy agent (the floor) and the block timing, so that our agents and the
peers' run the same interactions and are measured the same way.

Agent: Q-network 4 -> 64 (relu) -> 2, float32, seeded initial weights, and a target copy; replay memory of
10,000 transitions. Per interaction (t = transitions stored): store; if min(t, 10000) >= 500 and t % 4 == 0:
one SGD step (lr 1e-3) on the mean squared TD error of 32 sampled transitions; if t % 100 == 0: copy the
network to the target network; epsilon-greedy action (epsilon 0.1) for the next observation.
Environment: synthetic, numpy, outside the agent: observation ~ N(0,1)^4, reward 1 when the action is
(obs[0] > 0), done with probability 0.05.
"""
from __future__ import annotations

import os
import statistics
import time

import numpy as np

OBS, HID, ACT = 4, 64, 2
CAP, BATCH, LEARN_START, TRAIN_EVERY, TARGET_EVERY = 10_000, 32, 500, 4, 100
GAMMA, LR, EPS = 0.99, 1e-3, 0.1
WARMUP_STEPS = 600
CLEAN = 0.1  # a block is clean when other processes used fewer cores than this during it


def init_params():
    """The initial weights every variant starts from."""
    rng = np.random.default_rng(0)
    W1 = (rng.standard_normal((OBS, HID)) / np.sqrt(OBS)).astype(np.float32)
    b1 = np.zeros(HID, np.float32)
    W2 = (rng.standard_normal((HID, ACT)) / np.sqrt(HID)).astype(np.float32)
    b2 = np.zeros(ACT, np.float32)
    return [W1, b1, W2, b2]


class Env:
    """The synthetic environment."""

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


def build_numpy_python():
    """The plain numpy + Python agent with hand-written backprop: the floor of a system calling numpy kernels."""
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


def timed_block(run, block):
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


def summary(name, blocks, block):
    clean = [b for b in blocks if b["other_cores"] < CLEAN]
    use = clean if len(clean) >= 3 else blocks
    sps = [block / b["s"] for b in use]
    return {"name": name, "steps_per_s": statistics.median(sps), "steps_per_s_min": min(sps),
            "steps_per_s_max": max(sps), "us_per_step": 1e6 / statistics.median(sps),
            "blocks_used": len(use), "blocks_total": len(blocks), "used_only_clean_blocks": use is clean,
            "max_other_cores_used": max(b["other_cores"] for b in use),
            "train_steps_per_block": sorted({b["train_steps"] for b in blocks}),
            "target_copies_per_block": sorted({b["target_copies"] for b in blocks}), "blocks": blocks}


def measure_pair(ra, rb, names, blocks, block) -> dict:
    """In-graph agent `ra` against out-of-graph `rb`, warmed up, their blocks interleaved (AB, BA, ...); the
    ratio is the median of the per-pair throughput ratios (clean pairs when at least 3 are clean)."""
    t0 = time.perf_counter()
    ra(WARMUP_STEPS)
    rb(WARMUP_STEPS)
    warm_s = time.perf_counter() - t0
    ba, bb = [], []
    for k in range(blocks):  # alternate the order inside each pair
        if k % 2 == 0:
            ba.append(timed_block(ra, block))
            bb.append(timed_block(rb, block))
        else:
            bb.append(timed_block(rb, block))
            ba.append(timed_block(ra, block))
    pairs = [(y["s"] / x["s"], max(x["other_cores"], y["other_cores"])) for x, y in zip(ba, bb)]
    clean = [r for r, oc in pairs if oc < CLEAN]
    use = clean if len(clean) >= 3 else [r for r, _ in pairs]
    return {"in_graph": summary(names[0], ba, block), "out_of_graph": summary(names[1], bb, block),
            "ratio_in_over_out": statistics.median(use), "ratio_min": min(use), "ratio_max": max(use),
            "ratio_pairs_used": len(use), "pairs_total": len(pairs), "warmup_s": warm_s}


def measure_single(name, run, blocks, block) -> dict:
    run(WARMUP_STEPS)
    return summary(name, [timed_block(run, block) for _ in range(blocks)], block)
