"""The mean token cross-entropy of a padded batch of sequences: vectorised with a length mask and
take_along_axis, and the loop a user writes first, over each sequence's own length."""
import numpy as np


def masked_cross_entropy(logits, targets, lengths):
    B, T, V = logits.shape
    mask = np.arange(T)[None, :] < lengths[:, None]
    m = logits.max(axis=-1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))
    nll = -np.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
    return (nll * mask).sum() / np.maximum(mask.sum(), 1)


def looped_cross_entropy(logits, targets, lengths):
    total, count = 0.0, 0
    for b in range(len(lengths)):
        for t in range(lengths[b]):
            z = logits[b, t]
            total -= z[targets[b, t]] - z.max() - np.log(np.sum(np.exp(z - z.max())))
            count += 1
    return total / max(count, 1)


def cases():
    rng = np.random.default_rng(10)
    logits = rng.standard_normal((3, 4, 5))
    targets = rng.integers(0, 5, (3, 4))
    return [
        (logits, targets, np.array([4, 2, 3])),
        (logits, targets, np.array([1, 0, 4])),      # an empty sequence
        (logits, targets, np.array([0, 0, 0])),      # every sequence empty: no token
    ]
