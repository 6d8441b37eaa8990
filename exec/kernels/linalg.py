"""Kernels of the linear algebra ops (graph/ops/linalg.py): numpy's own functions."""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import kernel, simple


@kernel("Diagonal")
def _diagonal(node, rt):
    offset, a1, a2 = node.attrs["offset"], node.attrs["axis1"], node.attrs["axis2"]
    # np.diagonal gives a read-only view of its input: a copy, as every kernel's result is its own
    return lambda x: np.diagonal(x, offset, a1, a2).copy()


@kernel("DiagonalEmbed")
def _diagonal_embed(node, rt):
    offset, a1, a2 = node.attrs["offset"], node.attrs["axis1"], node.attrs["axis2"]

    def embed(values, shape):
        values = np.asarray(values)
        out = np.zeros(tuple(int(d) for d in shape), values.dtype)
        view = np.moveaxis(out, (a1, a2), (-2, -1))  # writes go through to `out`
        k = values.shape[-1]
        view[..., np.arange(k) + max(-offset, 0), np.arange(k) + max(offset, 0)] = values
        return out
    return embed


simple("Inv", np.linalg.inv, heavy=True)
simple("Cholesky", np.linalg.cholesky, heavy=True)
simple("Det", np.linalg.det, heavy=True)
simple("Solve", np.linalg.solve, heavy=True)
simple("Slogdet", lambda a: tuple(np.linalg.slogdet(a)), heavy=True)
