"""Kernels of the ops along one axis (graph/ops/along_axis.py): cumulative sums and products, sorts."""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import kernel


def _scalar(out):
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


def _cumulative(fn):
    def factory(node, rt):
        axis, dtype, reverse = node.attrs["axis"], node.attrs["dtype"], node.attrs["reverse"]
        if not reverse:
            def forward(x):
                return fn(x, axis=axis, dtype=dtype)
            return forward

        def backward(x):
            return np.flip(fn(np.flip(x, axis), axis=axis, dtype=dtype), axis)
        return backward
    return factory


kernel("Cumsum")(_cumulative(np.cumsum))
kernel("Cumprod")(_cumulative(np.cumprod))


@kernel("CumprodGrad")
def _cumprod_grad(node, rt):
    axis, reverse = node.attrs["axis"], node.attrs["reverse"]

    def cumprod_grad(x, g):
        """d/dx[i] of sum_j g[j] * prod_{k<=j} x[k] = before[i] * s[i], where before[i] is the product of
        the x before i and s[i] = g[i] + x[i+1] * s[i+1]: no division, so zeros in x are exact."""
        x = np.moveaxis(np.asarray(x, dtype=np.result_type(x, g)), axis, 0)
        g = np.moveaxis(np.asarray(g), axis, 0)
        if reverse:
            x, g = x[::-1], g[::-1]
        before = np.concatenate([np.ones_like(x[:1]), np.cumprod(x[:-1], axis=0)]) if len(x) else x
        s = np.empty_like(g)
        acc = np.zeros_like(g[:1])
        for i in range(len(g) - 1, -1, -1):
            acc = g[i:i + 1] + (x[i + 1:i + 2] * acc if i + 1 < len(g) else 0)
            s[i:i + 1] = acc
        out = before * s
        if reverse:
            out = out[::-1]
        return _scalar(np.ascontiguousarray(np.moveaxis(out, 0, axis)).astype(g.dtype, copy=False))
    return cumprod_grad


@kernel("Sort")
def _sort(node, rt):
    axis, kind = node.attrs["axis"], node.attrs["kind"]

    def sort(x):
        return np.sort(x, axis=axis, kind=kind)
    return sort


@kernel("Argsort")
def _argsort(node, rt):
    axis, kind = node.attrs["axis"], node.attrs["kind"]

    def argsort(x):
        return np.argsort(x, axis=axis, kind=kind)
    return argsort


@kernel("Permute")
def _permute(node, rt):
    axis = node.attrs["axis"]

    def permute(x, perm):
        return np.take_along_axis(np.asarray(x), perm, axis=axis)
    return permute
