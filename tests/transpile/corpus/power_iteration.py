"""Power iteration: the dominant eigenvalue and eigenvector, stopping when the Rayleigh quotient settles."""
import numpy as np


def power_iteration(A, num_iters=1000, tol=1e-12, v0=None):
    b = np.ones(A.shape[1]) if v0 is None else v0
    b = b / np.linalg.norm(b)
    lam = 0.0
    for _ in range(num_iters):
        Ab = A @ b
        lam_new = b @ Ab
        b = Ab / np.linalg.norm(Ab)
        if abs(lam_new - lam) < tol:
            lam = lam_new
            break
        lam = lam_new
    return lam, b


def cases():
    rng = np.random.default_rng(3)
    M = rng.standard_normal((4, 4))
    A = M + M.T
    return [
        (A,),
        (A, 5, 1e-12, rng.standard_normal(4)),
        (A, 0),                    # no iteration: lam stays the Python float 0.0
    ]
