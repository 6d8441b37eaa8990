"""Small numeric programs, exported with `transpile.export_onnx` and run by onnxruntime with its default options
(graph optimizations ORT_ENABLE_ALL, as users run it), compute the values and dtypes the function computes:
vector-matrix products with transposes, a linear solver, power iteration, a softmax regression step, a DP table
and a running sum, with loops that run zero times or several."""
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import transpile
from graph import nest
from tests.graph.onnx_checks import check_same, default_runtime

pytest.importorskip("onnx")

_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def vector_matrix_products(A, B, u, w, count):
    """Every way this library's users write a product with a 1-D operand and a transpose."""
    acc = np.zeros_like(w)
    for _ in range(count):  # inside a Loop body
        acc = acc + A.T @ u
    if np.sum(u) > 0:  # inside If branches
        chosen = w @ A.T
    else:
        chosen = u @ (A @ A.T) - w @ np.transpose(A)
    return (A.T @ u, w @ A.T, np.transpose(A) @ u, np.dot(A.T, u), u @ A, A @ w, u @ u, u.T @ A,
            np.swapaxes(B, 1, 2) @ u, w @ np.swapaxes(B, 1, 2), np.transpose(B, (1, 0, 2)) @ w,
            (A.T * 2.0) @ u, 3.0 * (A.T @ u) + 1.0, A.T.astype(np.float32) @ u, acc, chosen)


def conjugate_gradient(A, b, count):
    """Solves (A.T A + I) x = b: a linear solver's iterations."""
    x = np.zeros_like(b)
    r = b - (A.T @ (A @ x) + x)
    p = r
    rs = r @ r
    k = 0
    while k < count and rs > 1e-20:  # converged in at most len(b) steps: rs is then zero but for rounding
        k += 1
        q = A.T @ (A @ p) + p
        alpha = rs / (p @ q)
        x = x + alpha * p
        r = r - alpha * q
        rs_next = r @ r
        p = r + (rs_next / rs) * p
        rs = rs_next
    return x, rs


def power_iteration(A, v, count):
    for _ in range(count):
        v = A.T @ (A @ v)
        v = v / np.sqrt(v @ v)
    return v, v @ (A.T @ (A @ v))


def softmax_regression(W, X, labels, lr, count):
    Y = (labels[:, None] == np.arange(W.shape[1])).astype(np.float64)
    for _ in range(count):
        logits = X @ W
        e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
        p = e / np.sum(e, axis=1, keepdims=True)
        W = W - lr * (X.T @ (p - Y)) / X.shape[0]
    scores = X @ W
    return W, np.argmax(scores, axis=1), np.mean(np.max(scores, axis=1))


def longest_common_subsequence(a, b, n, m):
    """The DP table, allocated before its loops and filled by index."""
    table = np.zeros((a.shape[0] + 1, b.shape[0] + 1), dtype=np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                table[i, j] = table[i - 1, j - 1] + 1
            else:
                table[i, j] = np.maximum(table[i - 1, j], table[i, j - 1])
    return table[n, m], table


def running_sum(xs, count):
    total = 0.0
    sums = np.zeros_like(xs)
    for i in range(count):
        total = total + xs[i]
        sums[i] = total
    return total, sums


@dataclass(frozen=True)
class Program:
    fn: Callable
    arguments: Callable  # (rng, size, count) -> the arguments of a call

    def recounted(self, args: tuple, count: int) -> tuple:
        """The same arguments with another trip count (the last argument, or the last two for the DP)."""
        if self.fn is longest_common_subsequence:
            return (*args[:2], min(count, args[2]), min(count + 1, args[3]))
        return (*args[:-1], count)


def _matrix(rng, rows, cols):
    return rng.standard_normal((rows, cols))


PROGRAMS = {
    "vector_matrix_products": Program(vector_matrix_products, lambda rng, n, k: (
        _matrix(rng, n, n + 1), rng.standard_normal((2, n, n + 1)), rng.standard_normal(n),
        rng.standard_normal(n + 1), k)),
    "conjugate_gradient": Program(conjugate_gradient, lambda rng, n, k: (
        _matrix(rng, n + 1, n) / n, rng.standard_normal(n), k)),
    "power_iteration": Program(power_iteration, lambda rng, n, k: (
        _matrix(rng, n + 1, n), rng.standard_normal(n), k)),
    "softmax_regression": Program(softmax_regression, lambda rng, n, k: (
        _matrix(rng, n, 3) * 0.1, _matrix(rng, n + 2, n), rng.integers(0, 3, n + 2), 0.5, k)),
    "longest_common_subsequence": Program(longest_common_subsequence, lambda rng, n, k: (
        rng.integers(0, 3, n), rng.integers(0, 3, n + 1), min(k, n), min(k + 1, n + 1))),
    "running_sum": Program(running_sum, lambda rng, n, k: (rng.standard_normal(n + 4), k)),
}
_CONVERTED = {name: transpile.function(p.fn) for name, p in PROGRAMS.items()}


@pytest.mark.parametrize("name", PROGRAMS)
@settings(max_examples=10, **_SETTINGS)
@given(size=st.integers(2, 4), count=st.integers(0, 4), other_count=st.integers(0, 4), seed=st.integers(0, 2**32 - 1))
def test_programs_compute_in_onnxruntime_what_they_compute_here(name, size, count, other_count, seed):
    program, fn = PROGRAMS[name], _CONVERTED[name]
    args = program.arguments(np.random.default_rng(seed), size, count)
    model = transpile.export_onnx(fn, args)
    sess = default_runtime(model)
    for call in (args, program.recounted(args, other_count)):
        want = nest.flatten(fn(*call))
        got = sess.run(None, {i.name: np.asarray(a) for i, a in zip(model.graph.input, call, strict=True)})
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            check_same(g, w, f"{name} output {k} for {call}")


def test_a_transposed_matrix_times_a_vector_as_reported():
    @transpile.function
    def f(A, u):
        return A.T @ u

    A, u = np.arange(12.0).reshape(3, 4), np.array([1.0, 2.0, 3.0])
    (got,) = default_runtime(transpile.export_onnx(f, (A, u))).run(None, {"A": A, "u": u})
    check_same(got, A.T @ u)
