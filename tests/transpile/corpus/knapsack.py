"""0/1 knapsack: the (items+1) x (capacity+1) table, then the chosen items recovered walking back through
it; and the one-row version whose capacity loop runs downwards."""
import numpy as np


def knapsack(values, weights, capacity):
    n = len(values)
    dp = np.zeros((n + 1, capacity + 1), dtype=values.dtype)
    for i in range(1, n + 1):
        w, v = weights[i - 1], values[i - 1]
        for c in range(capacity + 1):
            dp[i, c] = dp[i - 1, c]
            if w <= c and dp[i - 1, c - w] + v > dp[i, c]:
                dp[i, c] = dp[i - 1, c - w] + v
    chosen = []
    c = capacity
    for i in range(n, 0, -1):
        if dp[i, c] != dp[i - 1, c]:
            chosen.append(i - 1)
            c -= weights[i - 1]
    return dp[n, capacity], chosen[::-1]


def knapsack_1d(values, weights, capacity):
    best = np.zeros(capacity + 1)
    for v, w in zip(values, weights):
        for c in range(capacity, w - 1, -1):
            best[c] = max(best[c], best[c - w] + v)
    return best[capacity]


def cases():
    return [
        (np.array([60, 100, 120]), np.array([1, 2, 3]), 5),
        (np.array([1.5, 2.0, 0.5, 3.0]), np.array([2, 3, 1, 4]), 6),
        (np.array([4, 5]), np.array([3, 4]), 2),        # nothing fits
        (np.array([4, 5]), np.array([3, 4]), 0),
    ]
