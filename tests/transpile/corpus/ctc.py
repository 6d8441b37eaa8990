"""The CTC loss of one sequence by the forward (alpha) recursion in log space: the label sequence extended
with blanks (a strided slice assignment), the alpha table started at -inf and filled by index, with
np.logaddexp over the allowed predecessors."""
import numpy as np


def log_softmax(logits):
    z = logits - np.max(logits, axis=1, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))


def ctc_loss(logits, labels, blank=0):
    T = logits.shape[0]
    logp = log_softmax(logits)
    L = 2 * len(labels) + 1
    ext = np.full(L, blank)
    ext[1::2] = labels
    alpha = np.full((T, L), -np.inf)
    alpha[0, 0] = logp[0, blank]
    if L > 1:
        alpha[0, 1] = logp[0, ext[1]]
    for t in range(1, T):
        for s in range(L):
            a = alpha[t - 1, s]
            if s > 0:
                a = np.logaddexp(a, alpha[t - 1, s - 1])
            if s > 1 and ext[s] != blank and ext[s] != ext[s - 2]:
                a = np.logaddexp(a, alpha[t - 1, s - 2])
            alpha[t, s] = a + logp[t, ext[s]]
    if L > 1:
        return -np.logaddexp(alpha[T - 1, L - 1], alpha[T - 1, L - 2])
    return -alpha[T - 1, 0]


def cases():
    rng = np.random.default_rng(9)
    return [
        (rng.standard_normal((6, 4)), np.array([1, 2, 2])),   # a repeated label: the skip is not allowed
        (rng.standard_normal((4, 3)), np.array([2])),
        (rng.standard_normal((3, 3)), np.zeros(0, dtype=np.int64)),   # the empty label: blanks only
        (rng.standard_normal((1, 3)), np.array([1])),                 # one frame: the time loop runs zero times
    ]
