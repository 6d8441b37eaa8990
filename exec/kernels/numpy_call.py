"""The NumpyCall kernel (graph/ops/numpy_call.py): numpy's own function, called on the values."""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import kernel
from graph.ops.numpy_call import display_name, fill, flatten_result, numpy_function, template_of
from graph.ops.strings import STRING


@kernel("NumpyCall")
def _numpy_call(node, rt):
    func = numpy_function(node.attrs["function"], node.attrs["method"])
    name = display_name(node.attrs["function"], node.attrs["method"])
    template = template_of(node.attrs)
    expected = [(np.dtype(dtype), shape) for dtype, shape in node.attrs["outputs"]]
    single = len(expected) == 1

    def numpy_call(*values):
        args, kwargs = fill(template, values)
        results = flatten_result(func(*args, **kwargs))
        if len(results) != len(expected):
            raise TypeError(f"{name} returned {len(results)} results where the graph was built for {len(expected)}")
        out = tuple(_checked(r, dtype, shape, name, k) for k, (r, (dtype, shape)) in enumerate(zip(results, expected, strict=True)))
        return out[0] if single else out
    return numpy_call


def _checked(value, dtype, shape, name: str, k: int):
    """One result as a numpy value (a numpy scalar for shape []), checked against what the graph inferred:
    a dtype that depends on the values would otherwise flow on unnoticed."""
    if dtype == STRING:
        return value
    arr = np.asarray(value)
    if arr.dtype != dtype or (shape is not None and (arr.ndim != len(shape) or any(
            d is not None and d != n for d, n in zip(shape, arr.shape, strict=True)))):
        raise TypeError(f"{name} returned {arr.dtype}{list(arr.shape)} for result {k}, where the graph inferred "
                        f"{dtype}{list(shape) if shape is not None else '[unknown shape]'} when it was built")
    return arr[()] if arr.ndim == 0 else arr
