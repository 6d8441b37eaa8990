"""Sampling from a character RNN (min-char-rnn style): each step a softmax over the vocabulary with a
temperature, an index drawn with np.random.choice (or by inverse CDF: the first bin whose cumulative
probability passes a uniform), and a one-hot input vector allocated for the next step."""
import numpy as np


def step_probabilities(x, h, Wxh, Whh, Why, bh, by, temperature):
    h = np.tanh(np.dot(Wxh, x) + np.dot(Whh, h) + bh)
    y = (np.dot(Why, h) + by) / temperature
    p = np.exp(y - np.max(y)) / np.sum(np.exp(y - np.max(y)))
    return p, h


def sample(h, seed_ix, n, Wxh, Whh, Why, bh, by, temperature=1.0):
    vocab_size = Wxh.shape[1]
    x = np.zeros((vocab_size, 1))
    x[seed_ix] = 1
    ixes = []
    for t in range(n):
        p, h = step_probabilities(x, h, Wxh, Whh, Why, bh, by, temperature)
        ix = np.random.choice(range(vocab_size), p=p.ravel())
        x = np.zeros((vocab_size, 1))
        x[ix] = 1
        ixes.append(ix)
    return ixes, h


def sample_inverse_cdf(h, seed_ix, uniforms, Wxh, Whh, Why, bh, by, temperature=1.0):
    """The same, the uniforms drawn beforehand (one per step) and inverted through the CDF."""
    vocab_size = Wxh.shape[1]
    x = np.zeros((vocab_size, 1))
    x[seed_ix] = 1
    ixes = []
    for u in uniforms:
        p, h = step_probabilities(x, h, Wxh, Whh, Why, bh, by, temperature)
        cdf = np.cumsum(p.ravel())
        ix = int(np.searchsorted(cdf, u * cdf[-1]))
        x = np.zeros((vocab_size, 1))
        x[ix] = 1
        ixes.append(ix)
    return ixes, h


def sample_random_inverse_cdf(h, seed_ix, n, Wxh, Whh, Why, bh, by, temperature=1.0):
    """Inverse CDF with a fresh np.random.rand() per step, the index found by a linear scan."""
    vocab_size = Wxh.shape[1]
    x = np.zeros((vocab_size, 1))
    x[seed_ix] = 1
    ixes = []
    for t in range(n):
        p, h = step_probabilities(x, h, Wxh, Whh, Why, bh, by, temperature)
        u = np.random.rand()
        ix = 0
        acc = p[0, 0]
        while acc < u and ix < vocab_size - 1:
            ix += 1
            acc += p[ix, 0]
        x = np.zeros((vocab_size, 1))
        x[ix] = 1
        ixes.append(ix)
    return ixes, h


def model(vocab_size=5, hidden_size=4, seed=5, scale=0.5):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((hidden_size, vocab_size)) * scale,
            rng.standard_normal((hidden_size, hidden_size)) * scale,
            rng.standard_normal((vocab_size, hidden_size)) * scale,
            np.zeros((hidden_size, 1)), rng.standard_normal((vocab_size, 1)) * scale)


def cases():
    """Arguments of `sample_inverse_cdf`."""
    params = model()
    h0 = np.zeros((params[1].shape[0], 1))
    rng = np.random.default_rng(6)
    return [
        (h0, 2, rng.random(8), *params),
        (h0, 0, rng.random(3), *params, 0.5),
        (h0, 1, np.zeros(0), *params),     # no step
    ]
