"""Conjugate gradient for a symmetric positive definite A x = b (the textbook loop: at most n steps, a
break when the residual is small, and a return before the loop when x0 already solves it)."""
import numpy as np


def conjugate_gradient(A, b, x0, tol=1e-10, max_iter=None):
    if max_iter is None:
        max_iter = len(b)
    x = x0.copy()
    r = b - A @ x
    if np.sqrt(r @ r) < tol:
        return x, 0
    p = r.copy()
    rsold = r @ r
    k = 0
    for i in range(max_iter):
        Ap = A @ p
        alpha = rsold / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        rsnew = r @ r
        k = i + 1
        if np.sqrt(rsnew) < tol:
            break
        p = r + (rsnew / rsold) * p
        rsold = rsnew
    return x, k


def cases():
    rng = np.random.default_rng(2)
    M = rng.standard_normal((5, 5))
    A = M @ M.T + 5 * np.eye(5)
    b = rng.standard_normal(5)
    return [
        (A, b, np.zeros(5)),
        (A, b, np.zeros(5), 1e-10, 2),
        (A, b, np.linalg.solve(A, b), 1e-6),   # x0 solves it: the early return
        (A, b, np.ones(5), 1e-10, 0),          # no step
    ]
