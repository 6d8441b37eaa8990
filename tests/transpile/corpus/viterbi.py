"""Viterbi decoding of an HMM, as on Wikipedia: probability and back-pointer tables made with np.empty
(float64 and uint8), filled column by column, the path recovered with `reversed(range(1, T))`."""
import numpy as np


def viterbi(y, A, B, Pi):
    K = A.shape[0]
    T = len(y)
    T1 = np.empty((K, T), "d")
    T2 = np.empty((K, T), "B")
    T1[:, 0] = Pi * B[:, y[0]]
    T2[:, 0] = 0
    for i in range(1, T):
        T1[:, i] = np.max(T1[:, i - 1] * A.T * B[np.newaxis, :, y[i]].T, 1)
        T2[:, i] = np.argmax(T1[:, i - 1] * A.T, 1)
    x = np.empty(T, "B")
    x[-1] = np.argmax(T1[:, T - 1])
    for i in reversed(range(1, T)):
        x[i - 1] = T2[x[i], i]
    return x, T1, T2


def viterbi_log(y, log_A, log_B, log_pi):
    """The same in log space, the back pointers in a list of arrays."""
    delta = log_pi + log_B[:, y[0]]
    backptrs = []
    for t in range(1, len(y)):
        scores = delta[:, None] + log_A
        backptrs.append(np.argmax(scores, axis=0))
        delta = np.max(scores, axis=0) + log_B[:, y[t]]
    best = np.argmax(delta)
    path = [best]
    for bp in reversed(backptrs):
        best = bp[best]
        path.append(best)
    return np.max(delta), path[::-1]


def model():
    A = np.array([[0.7, 0.3, 0.0], [0.2, 0.6, 0.2], [0.1, 0.2, 0.7]]) + 0.01
    A /= A.sum(axis=1, keepdims=True)
    B = np.array([[0.5, 0.4, 0.1], [0.1, 0.3, 0.6], [0.3, 0.3, 0.4]])
    Pi = np.array([0.6, 0.3, 0.1])
    return A, B, Pi


def cases():
    A, B, Pi = model()
    return [
        (np.array([0, 1, 2, 2, 1, 0, 2]), A, B, Pi),
        (np.array([2, 2]), A, B, Pi),
        (np.array([1]), A, B, Pi),        # both loops run zero times
    ]
