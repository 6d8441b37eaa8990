"""Jacobi iteration for A x = b, run until the residual's norm is below a tolerance."""
import numpy as np


def jacobi(A, b, tol=1e-10, max_iter=500):
    D = np.diag(A)
    R = A - np.diagflat(D)
    x = np.zeros_like(b)
    r = b - A @ x
    k = 0
    while np.linalg.norm(r) > tol and k < max_iter:
        x = (b - R @ x) / D
        r = b - A @ x
        k += 1
    return x, k


def cases():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, 4)) + 6 * np.eye(4)     # diagonally dominant: converges
    b = rng.standard_normal(4)
    return [
        (A, b),
        (A, b, 1e-4, 3),           # stops at max_iter
        (A, np.zeros(4)),          # the residual is zero: no iteration
        (A, b, 1e-10, 0),
    ]
