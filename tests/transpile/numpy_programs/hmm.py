"""A hidden Markov model: forward and backward probabilities, Viterbi decoding, and a Baum-Welch
re-estimation step that updates the global transition and emission matrices in place."""
import numpy as np

a = np.array([[0.54, 0.46], [0.49, 0.51]])          # transitions
b = np.array([[0.16, 0.26, 0.58], [0.25, 0.28, 0.47]])  # emissions
initial = np.array([0.5, 0.5])


def reset():
    a[:] = [[0.54, 0.46], [0.49, 0.51]]
    b[:] = [[0.16, 0.26, 0.58], [0.25, 0.28, 0.47]]


def forward(V):
    alpha = np.zeros((V.shape[0], a.shape[0]))
    alpha[0, :] = initial * b[:, V[0]]
    for t in range(1, V.shape[0]):
        for j in range(a.shape[0]):
            alpha[t, j] = alpha[t - 1].dot(a[:, j]) * b[j, V[t]]
    return alpha


def backward(V):
    beta = np.zeros((V.shape[0], a.shape[0]))
    beta[V.shape[0] - 1] = np.ones((a.shape[0]))
    for t in range(V.shape[0] - 2, -1, -1):
        for j in range(a.shape[0]):
            beta[t, j] = (beta[t + 1] * b[:, V[t + 1]]).dot(a[j, :])
    return beta


def baum_welch_step(V):
    M, T = a.shape[0], len(V)
    alpha, beta = forward(V), backward(V)
    xi = np.zeros((M, M, T - 1))
    for t in range(T - 1):
        denominator = np.dot(np.dot(alpha[t, :].T, a) * b[:, V[t + 1]].T, beta[t + 1, :])
        for i in range(M):
            numerator = alpha[t, i] * a[i, :] * b[:, V[t + 1]].T * beta[t + 1, :].T
            xi[i, :, t] = numerator / denominator
    gamma = np.sum(xi, axis=1)
    a[:] = np.sum(xi, 2) / np.sum(gamma, axis=1).reshape((-1, 1))
    gamma = np.hstack((gamma, np.sum(xi[:, :, T - 2], axis=0).reshape((-1, 1))))
    K = b.shape[1]
    denominator = np.sum(gamma, axis=1)
    for l in range(K):
        b[:, l] = np.sum(gamma[:, V == l], axis=1)
    b[:] = np.divide(b, denominator.reshape((-1, 1)))
    return np.sum(alpha[T - 1])


def viterbi(V):
    T, M = V.shape[0], a.shape[0]
    omega = np.zeros((T, M))
    omega[0, :] = np.log(initial * b[:, V[0]])
    prev = np.zeros((T - 1, M))
    for t in range(1, T):
        for j in range(M):
            probability = omega[t - 1] + np.log(a[:, j]) + np.log(b[j, V[t]])
            prev[t - 1, j] = np.argmax(probability)
            omega[t, j] = np.max(probability)
    S = np.zeros(T)
    last_state = np.argmax(omega[T - 1, :])
    S[0] = last_state
    backtrack_index = 1
    for i in range(T - 2, -1, -1):
        S[backtrack_index] = prev[i, int(last_state)]
        last_state = prev[i, int(last_state)]
        backtrack_index += 1
    return np.flip(S, axis=0)
