"""Python's string formatting of graph values: `StringFormat`, the text an f-string, `str()`, `repr()` or
`%` gives when the graph runs.

The result is a Python `str` (a tensor of dtype object and shape []): `f"loss={loss:.3f}"` of a graph
value is the text Python would make of the value it has when the graph runs, with the format spec and
the conversion (`!r`, `!s`, `!a`) applied then. A value that stands for a Python number in the traced
program (`as_type`: "int", "float", "bool") is formatted as that number (`3.0`, not numpy's repr
`np.float64(3.0)`); any other is formatted as numpy gives it (a numpy scalar for shape [], else the
array).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graph.core import make_op
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.conversion import convert

STRING = np.dtype(object)

register_op("StringFormat", lambda i, a: [(STRING, ())], differentiable=False)


@dataclass(frozen=True)
class Field:
    """How one value is formatted into the text: `format(conversion(value), spec)`."""

    spec: str = ""
    conversion: str = ""     # "", "r", "s" or "a"
    as_type: str = ""        # the Python number type the value stands for, or "" for numpy's


def string_format(parts, name: str | None = None) -> Tensor:
    """The text of `parts` when the graph runs: each part a str (literal text) or a (value, Field) pair."""
    template, values, fields = [], [], []
    for p in parts:
        if isinstance(p, str):
            template.append(p)
        else:
            value, field = p
            template.append(None)
            values.append(convert(value))
            fields.append((field.spec, field.conversion, field.as_type))
    return make_op("StringFormat", values, {"template": tuple(template), "fields": tuple(fields)},
                   name=name or "StringFormat").outputs[0]


__all__ = ["STRING", "Field", "string_format"]
