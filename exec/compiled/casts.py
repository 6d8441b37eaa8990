"""Scalar casts written as a call of the target's numpy scalar type: `cast = float64(n)`.

The `Cast` kernel goes through `np.asarray(x).astype(dtype)` and back to a scalar, ~480 ns; the
scalar type's constructor takes ~65 ns. A loop dividing by its Python-int counter (`delta / n`
casts `n` to float64 every iteration) spent more on that cast than on the rest of its arithmetic.
Only *safe* casts (`np.can_cast(from, to, "safe")`: bool to anything, integers to wider integers
or to floats that hold them, floats to wider floats) are written so: they convert the value the
same way both ways (the tests compare the bits, at the types' limits too); an unsafe cast (a
float to an integer: NaN, overflow) keeps the kernel, whose wrapping the constructor does not do.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from exec.compiled.structure import Call

_KINDS = "biuf"


@dataclass(eq=False)
class ScalarCasts:
    """The Cast nodes written as constructor calls (node -> format string of the argument), and the
    globals those name (the scalar types, by dtype name)."""
    operators: dict = field(default_factory=dict)
    globals: dict = field(default_factory=dict)


def scalar_casts(calls: list[Call]) -> ScalarCasts:
    """The safe casts of a scalar to a scalar among `calls` (a program's calls)."""
    out = ScalarCasts()
    for call in calls:
        node = call.node
        if node.op != "Cast" or len(node.inputs) != 1 or len(node.outputs) != 1:
            continue
        src, dst = node.inputs[0], node.outputs[0]
        if src.shape != () or dst.shape != () or not _numeric(src.dtype) or not _numeric(dst.dtype):
            continue
        if src.dtype == dst.dtype or dst.dtype != np.dtype(node.attrs["dtype"]) or \
                not np.can_cast(src.dtype, dst.dtype, "safe"):
            continue
        name = dst.dtype.name
        out.globals[name] = dst.dtype.type
        out.operators[node] = name + "({})"
    return out


def _numeric(dtype) -> bool:
    return isinstance(dtype, np.dtype) and dtype.kind in _KINDS and dtype.isnative

