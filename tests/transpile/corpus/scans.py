"""Prefix sums with a loop and a running total (inclusive into np.empty_like, exclusive into a list), and a
running maximum with its position."""
import numpy as np


def prefix_sums(a):
    out = np.empty_like(a)
    total = 0
    for i in range(len(a)):
        total += a[i]
        out[i] = total
    return out, total


def exclusive_scan(a):
    out = []
    running = 0
    for v in a:
        out.append(running)
        running = running + v
    return out, running


def running_max(a):
    best = -np.inf
    best_at = -1
    maxima = np.zeros(len(a))
    for i, v in enumerate(a):
        if v > best:
            best, best_at = v, i
        maxima[i] = best
    return maxima, best_at


def cases():
    rng = np.random.default_rng(19)
    return [
        (rng.standard_normal(6),),
        (np.array([3, 1, 4, 1, 5], dtype=np.int32),),
        (np.zeros(0),),
    ]
