"""Trains an LSTM whose time loop is a plain Python `for`, converted into one graph while loop.

The training step below is ordinary Python: a loop over time steps of an LSTM
cell written with numpy functions, a loss, `grad.gradients` and an optimizer
update. `@transpile.function` turns the `for t in range(seq_len)` into a single
in-graph while loop (seq_len is a tensor, so every batch may have its own
length), and the gradient of that loop is a loop too, running the forward
count in reverse over the values the forward loop saved.

Two tasks, with data present on every machine:

    python examples/rnn.py                          # character model of the stdlib's docstrings
    python examples/rnn.py --task adding --length 100
    python examples/rnn.py --task adding --length 1000 --steps 20   # long sequences
    python examples/rnn.py --show-code              # print the converted training step
    python examples/rnn.py --show-graph             # print its graph
    python examples/rnn.py --graph-svg step.svg     # draw it (graphviz's `dot`)
    python examples/rnn.py --static-unroll          # unroll the loop in Python instead (one graph per length)
    python examples/rnn.py --save lstm.npz / --restore lstm.npz
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

import numpy as np
from tqdm import tqdm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import CharCorpus, adding_problem, stdlib_docstrings  # noqa: E402

import grad  # noqa: E402
import graph  # noqa: E402
import transpile  # noqa: E402

# ----------------------------------------------------------------------------- the model

def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def log_softmax(z):
    z = z - np.max(z, axis=-1, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))


def lstm_cell(x, h, c, Wx, Wh, b):
    z = x @ Wx + h @ Wh + b
    i, f, g, o = np.split(z, 4, axis=1)
    c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h = sigmoid(o) * np.tanh(c)
    return h, c


class LSTM:
    """Weights of one LSTM layer and a linear read-out, held in graph Variables."""

    def __init__(self, n_in: int, n_hidden: int, n_out: int, rng: np.random.Generator, n_embed: int = 0):
        def init(*shape):
            return graph.Variable((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))
        bias = np.zeros(4 * n_hidden, np.float32)
        bias[n_hidden:2 * n_hidden] = 1.0  # forget gate open at the start: gradients reach far back
        self.n_hidden = n_hidden
        self.embedding = init(n_in, n_embed) if n_embed else None
        self.Wx = init(n_embed or n_in, 4 * n_hidden)
        self.Wh = init(n_hidden, 4 * n_hidden)
        self.b = graph.Variable(bias)
        self.Wy = init(n_hidden, n_out)
        self.by = graph.Variable(np.zeros(n_out, np.float32))

    @property
    def params(self) -> list:
        return [p for p in (self.embedding, self.Wx, self.Wh, self.b, self.Wy, self.by) if p is not None]

    def save(self, path: str) -> None:
        np.savez(path, *[p.value for p in self.params])

    def restore(self, path: str) -> None:
        with np.load(path) as saved:
            for k, p in enumerate(self.params):
                p.load(saved[f"arr_{k}"])


# ----------------------------------------------------------------------------- the character model

def char_loss(m: LSTM, inputs, targets, seq_len):
    """Mean cross-entropy (nats/char) of predicting targets[t] from inputs[:t+1], for t < seq_len."""
    batch = inputs.shape[1]
    h = np.zeros((batch, m.n_hidden), np.float32)
    c = np.zeros((batch, m.n_hidden), np.float32)
    loss = 0.0
    for t in range(seq_len):
        h, c = lstm_cell(m.embedding[inputs[t]], h, c, m.Wx, m.Wh, m.b)
        logp = log_softmax(h @ m.Wy + m.by)
        loss += -np.mean(logp[np.arange(batch), targets[t]])
    return loss / seq_len


def sample_text(m: LSTM, first, length, temperature):
    """Characters drawn one at a time from the model, starting after character `first`."""
    h = np.zeros((1, m.n_hidden), np.float32)
    c = np.zeros((1, m.n_hidden), np.float32)
    x = first
    chars = []
    for _ in range(length):
        h, c = lstm_cell(m.embedding[x], h, c, m.Wx, m.Wh, m.b)
        x = graph.categorical((h @ m.Wy + m.by) / temperature, 1, seed=7)[:, 0]
        chars.append(x[0])
    return np.stack(chars)


# ----------------------------------------------------------------------------- the adding problem

def adding_loss(m: LSTM, x, y, seq_len):
    """Mean squared error of the sum read out after seq_len steps of x."""
    batch = x.shape[1]
    h = np.zeros((batch, m.n_hidden), np.float32)
    c = np.zeros((batch, m.n_hidden), np.float32)
    for t in range(seq_len):
        h, c = lstm_cell(x[t], h, c, m.Wx, m.Wh, m.b)
    return np.mean((h @ m.Wy + m.by - y) ** 2)


# ----------------------------------------------------------------------------- training

def make_train_step(loss_fn, m: LSTM, optimizer, clip_norm: float = 5.0, static_unroll: bool = False):
    """The training step: loss, gradients through the time loop, clipped update."""
    def train_step(inputs, targets, seq_len):
        loss = loss_fn(m, inputs, targets, seq_len)
        grads = grad.gradients(loss, m.params)
        grads, _ = grad.clip_by_global_norm(grads, clip_norm)
        optimizer.apply(grads, m.params)
        return loss
    # static_argnames makes seq_len a Python int: the loop unrolls, one graph per length
    return transpile.function(train_step, static_argnames=("seq_len",) if static_unroll else ())


def while_frames(g) -> set:
    """Names of the forward while loops (frames) in graph g; gradient loops excluded."""
    return {n.frame.frame_name for n in g.nodes
            if n.frame is not None and not n.frame.frame_name.startswith("gradients")}


def show(step, loss_fn, args, example):
    if args.show_code:
        # the time loop lives in the loss function, which the step converts when it calls it
        print(transpile.to_code(loss_fn))
        print(transpile.to_code(step))
    if args.show_graph or args.graph_svg:
        g = step.get_graph(*example)
        if args.show_graph:
            print(g)
        if args.graph_svg:
            write_svg(g, args.graph_svg)


def write_svg(g, path: str) -> None:
    dot = g.to_dot()
    if shutil.which("dot") is None:
        with open(path + ".dot", "w") as fh:
            fh.write(dot)
        print(f"graphviz's `dot` is not installed: wrote {path}.dot (apt-get install graphviz, then "
              f"`dot -Tsvg {path}.dot -o {path}`)")
        return
    subprocess.run(["dot", "-Tsvg", "-o", path], input=dot.encode(), check=True)
    print(f"wrote {path}")


def train_chars(args, rng):
    corpus = CharCorpus(stdlib_docstrings(args.corpus_chars))
    unigram = corpus.unigram_entropy()
    print(f"corpus: {len(corpus.train):,} training characters, vocabulary {corpus.vocab_size}, "
          f"unigram entropy {unigram:.3f} nats/char")
    m = LSTM(corpus.vocab_size, args.hidden, corpus.vocab_size, rng, n_embed=args.embed)
    if args.restore:
        m.restore(args.restore)
    step = make_train_step(char_loss, m, grad.Adam(args.lr), static_unroll=args.static_unroll)
    evaluate = transpile.function(lambda inputs, targets, seq_len: char_loss(m, inputs, targets, seq_len))
    sample = transpile.function(lambda first, length, temperature: sample_text(m, first, length, temperature))

    def batch(split="train", length=None):
        # a fixed-size buffer with a per-batch length: one graph serves every length
        n = length or (args.length if args.static_unroll else int(rng.integers(args.length // 2, args.length + 1)))
        inputs, targets = corpus.batch(rng, args.batch, args.length, split)
        return inputs, targets, n

    show(step, char_loss, args, batch())
    losses = run_steps(step, batch, args)
    valid = float(np.mean([evaluate(*batch("valid", args.length)) for _ in range(5)]))
    print(f"validation loss {valid:.3f} nats/char against the unigram entropy {unigram:.3f} "
          f"({'below' if valid < unigram else 'NOT below'} it)")
    seed_char = corpus.encode("T").astype(np.int64)
    print("sample:", repr(corpus.decode(seed_char) + corpus.decode(sample(seed_char, 200, 0.8))))
    return m, losses, {"valid_loss": valid, "unigram_entropy": unigram}


def train_adding(args, rng):
    m = LSTM(2, args.hidden, 1, rng)
    if args.restore:
        m.restore(args.restore)
    step = make_train_step(adding_loss, m, grad.Adam(args.lr), static_unroll=args.static_unroll)
    evaluate = transpile.function(lambda x, y, seq_len: adding_loss(m, x, y, seq_len))

    def batch(split="train"):
        x, y = adding_problem(rng, args.batch, args.length)
        return x, y, args.length

    show(step, adding_loss, args, batch())
    losses = run_steps(step, batch, args)
    mse = float(np.mean([evaluate(*batch()) for _ in range(5)]))
    print(f"test MSE {mse:.4f} (predicting the mean gives ~0.167)")
    return m, losses, {"test_mse": mse}


def run_steps(step, batch, args) -> list[float]:
    losses = []
    bar = tqdm(range(args.steps), desc=f"{args.task} T<={args.length}", disable=args.quiet)
    for k in bar:
        loss = float(step(*batch()))
        losses.append(loss)
        if k % 10 == 0 or k == args.steps - 1:
            bar.set_postfix(loss=f"{np.mean(losses[-10:]):.3f}")
    return losses


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=("chars", "adding"), default="chars")
    p.add_argument("--steps", type=int, default=None, help="training steps (default: 1000 chars, 1500 adding)")
    p.add_argument("--length", type=int, default=None,
                   help="longest sequence (chars: each batch takes a length in [length/2, length]; default 64, "
                        "adding: default 50)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--hidden", type=int, default=None, help="LSTM units (default 256 chars, 64 adding)")
    p.add_argument("--embed", type=int, default=32, help="character embedding size")
    p.add_argument("--lr", type=float, default=None, help="Adam learning rate (default 3e-3 chars, 1e-2 adding)")
    p.add_argument("--corpus-chars", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--static-unroll", action="store_true",
                   help="unroll the time loop in Python (seq_len static: one graph per length, fixed length)")
    p.add_argument("--show-code", action="store_true", help="print the converted training step")
    p.add_argument("--show-graph", action="store_true", help="print the training step's graph")
    p.add_argument("--graph-svg", metavar="FILE", help="draw the training step's graph (needs graphviz)")
    p.add_argument("--save", metavar="FILE.npz")
    p.add_argument("--restore", metavar="FILE.npz")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    chars = args.task == "chars"
    args.steps = args.steps if args.steps is not None else (1000 if chars else 1500)
    args.length = args.length if args.length is not None else (64 if chars else 50)
    args.hidden = args.hidden if args.hidden is not None else (256 if chars else 64)
    args.lr = args.lr if args.lr is not None else (3e-3 if chars else 1e-2)
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    m, losses, result = (train_chars if args.task == "chars" else train_adding)(args, rng)
    seconds = time.perf_counter() - start
    print(f"{len(losses)} steps in {seconds:.1f} s ({len(losses) / seconds:.2f} steps/s); "
          f"loss {np.mean(losses[:10]):.3f} -> {np.mean(losses[-10:]):.3f}")
    if args.save:
        m.save(args.save)
        print(f"saved parameters to {args.save}")
    return {"losses": losses, "seconds": seconds, **result}


if __name__ == "__main__":
    main()
