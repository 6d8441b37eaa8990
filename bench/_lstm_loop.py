"""The LSTM training step of the memory benches (bench/recompute.py, bench/swap.py): one graph while loop
over T time steps whose gradient saves values per iteration, so its memory policy decides what it holds."""
from __future__ import annotations

import numpy as np

import grad
import graph


def lstm_step_graph(T: int, B: int, D: int, H: int, **loop_options):
    """(graph, placeholders (Wx, Wh, b, X, Y), loss, gradients wrt (Wx, Wh, b)) of the mean squared error
    of the LSTM's states against Y, the loop built with `loop_options` (memory_policy, swap_memory, ...)."""
    g = graph.Graph()
    with g.as_default():
        Wx = graph.placeholder(np.float32, (D, 4 * H), name="Wx")
        Wh = graph.placeholder(np.float32, (H, 4 * H), name="Wh")
        b = graph.placeholder(np.float32, (4 * H,), name="b")
        X = graph.placeholder(np.float32, (T, B, D), name="X")
        Y = graph.placeholder(np.float32, (T, B, H), name="Y")

        def step(t, h, c, loss):
            z = graph.matmul(graph.gather(X, t), Wx) + graph.matmul(h, Wh) + b
            i, f, u, o = (z[:, j * H:(j + 1) * H] for j in range(4))
            c = graph.sigmoid(f) * c + graph.sigmoid(i) * graph.tanh(u)
            h = graph.sigmoid(o) * graph.tanh(c)
            err = h - graph.gather(Y, t)
            return t + 1, h, c, loss + graph.reduce_mean(err * err)
        zero = graph.constant(np.zeros((B, H), np.float32))
        _, _, _, total = graph.while_loop(lambda t, h, c, loss: t < T, step,
                                          (graph.constant(0), zero, zero, graph.constant(np.float32(0))),
                                          **loop_options)
        loss = total / np.float32(T)
        grads = grad.gradients(loss, [Wx, Wh, b])
    return g, (Wx, Wh, b, X, Y), loss, grads
