"""Random kernels: each node draws from its session's persistent generator for its seed."""
from __future__ import annotations

import numpy as np

from exec.kernels.array import known_value
from exec.kernels.registry import kernel


def _scalar(out):
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


@kernel("RandomUniform")
def _uniform(node, rt):
    dtype, seed, key = node.attrs["dtype"], node.attrs["seed"], node.name
    integer = dtype.kind in "iu"

    known = known_value(node.inputs[0])  # a shape the graph fixes: converted once, not per draw
    fixed = None if known is None else tuple(int(d) for d in np.reshape(known, -1)) or None

    bounds = [known_value(t) for t in node.inputs[1:]]
    if not integer and known is not None and fixed is None and all(
            b is not None and np.ndim(b) == 0 for b in bounds):
        low, high = (float(b) for b in bounds)
        make = dtype.type

        def uniform_scalar(shape, lo, hi):  # one draw between bounds the graph fixes (an epsilon-greedy test)
            return make(low + (high - low) * rt.rng(key, seed).random())
        return uniform_scalar

    def uniform(shape, lo, hi):
        g = rt.rng(key, seed)
        # None: one draw, a scalar (size () costs 3x as much)
        size = fixed if known is not None else tuple(shape.tolist()) or None
        if integer:
            return _scalar(g.integers(lo, hi, size=size, dtype=dtype))
        if getattr(lo, "ndim", 0) or getattr(hi, "ndim", 0):
            return _scalar(g.uniform(lo, hi, size).astype(dtype, copy=False))
        # what Generator.uniform computes (low + (high - low) * next_double, in float64), without
        # its argument checks: the same draws, a third of the time for a scalar
        lo, hi = float(lo), float(hi)
        if size is None:
            return dtype.type(lo + (hi - lo) * g.random())
        return (lo + (hi - lo) * g.random(size)).astype(dtype, copy=False)
    return uniform


@kernel("RandomNormal")
def _normal(node, rt):
    dtype, seed, key = node.attrs["dtype"], node.attrs["seed"], node.name

    def normal(shape, mean, stddev):
        g = rt.rng(key, seed)
        return _scalar(g.normal(mean, stddev, tuple(shape.tolist())).astype(dtype, copy=False))
    return normal


@kernel("Categorical")
def _categorical(node, rt):
    seed, key = node.attrs["seed"], node.name

    def categorical(logits, num_samples):
        g = rt.rng(key, seed)
        logits = np.asarray(logits, dtype=np.float64)
        # Gumbel-max: argmax(logits + Gumbel noise) is a draw from softmax(logits)
        noise = g.gumbel(size=(*logits.shape[:-1], int(num_samples), logits.shape[-1]))
        return np.argmax(np.expand_dims(logits, -2) + noise, axis=-1).astype(np.int64, copy=False)
    return categorical
