"""Helpers: run a graph function and compare its gradients with central finite differences."""
from __future__ import annotations

import numpy as np

import grad
import graph
from exec import Session


def numeric_gradient(f, arrays, eps=1e-6):
    """Central differences of scalar f(*arrays) with respect to every element of every array."""
    out = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a, dtype=np.float64)
        for idx in np.ndindex(a.shape):
            plus = [b.copy() for b in arrays]
            minus = [b.copy() for b in arrays]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            g[idx] = (f(*plus) - f(*minus)) / (2 * eps)
        out.append(g)
    return out


def check_gradients(fn, *arrays, seed=0, rtol=1e-5, atol=1e-7, eps=1e-6, par_values=None):
    """Builds y = fn(*placeholders), loss = sum(y * c) with random c, and checks
    grad.gradients(loss, inputs) against finite differences of the same graph."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    g = graph.Graph()
    with g.as_default():
        phs = [graph.placeholder(np.float64, a.shape, name=f"x{k}") for k, a in enumerate(arrays)]
        y = fn(*phs)
        sess = Session(g)
        y0 = np.asarray(sess.run(y, dict(zip(phs, arrays))))
        c = np.random.default_rng(seed).normal(size=y0.shape)
        loss = graph.reduce_sum(y * graph.constant(c))
        grads = grad.gradients(loss, phs)
    got = sess.run(grads, dict(zip(phs, arrays)))

    def f(*xs):
        return float(sess.run(loss, dict(zip(phs, xs))))
    want = numeric_gradient(f, arrays, eps)
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"gradient for input {k}")
    return got
