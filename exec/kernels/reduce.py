"""Reduction kernels: numpy reductions with the axis and keepdims fixed when the plan is built."""
from __future__ import annotations

import numpy as np

from exec.kernels import kernel

_FUNCS = {"Sum": np.sum, "Mean": np.mean, "Max": np.max, "Min": np.min, "Prod": np.prod,
          "Any": np.any, "All": np.all, "ArgMax": np.argmax, "ArgMin": np.argmin}


@kernel(*_FUNCS)
def _reduce(node, rt):
    fn = _FUNCS[node.op]
    axis, keepdims = node.attrs["axis"], node.attrs["keepdims"]
    if axis is None and not keepdims:
        def reduce_all(x):
            return fn(x)
        return reduce_all

    def reduce(x):
        out = fn(x, axis=axis, keepdims=keepdims)
        return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out
    return reduce
