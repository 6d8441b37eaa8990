"""Builds a graph with nested while loops and a cond, prints its listing, and runs it."""
import numpy as np

import graph as G
from exec import Session


def build():
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [], name="n")

        def outer_body(i, total):
            # inner loop: j from 0 to i, adding i*j (or -j on odd i)
            def inner_body(j, t):
                step = G.cond(G.equal(G.mod(i, 2), 0), lambda: G.mul(i, j), lambda: G.neg(j))
                return G.add(j, 1), G.add(t, step)
            _, total = G.while_loop(lambda j, t: G.less(j, i), inner_body, (G.constant(0), total))
            return G.add(i, 1), total

        _, total = G.while_loop(lambda i, t: G.less(i, n), outer_body, (G.constant(0), G.constant(0)))
    return g, n, total


def reference(n):
    total = 0
    for i in range(n):
        for j in range(i):
            total += i * j if i % 2 == 0 else -j
    return total


if __name__ == "__main__":
    g, n, total = build()
    print(g)
    sess = Session(g)
    for value in (0, 5, 50):
        got = sess.run(total, {n: value})
        print(f"n={value}: graph={got} python={reference(value)}")
        assert got == reference(value)
