"""Gauss-Seidel sweeps for A x = b: each unknown updated in place from the newest values, the change of
each sweep kept in a list, stopping when it is below a tolerance."""
import numpy as np


def gauss_seidel(A, b, x0=None, tol=1e-10, max_iter=200):
    n = len(b)
    x = np.zeros(n) if x0 is None else x0.copy()
    changes = []
    for it in range(max_iter):
        x_old = x.copy()
        for i in range(n):
            s1 = A[i, :i] @ x[:i]
            s2 = A[i, i + 1:] @ x_old[i + 1:]
            x[i] = (b[i] - s1 - s2) / A[i, i]
        changes.append(np.linalg.norm(x - x_old, ord=np.inf))
        if changes[-1] < tol:
            break
    return x, changes


def cases():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((4, 4)) + 5 * np.eye(4)
    b = rng.standard_normal(4)
    return [
        (A, b),
        (A, b, rng.standard_normal(4), 1e-6, 4),
        (A, b, None, 1e-10, 0),    # no sweep
    ]
