"""Softmax regression trained by minibatch SGD: weights made inside and updated in place (`W -= ...`),
one-hot targets by indexing np.eye, the mean loss of each epoch appended to a list."""
import numpy as np


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def train_softmax_regression(X, y, num_classes, lr=0.5, epochs=5, batch_size=4, reg=1e-3):
    n, d = X.shape
    W = np.zeros((d, num_classes))
    b = np.zeros(num_classes)
    Y = np.eye(num_classes)[y]
    losses = []
    for epoch in range(epochs):
        epoch_loss = 0.0
        for start in range(0, n, batch_size):
            xb = X[start:start + batch_size]
            yb = Y[start:start + batch_size]
            p = softmax(xb @ W + b)
            epoch_loss += -np.sum(yb * np.log(p + 1e-12))
            dz = (p - yb) / len(xb)
            W -= lr * (xb.T @ dz + reg * W)
            b -= lr * dz.sum(axis=0)
        losses.append(epoch_loss / n)
    return W, b, losses


def cases():
    rng = np.random.default_rng(16)
    X = rng.standard_normal((10, 3))
    y = rng.integers(0, 3, 10)
    return [
        (X, y, 3),
        (X, y, 4, 0.1, 2, 3),          # a last, shorter batch; a class never seen
        (X, y, 3, 0.5, 0),             # no epoch
    ]
