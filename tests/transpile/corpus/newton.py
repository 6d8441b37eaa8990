"""Newton's method on a scalar function, written like scipy.optimize.newton (f and its derivative passed in,
returns inside the loop, a raise when the derivative vanishes), used to solve Kepler's equation."""
import numpy as np


def newton(f, fprime, x0, tol=1.48e-8, maxiter=50):
    x = x0
    for itr in range(maxiter):
        fval = f(x)
        if fval == 0:
            return x, itr
        fder = fprime(x)
        if fder == 0:
            raise RuntimeError("derivative was zero")
        step = fval / fder
        x = x - step
        if abs(step) < tol:
            return x, itr + 1
    return x, maxiter


def kepler(M, e, maxiter=50):
    """The eccentric anomaly E with E - e sin E = M."""
    return newton(lambda E: E - e * np.sin(E) - M, lambda E: 1.0 - e * np.cos(E), M, maxiter=maxiter)


def cases():
    return [
        (1.0, 0.3),
        (2.5, 0.9),
        (0.0, 0.5),                # f(x0) == 0: the first return
        (1.0, 0.3, 2),             # stops at maxiter
        (1.0, 0.3, 0),             # no iteration
    ]
