"""A character-level vanilla RNN: hand-written backprop through time, Adagrad updates in place."""
import numpy as np

TEXT = "the quick brown fox jumps over the lazy dog; "
chars = sorted(set(TEXT))
vocab_size = len(chars)
char_to_ix = {c: i for i, c in enumerate(chars)}
hidden_size, seq_length, learning_rate = 12, 6, 0.1


def reset(seed=0):
    global Wxh, Whh, Why, bh, by, mWxh, mWhh, mWhy, mbh, mby
    rng = np.random.RandomState(seed)
    Wxh = rng.randn(hidden_size, vocab_size) * 0.01
    Whh = rng.randn(hidden_size, hidden_size) * 0.01
    Why = rng.randn(vocab_size, hidden_size) * 0.01
    bh = np.zeros((hidden_size, 1))
    by = np.zeros((vocab_size, 1))
    mWxh, mWhh, mWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    mbh, mby = np.zeros_like(bh), np.zeros_like(by)


reset()


def loss_fun(inputs, targets, hprev):
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((vocab_size, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    dWxh, dWhh, dWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    dbh, dby = np.zeros_like(bh), np.zeros_like(by)
    dhnext = np.zeros_like(hs[0])
    for t in reversed(range(len(inputs))):
        dy = np.copy(ps[t])
        dy[targets[t]] -= 1
        dWhy += np.dot(dy, hs[t].T)
        dby += dy
        dh = np.dot(Why.T, dy) + dhnext
        dhraw = (1 - hs[t] * hs[t]) * dh
        dbh += dhraw
        dWxh += np.dot(dhraw, xs[t].T)
        dWhh += np.dot(dhraw, hs[t - 1].T)
        dhnext = np.dot(Whh.T, dhraw)
    for dparam in [dWxh, dWhh, dWhy, dbh, dby]:
        np.clip(dparam, -5, 5, out=dparam)
    return loss, dWxh, dWhh, dWhy, dbh, dby, hs[len(inputs) - 1]


def adagrad(grads):
    for param, dparam, mem in zip([Wxh, Whh, Why, bh, by], grads, [mWxh, mWhh, mWhy, mbh, mby]):
        mem += dparam * dparam
        param += -learning_rate * dparam / np.sqrt(mem + 1e-8)


def train_step(inputs, targets, hprev):
    loss, dWxh, dWhh, dWhy, dbh, dby, hprev = loss_fun(inputs, targets, hprev)
    adagrad([dWxh, dWhh, dWhy, dbh, dby])
    return loss, hprev


def batch(p):
    inputs = [char_to_ix[ch] for ch in TEXT[p:p + seq_length]]
    targets = [char_to_ix[ch] for ch in TEXT[p + 1:p + seq_length + 1]]
    return inputs, targets


def sample(h, seed_ix, n):
    """`n` characters drawn from the model, starting from `seed_ix` with hidden state `h`."""
    x = np.zeros((vocab_size, 1))
    x[seed_ix] = 1
    ixes = []
    for t in range(n):
        h = np.tanh(np.dot(Wxh, x) + np.dot(Whh, h) + bh)
        y = np.dot(Why, h) + by
        p = np.exp(y) / np.sum(np.exp(y))
        ix = np.random.choice(range(vocab_size), p=p.ravel())
        x = np.zeros((vocab_size, 1))
        x[ix] = 1
        ixes.append(ix)
    return ixes
