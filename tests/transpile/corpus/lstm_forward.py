"""An LSTM layer's forward pass over a sequence: the gates from one matrix product of [x, h], sliced, with
a sigmoid helper; the hidden states written into a preallocated (T, H) array."""
import numpy as np


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_forward(xs, h0, c0, W, b):
    H = h0.shape[-1]
    h, c = h0, c0
    hs = np.zeros((len(xs), H))
    for t, x in enumerate(xs):
        z = np.concatenate([x, h]) @ W + b
        i = sigmoid(z[:H])
        f = sigmoid(z[H:2 * H])
        o = sigmoid(z[2 * H:3 * H])
        g = np.tanh(z[3 * H:])
        c = f * c + i * g
        h = o * np.tanh(c)
        hs[t] = h
    return hs, h, c


def params(D=3, H=4, seed=14):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((D + H, 4 * H)) * 0.4, rng.standard_normal(4 * H) * 0.1


def cases():
    rng = np.random.default_rng(15)
    W, b = params()
    H = b.shape[0] // 4
    return [
        (rng.standard_normal((5, 3)), np.zeros(H), np.zeros(H), W, b),
        (rng.standard_normal((2, 3)), rng.standard_normal(H), rng.standard_normal(H), W, b),
        (np.zeros((0, 3)), rng.standard_normal(H), rng.standard_normal(H), W, b),   # the empty sequence
    ]
