"""Longest increasing subsequence, O(n^2) DP with back pointers, the subsequence recovered by a while loop
that follows them into a list, reversed at the end."""
import numpy as np


def longest_increasing_subsequence(a):
    n = len(a)
    if n == 0:
        return 0, []
    lengths = np.ones(n, dtype=np.int64)
    prev = np.full(n, -1)
    for i in range(1, n):
        for j in range(i):
            if a[j] < a[i] and lengths[j] + 1 > lengths[i]:
                lengths[i] = lengths[j] + 1
                prev[i] = j
    k = np.argmax(lengths)
    seq = []
    while k != -1:
        seq.append(a[k])
        k = prev[k]
    return lengths.max(), seq[::-1]


def cases():
    rng = np.random.default_rng(4)
    return [
        (np.array([10, 9, 2, 5, 3, 7, 101, 18]),),
        (rng.standard_normal(6),),
        (np.array([3.0, 2.0, 1.0]),),     # decreasing: every inner test fails
        (np.array([7]),),                 # the DP loop runs zero times
        (np.zeros(0, dtype=np.int64),),   # the early return
    ]
