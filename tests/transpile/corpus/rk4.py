"""The classical Runge-Kutta method with a while loop on time (the last step shortened to end on t1), the
times and states kept in lists and turned into arrays; the right-hand side is a function passed in: a damped
oscillator indexing its state, or Lotka-Volterra's predator-prey equations unpacking it (`x, y = z`)."""
import numpy as np


def rk4(f, y0, t0, t1, h):
    t = t0
    y = np.array(y0, dtype=float)
    ts, ys = [t], [y]
    while t < t1:
        h_step = min(h, t1 - t)
        k1 = f(t, y)
        k2 = f(t + h_step / 2, y + h_step / 2 * k1)
        k3 = f(t + h_step / 2, y + h_step / 2 * k2)
        k4 = f(t + h_step, y + h_step * k3)
        y = y + h_step / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + h_step
        ts.append(t)
        ys.append(y)
    return np.array(ts), np.array(ys)


def lotka_volterra(t, z, a=1.5, b=1.0, c=3.0, d=1.0):
    x, y = z
    return np.array([a * x - b * x * y, -c * y + d * x * y])


def damped_oscillator(t, s, k=4.0, c=0.5):
    return np.array([s[1], -k * s[0] - c * s[1]])


def integrate_oscillator(s0, t1, h=0.1):
    return rk4(damped_oscillator, s0, 0.0, t1, h)


def integrate_lotka_volterra(z0, t1, h=0.1):
    return rk4(lotka_volterra, z0, 0.0, t1, h)


def cases():
    return [
        (np.array([10.0, 5.0]), 0.35, 0.1),    # a shortened last step
        (np.array([1.0, 1.0]), 0.4, 0.2),
        (np.array([2.0, 0.5]), 0.0),           # t1 == t0: no step
    ]
