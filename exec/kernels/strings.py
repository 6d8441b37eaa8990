"""The StringFormat kernel (graph/ops/strings.py): Python's formatting, applied when the graph runs."""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import kernel

_CONVERSIONS = {"": lambda v: v, "s": str, "r": repr, "a": ascii}
_TYPES = {"int": int, "float": float, "bool": bool}


def python_value(v, as_type: str):
    """The value as the traced program held it: a Python number, a numpy scalar, an array or a str."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if as_type:
        return _TYPES[as_type](v)
    return v


@kernel("StringFormat")
def _string_format(node, rt):
    template, fields = node.attrs["template"], node.attrs["fields"]

    def string_format(*values):
        it = iter(zip(values, fields, strict=True))
        out = []
        for t in template:
            if t is not None:
                out.append(t)
                continue
            v, (spec, conversion, as_type) = next(it)
            out.append(format(_CONVERSIONS[conversion](python_value(v, as_type)), spec))
        return "".join(out)
    return string_format
