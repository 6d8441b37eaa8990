"""Algorithms over a list used as a stack or a deque: the sliding-window maximum (indices appended, popped
from the end while smaller, popped from the front when out of the window) and the next greater element."""
import numpy as np


def sliding_window_max(a, k):
    dq = []
    out = []
    for i in range(len(a)):
        while dq and a[dq[-1]] <= a[i]:
            dq.pop()
        dq.append(i)
        if dq[0] <= i - k:
            dq.pop(0)
        if i >= k - 1:
            out.append(a[dq[0]])
    return np.array(out)


def next_greater(a):
    result = np.full(len(a), -1)
    stack = []
    for i, v in enumerate(a):
        while stack and a[stack[-1]] < v:
            result[stack.pop()] = i
        stack.append(i)
    return result


def cases():
    rng = np.random.default_rng(20)
    return [
        (np.array([1, 3, -1, -3, 5, 3, 6, 7]), 3),
        (rng.standard_normal(6), 2),
        (np.array([2.0, 1.0]), 3),        # the window is longer than the data: no output
        (np.zeros(0), 2),
    ]
