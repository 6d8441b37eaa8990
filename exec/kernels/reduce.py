"""Reduction kernels: numpy reductions with the axis and keepdims fixed when the plan is built.

Sums, products, extrema and any/all call the ufunc's `reduce` directly (what
np.sum and friends do after their argument handling; same result dtypes).
"""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import kernel

_FUNCS = {"Sum": np.add.reduce, "Prod": np.multiply.reduce, "Max": np.maximum.reduce,
          "Min": np.minimum.reduce, "Any": np.logical_or.reduce, "All": np.logical_and.reduce,
          "Mean": np.mean, "ArgMax": np.argmax, "ArgMin": np.argmin}


@kernel(*_FUNCS)
def _reduce(node, rt):
    fn = _FUNCS[node.op]
    axis, keepdims = node.attrs["axis"], node.attrs["keepdims"]
    def reduce(x):
        out = fn(x, axis=axis, keepdims=keepdims)
        return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out
    return reduce
