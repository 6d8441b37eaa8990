"""Levenshtein edit distance: the (m+1) x (n+1) integer table filled by index, the cost of a substitution a
conditional expression, the cell the min of three neighbours."""
import numpy as np


def edit_distance(s, t):
    m, n = len(s), len(t)
    d = np.zeros((m + 1, n + 1), dtype=int)
    for i in range(m + 1):
        d[i, 0] = i
    for j in range(n + 1):
        d[0, j] = j
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            cost = 0 if s[i - 1] == t[j - 1] else 1
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + cost)
    return d[m, n], d


def codes(word):
    return np.array([ord(c) for c in word])


def cases():
    return [
        (codes("kitten"), codes("sitting")),
        (codes("flaw"), codes("lawn")),
        (codes(""), codes("abc")),        # the inner loops run zero times
        (codes("ab"), codes("")),
    ]
