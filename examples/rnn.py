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

Stacked layers on their own devices (the paper's Figure 15): `--layers 2 --devices 2` builds each
layer's cell inside `with graph.device(...)`, so the one time loop is partitioned by layer and
pipelined by its parallel iterations: layer 1 computes step t+1 while layer 2 computes step t.
It trains to the same losses as on one device.

    python examples/rnn.py --task adding --layers 2 --devices 2             # two devices in this process
    python -m dist.launch -n 2 examples/rnn.py --task adding --layers 2 --devices 2   # one per MPI rank
"""
from __future__ import annotations

import argparse
import contextlib
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
    """Weights of a stack of LSTM layers and a linear read-out, held in graph Variables.

    `devices` (one name per layer, or None) places each layer: its cell is built inside
    `with graph.device(devices[k])`, the embedding with the first layer and the read-out with
    the last. Gradients and optimizer updates follow their weights (dist.place)."""

    def __init__(self, n_in: int, n_hidden: int, n_out: int, rng: np.random.Generator, n_embed: int = 0,
                 layers: int = 1, devices: list[str] | None = None):
        def init(*shape):
            return graph.Variable((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))
        if devices is not None and len(devices) != layers:
            raise ValueError(f"devices names {len(devices)} device(s) for {layers} layer(s): give one per layer")
        bias = np.zeros(4 * n_hidden, np.float32)
        bias[n_hidden:2 * n_hidden] = 1.0  # forget gate open at the start: gradients reach far back
        self.n_hidden = n_hidden
        self.devices = devices
        self.embedding = init(n_in, n_embed) if n_embed else None
        self.cells = []  # per layer (Wx, Wh, b)
        for k in range(layers):
            self.cells.append((init((n_embed or n_in) if k == 0 else n_hidden, 4 * n_hidden),
                               init(n_hidden, 4 * n_hidden), graph.Variable(bias.copy())))
        self.Wy = init(n_hidden, n_out)
        self.by = graph.Variable(np.zeros(n_out, np.float32))

    @property
    def params(self) -> list:
        cells = [w for cell in self.cells for w in cell]
        return [p for p in (self.embedding, *cells, self.Wy, self.by) if p is not None]

    def on_device(self, layer: int):
        """The device scope of layer `layer` (-1: the last), or no scope when the model is unplaced."""
        return graph.device(self.devices[layer]) if self.devices else contextlib.nullcontext()

    def zero_state(self, batch):
        """(h, c) of every layer at t = 0, as tuples with one array per layer."""
        zeros = tuple(np.zeros((batch, self.n_hidden), np.float32) for _ in self.cells)
        return zeros, zeros

    def step(self, x, hs, cs):
        """One time step of the stack: each layer's cell on its device, feeding the next layer."""
        new_h, new_c = [], []
        for k, (Wx, Wh, b) in enumerate(self.cells):
            with self.on_device(k):
                h, c = lstm_cell(x, hs[k], cs[k], Wx, Wh, b)
            new_h.append(h)
            new_c.append(c)
            x = h
        return tuple(new_h), tuple(new_c)

    def embed(self, inputs):
        with self.on_device(0):
            return self.embedding[inputs]

    def read_out(self, h):
        with self.on_device(-1):
            return h @ self.Wy + self.by

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
    hs, cs = m.zero_state(batch)
    loss = 0.0
    for t in range(seq_len):
        hs, cs = m.step(m.embed(inputs[t]), hs, cs)
        with m.on_device(-1):
            logp = log_softmax(m.read_out(hs[-1]))
            loss += -np.mean(logp[np.arange(batch), targets[t]])
    return loss / seq_len


def sample_text(m: LSTM, first, length, temperature):
    """Characters drawn one at a time from the model, starting after character `first`."""
    hs, cs = m.zero_state(1)
    x = first
    chars = []
    for _ in range(length):
        hs, cs = m.step(m.embed(x), hs, cs)
        with m.on_device(-1):
            x = graph.categorical(m.read_out(hs[-1]) / temperature, 1, seed=7)[:, 0]
        chars.append(x[0])
    return np.stack(chars)


# ----------------------------------------------------------------------------- the adding problem

def adding_loss(m: LSTM, x, y, seq_len):
    """Mean squared error of the sum read out after seq_len steps of x."""
    batch = x.shape[1]
    hs, cs = m.zero_state(batch)
    for t in range(seq_len):
        hs, cs = m.step(x[t], hs, cs)
    with m.on_device(-1):
        return np.mean((m.read_out(hs[-1]) - y) ** 2)


# ----------------------------------------------------------------------------- training

def make_train_step(loss_fn, m: LSTM, optimizer, clip_norm: float = 5.0, static_unroll: bool = False,
                    **function_options):
    """The training step: loss, gradients through the time loop, clipped update. `function_options`
    go to transpile.function (mode, inter_op_threads, ...)."""
    def train_step(inputs, targets, seq_len):
        loss = loss_fn(m, inputs, targets, seq_len)
        grads = grad.gradients(loss, m.params)
        grads, _ = grad.clip_by_global_norm(grads, clip_norm)
        optimizer.apply(grads, m.params)
        return loss
    # static_argnames makes seq_len a Python int: the loop unrolls, one graph per length
    return transpile.function(train_step, static_argnames=("seq_len",) if static_unroll else (), **function_options)


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
    m = LSTM(corpus.vocab_size, args.hidden, corpus.vocab_size, rng, n_embed=args.embed, layers=args.layers,
             devices=layer_devices(args.layers, args.devices))
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
    m = LSTM(2, args.hidden, 1, rng, layers=args.layers, devices=layer_devices(args.layers, args.devices))
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


def mpi_ranks() -> tuple[int, int]:
    """(this process's rank, the number of ranks) in an MPI job that dist.mpi runs (python -m dist.launch
    imports it before this script); (0, 1) otherwise."""
    if "dist.mpi" not in sys.modules:
        return 0, 1
    from mpi4py import MPI
    return MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()


def layer_devices(layers: int, devices: int) -> list[str] | None:
    """The device of each layer: consecutive layers share a device when there are fewer devices than
    layers. In one process the devices are "/cpu:k" (one executor thread each); in an MPI job of
    several ranks, device k is rank k's "/task:k/cpu:0"."""
    if devices < 1 or devices > layers:
        raise ValueError(f"--devices {devices}: give between 1 and --layers ({layers}) devices")
    if devices == 1:
        return None
    _, ranks = mpi_ranks()
    if ranks > 1 and ranks != devices:
        raise ValueError(f"--devices {devices} in an MPI job of {ranks} ranks: start it with -n {devices}, "
                         "one rank per device")
    names = [f"/task:{k}/cpu:0" if ranks > 1 else f"/cpu:{k}" for k in range(devices)]
    return [names[k * devices // layers] for k in range(layers)]


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
    p.add_argument("--layers", type=int, default=1, help="stacked LSTM layers")
    p.add_argument("--devices", type=int, default=1,
                   help="devices the layers are spread over (in this process, or one per rank under dist.launch)")
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
    if args.layers < 1:
        p.error("--layers must be at least 1")
    if not 1 <= args.devices <= args.layers:
        p.error(f"--devices must be between 1 and --layers ({args.layers})")
    rank, ranks = mpi_ranks()
    if ranks > 1:
        if args.save:  # the weights of layers on other ranks are updated there only
            p.error("--save is not supported in an MPI job: each rank holds only its own layers' current weights")
        args.quiet = args.quiet or rank > 0
    chars = args.task == "chars"
    args.steps = args.steps if args.steps is not None else (1000 if chars else 1500)
    args.length = args.length if args.length is not None else (64 if chars else 50)
    args.hidden = args.hidden if args.hidden is not None else (256 if chars else 64)
    args.lr = args.lr if args.lr is not None else (3e-3 if chars else 1e-2)
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    rank, ranks = mpi_ranks()
    # every rank runs the whole script (and the same runs, in order); rank 0 speaks for the job
    with open(os.devnull, "w") if rank > 0 else contextlib.nullcontext(sys.stdout) as out, \
            contextlib.redirect_stdout(out):
        return _main(args, ranks)


def _main(args, ranks: int) -> dict:
    rng = np.random.default_rng(args.seed)
    devices = layer_devices(args.layers, args.devices)
    if devices:
        where = f"{ranks} MPI ranks" if ranks > 1 else "this process"
        print(f"{args.layers} layers on {args.devices} devices ({where}): " +
              ", ".join(f"layer {k + 1} on {d}" for k, d in enumerate(devices)))
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
