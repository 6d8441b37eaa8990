"""DQN agent step: in-graph against out-of-graph (client-driven) control flow, same run.

The workload and method are shared with the peer frameworks' variants (bench/_dqn_workload.py,
bench/dqn_peers.py), so the figures compare with theirs:
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
  numpy_python  the plain numpy + Python agent (hand-written backprop): the floor
Measured: interactions/s, median over blocks of 1000 interactions after 600 warm-up
interactions (each block holds exactly 250 learning steps and 10 target copies, checked). The
in-graph and out-of-graph agents live in one process and their blocks are interleaved (AB, BA,
...); the ratio is the median of the per-pair ratios. Blocks during which other processes used
>= 0.1 cores are dropped when at least 3 clean ones remain ("other cores" column).

Usage: python bench/dqn.py [--blocks 8] [--block-steps 1000] [--quick] [--peers]
  --peers  also runs bench/dqn_peers.py (TF1, JAX, torch where installed: `pip install -e '.[bench]'`)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))  # before bench/, which holds this dqn.py
sys.path.append(os.path.dirname(os.path.abspath(__file__)))

import _dqn_workload as W  # noqa: E402
import dqn  # noqa: E402
import dqn_peers  # noqa: E402

PEER_CONFIG = dqn.Config(hidden=(W.HID,), memory_size=W.CAP, batch_size=W.BATCH, learn_start=W.LEARN_START,
                         train_every=W.TRAIN_EVERY, target_every=W.TARGET_EVERY, gamma=W.GAMMA, learning_rate=W.LR,
                         epsilon_start=W.EPS, epsilon_end=W.EPS, double_dqn=False, optimizer="sgd")


# --------------------------------------------------------------------------- our agents

def build_ours(in_graph: bool):
    agent = dqn.Agent(PEER_CONFIG, seed=1)
    for params in (agent.q_net.params, agent.target_net.params):
        for p, value in zip(params, W.init_params()):
            p.load(value)
    step = agent.step if in_graph else dqn.PythonDecisions(agent, seed=7).step
    env = W.Env()
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


def measure_pair(blocks, block):
    ra, rb = build_ours(True), build_ours(False)
    out = W.measure_pair(ra, rb, ("in_graph", "out_of_graph"), blocks, block)
    obs = np.zeros(W.OBS, np.float32)
    g = ra.agent.step.get_graph(obs, 0, np.float32(0), obs, np.float32(0), obs)  # the trace the blocks ran
    out["in_graph_step_nodes"] = len(g.nodes)
    out["graph_cond_op_counts"] = {op: sum(1 for n in g.nodes if n.op == op) for op in ("Switch", "Merge")}
    return out


def measure_numpy(blocks, block):
    return W.measure_single("numpy_python", W.build_numpy_python(), blocks, block)


def run_peers(block, blocks):
    """bench/dqn_peers.py's frameworks, each in a process of its own."""
    return dqn_peers.run_all(list(dqn_peers.FRAMEWORKS), blocks, block)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=8, help="timed blocks per variant (pairs for in/out)")
    ap.add_argument("--block-steps", type=int, default=1000, help="interactions per timed block")
    ap.add_argument("--quick", action="store_true", help="3 blocks of 400 interactions")
    ap.add_argument("--peers", action="store_true", help="also run bench/dqn_peers.py (TF1, JAX, torch)")
    a = ap.parse_args()
    if a.quick:
        a.blocks, a.block_steps = 3, 400
    t0 = time.perf_counter()
    pair = measure_pair(a.blocks, a.block_steps)
    floor = measure_numpy(a.blocks, a.block_steps)
    rows = [pair["in_graph"], pair["out_of_graph"], floor]
    print(f"dqn: interactions/s, median over blocks of {a.block_steps} interactions (after {W.WARMUP_STEPS} "
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
    result = {"bench": "dqn", "block_steps": a.block_steps, "blocks": a.blocks, "warmup_steps": W.WARMUP_STEPS,
              "in_graph": pair["in_graph"], "out_of_graph": pair["out_of_graph"], "numpy_python": floor,
              **{k: v for k, v in pair.items() if k not in ("in_graph", "out_of_graph")},
              "machine": {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count()}}
    if a.peers:
        result["peers"] = peers = run_peers(a.block_steps, a.blocks)
        for r in dqn_peers.rows(peers["results"]):
            print(f"peers {r['name']:<18}{r['steps_per_s']:>9.0f} steps/s{r['us_per_step']:>7.0f} us/step   "
                  f"numpy floor / it: {floor['steps_per_s'] / r['steps_per_s']:.1f}x")
        for fw, r in peers["results"].items():
            if "error" in r:
                print(f"peers {fw}: ERROR {r['error'][:120]}")
            elif "ratio_in_over_out" in r:
                print(f"peers {fw}: in/out {r['ratio_in_over_out']:.3f}")
        if peers["skipped"]:
            print(f"peers not installed, skipped: {', '.join(peers['skipped'])}")
    result["total_wall_s"] = time.perf_counter() - t0
    print(f"total wall {result['total_wall_s']:.1f}s")
    print("BENCH_JSON: " + json.dumps(result, default=float))


if __name__ == "__main__":
    main()
