"""Deployment: the character LSTM's sampler and the DQN greedy policy, exported to ONNX and run by onnxruntime alone.

The sampler is a plain Python function: a `for` over rows of noise with a `break` at a newline, which
`transpile` turns into one graph while loop (it stops at a newline or when the noise runs out, the length
limit). Random draws are Gumbel-max over noise the caller passes in, so onnxruntime and this library draw
the same characters. `transpile.export_onnx` writes it as an ONNX Loop; the Q-network's greedy action
(examples/dqn.py) is exported the same way, its weights as initializers. Then examples/deploy_runner.py,
which imports onnxruntime and numpy only, runs both in a separate process, and the text and actions it gets
are compared with this library's.

    python examples/deploy.py                                  # train the character model briefly, export, run
    python examples/deploy.py --restore lstm.npz --hidden 256  # parameters `python examples/rnn.py --save` wrote
    python examples/deploy.py --dqn-load q.npz                 # a Q-network `python examples/dqn.py --save` wrote
    python examples/deploy.py --dqn-steps 5000                 # or train the agent here (needs gymnasium)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dqn  # noqa: E402
import rnn  # noqa: E402
from data import CharCorpus, stdlib_docstrings  # noqa: E402

import grad  # noqa: E402
import transpile  # noqa: E402

RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deploy_runner.py")


def sample_line(m: rnn.LSTM, first, noise, newline, temperature):
    """Characters drawn from the model after character `first` (shape (1,)), one per row of Gumbel noise
    ([max_chars, vocabulary]), until a newline is drawn or the noise runs out."""
    hs, cs = m.zero_state(1)
    x = first
    chars = []
    for g in noise:
        hs, cs = m.step(m.embed(x), hs, cs)
        # Gumbel-max: argmax(logits + Gumbel noise) is a draw from softmax(logits)
        x = np.argmax(m.read_out(hs[-1]) / temperature + g, axis=-1)
        chars.append(x[0])
        if x[0] == newline:
            break
    return np.stack(chars)


def gumbel_noise(rng: np.random.Generator, rows: int, vocabulary: int) -> np.ndarray:
    u = rng.uniform(np.finfo(np.float32).tiny, 1.0, size=(rows, vocabulary))
    return (-np.log(-np.log(u))).astype(np.float32)


def character_model(args, rng):
    corpus = CharCorpus(stdlib_docstrings(args.corpus_chars))
    m = rnn.LSTM(corpus.vocab_size, args.hidden, corpus.vocab_size, rng, n_embed=args.embed)
    if args.restore:
        m.restore(args.restore)
        print(f"character model: restored from {args.restore}")
        return corpus, m
    step = rnn.make_train_step(rnn.char_loss, m, grad.Adam(args.lr))
    losses = [float(step(*corpus.batch(rng, args.batch, args.length), args.length)) for _ in range(args.steps)]
    if losses:
        print(f"character model: {len(losses)} training steps, loss {np.mean(losses[:5]):.3f} -> "
              f"{np.mean(losses[-5:]):.3f} nats/char")
    return corpus, m


def q_network(args):
    agent = dqn.Agent(dqn.Config(hidden=(args.dqn_hidden,)), seed=args.seed)
    if args.dqn_load:
        dqn.load(agent, args.dqn_load)
        print(f"policy: Q-network restored from {args.dqn_load}")
    elif args.dqn_steps:
        import gymnasium as gym  # the `examples` extra; only training needs an environment

        returns, steps = dqn.run_episodes(gym.make("CartPole-v1"), agent.step, args.dqn_steps, args.seed)
        print(f"policy: {steps} training steps, last returns {returns[-5:]}")
    return agent


def observations(rng, n: int) -> np.ndarray:
    """CartPole-like states: position, velocity, angle, angular velocity."""
    return (rng.standard_normal((n, dqn.OBSERVATION_SIZE)) * [1.0, 0.5, 0.1, 0.5]).astype(np.float32)


def export_all(args, directory: str, rng) -> dict:
    """Exports the sampler and the policy into `directory` with their inputs; this library's results."""
    corpus, m = character_model(args, rng)
    sampler = transpile.function(lambda first, noise, newline, temperature:
                                 sample_line(m, first, noise, newline, temperature))
    inputs = {"first": corpus.encode("T").astype(np.int64), "noise": gumbel_noise(rng, args.max_chars,
                                                                                  corpus.vocab_size),
              "newline": np.int64(corpus.encode("\n")[0]), "temperature": np.float32(args.temperature)}
    example = tuple(inputs[k] for k in ("first", "noise", "newline", "temperature"))
    start = time.perf_counter()
    transpile.export_onnx(sampler, example, os.path.join(directory, "sampler.onnx"))
    sampler_export = time.perf_counter() - start
    ours = np.asarray(sampler(*example))
    np.savez(os.path.join(directory, "sampler_inputs.npz"), **inputs,
             vocabulary=np.array([ord(ch) for ch in corpus.chars], np.int32))

    agent = q_network(args)
    obs = observations(rng, args.observations)
    start = time.perf_counter()
    transpile.export_onnx(agent.greedy_action, (obs[0],), os.path.join(directory, "policy.onnx"))
    policy_export = time.perf_counter() - start
    actions = np.array([agent.greedy_action(o) for o in obs], np.int64)
    np.savez(os.path.join(directory, "policy_inputs.npz"), observations=obs)
    return {"chars": ours, "text": corpus.decode(ours), "actions": actions,
            "export_seconds": {"sampler": sampler_export, "policy": policy_export}}


def run_deployed(directory: str) -> dict:
    """Runs examples/deploy_runner.py on `directory` in a new Python process (onnxruntime and numpy only)."""
    done = subprocess.run([sys.executable, RUNNER, directory], capture_output=True, text=True, check=True)
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    with np.load(os.path.join(directory, "onnx_outputs.npz")) as saved:
        summary["chars"], summary["actions"] = saved["chars"], saved["actions"]
    return summary


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=150, help="training steps of the character model (default 150)")
    p.add_argument("--restore", metavar="FILE.npz", help="character model parameters saved by rnn.py --save")
    p.add_argument("--hidden", type=int, default=128, help="LSTM units (256 for rnn.py's default model)")
    p.add_argument("--embed", type=int, default=32)
    p.add_argument("--length", type=int, default=48)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=5e-3)
    p.add_argument("--corpus-chars", type=int, default=300_000)
    p.add_argument("--max-chars", type=int, default=200, help="the sampler's length limit")
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--dqn-load", metavar="FILE.npz", help="Q-network weights saved by dqn.py --save")
    p.add_argument("--dqn-steps", type=int, default=0, help="train the agent this many steps first (gymnasium)")
    p.add_argument("--dqn-hidden", type=int, default=64)
    p.add_argument("--observations", type=int, default=20, help="states to compare the policies on")
    p.add_argument("--out", metavar="DIR", help="where to write the models (default: a temporary directory)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.out or tmp
        os.makedirs(directory, exist_ok=True)
        ours = export_all(args, directory, rng)
        deployed = run_deployed(directory)
    same_text = np.array_equal(ours["chars"], deployed["chars"])
    same_actions = np.array_equal(ours["actions"], deployed["actions"])
    print(f"exported in {ours['export_seconds']['sampler']:.2f} s (sampler) and "
          f"{ours['export_seconds']['policy']:.2f} s (policy)")
    print(f"this library: {ours['text']!r}")
    print(f"onnxruntime:  {deployed['text']!r}  ({'the same' if same_text else 'DIFFERENT'})")
    print(f"greedy actions, this library: {ours['actions'].tolist()}")
    print(f"greedy actions, onnxruntime:  {deployed['actions'].tolist()}  "
          f"({'the same' if same_actions else 'DIFFERENT'})")
    print(f"project modules the deployment process imported: {deployed['project_modules_imported'] or 'none'}")
    return {"same_text": same_text, "same_actions": same_actions, "text": ours["text"],
            "deployed_imports": deployed["project_modules_imported"], "export_seconds": ours["export_seconds"]}


if __name__ == "__main__":
    main()
