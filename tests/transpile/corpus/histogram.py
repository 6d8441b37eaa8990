"""Histograms by hand: each value's bin computed with int(), `counts[k] += 1`, values outside the range
skipped with continue, the right edge counted in the last bin; a weighted 2-D one too."""
import numpy as np


def histogram(data, lo, hi, nbins):
    counts = np.zeros(nbins, dtype=np.int64)
    width = (hi - lo) / nbins
    for x in data:
        if x < lo or x > hi:
            continue
        k = int((x - lo) / width)
        if k == nbins:
            k -= 1
        counts[k] += 1
    edges = lo + width * np.arange(nbins + 1)
    return counts, edges


def histogram2d(xs, ys, weights, nx, ny):
    grid = np.zeros((nx, ny))
    for x, y, w in zip(xs, ys, weights):
        i = min(int(x * nx), nx - 1)
        j = min(int(y * ny), ny - 1)
        grid[i, j] += w
    return grid / max(grid.sum(), 1e-12)


def cases():
    """Arguments of `histogram`."""
    rng = np.random.default_rng(17)
    return [
        (rng.standard_normal(20), -2.0, 2.0, 5),
        (np.array([0.0, 1.0, 0.5, 1.0, -0.1]), 0.0, 1.0, 4),   # the right edge; a value below the range
        (np.zeros(0), 0.0, 1.0, 3),                             # no data
    ]


def cases2d():
    rng = np.random.default_rng(18)
    return [
        (rng.random(10), rng.random(10), rng.random(10), 3, 2),
        (np.array([1.0]), np.array([0.0]), np.array([2.0]), 2, 2),
        (np.zeros(0), np.zeros(0), np.zeros(0), 2, 3),
    ]
