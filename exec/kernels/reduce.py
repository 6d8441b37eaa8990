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


# The array methods the numpy functions end in: np.argmax and np.mean go through fromnumeric's dispatch first,
# about a microsecond a call (an agent's greedy action is one argmax of two values)
_METHODS = {"Mean": np.ndarray.mean, "ArgMax": np.ndarray.argmax, "ArgMin": np.ndarray.argmin}


@kernel(*_FUNCS)
def _reduce(node, rt):
    fn, method = _FUNCS[node.op], _METHODS.get(node.op)
    axis, keepdims = node.attrs["axis"], node.attrs["keepdims"]

    def reduce(x):
        if method is not None and type(x) is np.ndarray:
            out = method(x, axis=axis, keepdims=keepdims)
        else:
            out = fn(x, axis=axis, keepdims=keepdims)
        return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out
    return reduce
