"""`np.einsum` on tensors: every subscript form numpy takes (explicit and implicit output, `...`,
repeated labels for diagonals and traces, the sublist form), numpy's dtypes and size-1 broadcasting.

The builder writes the equation out (`Equation`): one label per dimension of each operand (an
ellipsis becomes letters of its own) and the output spelled explicitly, so the kernel, the shape
inference and the gradient (grad/einsum_grad.py, itself einsums) read one form.
"""
from __future__ import annotations

import functools
import string
from dataclasses import dataclass

import numpy as np

from graph import dtypes as _dt
from graph.core import make_op
from graph.errors import UnsupportedError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.conversion import convert
from graph.ops.math import cast

# numpy's labels, in its order: the sublist form's 0-25 are A-Z, 26-51 a-z
LETTERS = string.ascii_uppercase + string.ascii_lowercase


@dataclass(frozen=True, slots=True)
class Equation:
    """An einsum written out: the labels of each operand's dimensions and of the output's."""

    inputs: tuple[str, ...]
    output: str

    def __str__(self) -> str:
        return ",".join(self.inputs) + "->" + self.output


def _split(subscripts: str, n: int) -> tuple[list[str], str | None]:
    text = subscripts.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != n:
        raise ValueError(f"einsum: the subscripts {subscripts!r} name {len(terms)} operands, got {n}")
    for term in [*terms, rhs]:
        bad = sorted(set(term.replace("...", "")) - set(LETTERS))
        if bad or term.count("...") > 1:
            what = f"invalid characters {bad}" if bad else "more than one '...'"
            raise ValueError(f"einsum: {what} in the subscripts {subscripts!r} (labels are letters)")
    return terms, (rhs if arrow else None)


def _ellipsis_sizes(terms: list[str], ranks: list[int | None], subscripts: str) -> list[int]:
    """How many dimensions each operand's `...` stands for (0 without one)."""
    sizes = []
    for k, (term, rank) in enumerate(zip(terms, ranks, strict=True)):
        named = len(term.replace("...", ""))
        if rank is None:
            if "..." in term:
                raise UnsupportedError(f"einsum {subscripts!r}: operand {k} has an unknown rank; '...' needs it")
            sizes.append(0)
        elif rank < named or ("..." not in term and rank != named):
            raise ValueError(f"einsum {subscripts!r}: operand {k} has rank {rank} but its subscripts {term!r} "
                             f"name {named} dimensions")
        else:
            sizes.append(rank - named)
    return sizes


def parse(subscripts: str, ranks: list[int | None]) -> Equation:
    """numpy's reading of `subscripts` for operands of `ranks`, written out (see Equation)."""
    terms, rhs = _split(subscripts, len(ranks))
    sizes = _ellipsis_sizes(terms, ranks, subscripts)
    used = set("".join(terms) + (rhs or ""))
    spare = [c for c in reversed(LETTERS) if c not in used]
    width = max(sizes, default=0)
    if width > len(spare):
        raise ValueError(f"einsum {subscripts!r}: too many dimensions for the letters left to label them")
    ellipsis = "".join(reversed(spare[:width]))
    inputs = tuple(t.replace("...", ellipsis[width - s:]) for t, s in zip(terms, sizes, strict=True))
    if rhs is None:
        counts = "".join(t.replace("...", "") for t in terms)
        return Equation(inputs, ellipsis + "".join(sorted(c for c in set(counts) if counts.count(c) == 1)))
    if "..." not in rhs and any(sizes):
        raise ValueError(f"einsum {subscripts!r}: output has more dimensions than subscripts given in einstein "
                         "sum, but no '...' ellipsis provided to broadcast the extra dimensions.")
    output = rhs.replace("...", ellipsis)
    missing = sorted(set(output) - set("".join(inputs)))
    if missing or len(set(output)) != len(output):
        what = f"output labels {missing} appear in no operand" if missing else "an output label repeats"
        raise ValueError(f"einsum {subscripts!r}: {what}")
    return Equation(inputs, output)


def from_sublists(args) -> tuple[str, list]:
    """numpy's sublist form `einsum(a, [0, 1], b, [1, 2], [0, 2])` as (subscripts, operands)."""
    pairs, out = (args[:-1], args[-1]) if len(args) % 2 else (args, None)
    operands, subs = list(pairs[0::2]), list(pairs[1::2])

    def term(sub) -> str:
        return "".join("..." if s is Ellipsis else LETTERS[_label_index(s)] for s in sub)
    text = ",".join(term(s) for s in subs)
    return (text if out is None else f"{text}->{term(out)}"), operands


def _label_index(s) -> int:
    if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 0 <= s < len(LETTERS):
        raise ValueError(f"einsum: a sublist label must be an int in [0, {len(LETTERS)}) or Ellipsis, got {s!r}")
    return int(s)


def _dims(eq: Equation, shapes) -> dict[str, int | None]:
    """The size of each label: numpy's broadcasting of size-1 dimensions; None where unknown."""
    dims: dict[str, int | None] = {}
    seen: dict[str, list] = {}
    for labels, shape in zip(eq.inputs, shapes, strict=True):
        for label, d in zip(labels, shape if shape is not None else [None] * len(labels), strict=True):
            seen.setdefault(label, []).append(d)
    for label, ds in seen.items():
        known = {d for d in ds if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(f"einsum {eq}: label {label!r} has the sizes {sorted(known)}")
        dims[label] = known.pop() if known else (1 if None not in ds else None)
    return dims


@functools.lru_cache(maxsize=None)
def _result_dtype(equation: str, ranks: tuple[int, ...], dtypes: tuple) -> np.dtype:
    # numpy's own check of the equation and its dtype rule, on arrays of ones (shapes of 1 broadcast)
    ops = [np.zeros((1,) * r, dt) for r, dt in zip(ranks, dtypes, strict=True)]
    return np.einsum(equation, *ops).dtype


def _einsum_infer(inputs, attrs):
    eq: Equation = attrs["equation"]
    for t in inputs:
        if not _dt.is_numeric(t.dtype):
            raise TypeError(f"einsum of a {t.dtype} tensor")
    dtype = _result_dtype(str(eq), tuple(len(s) for s in eq.inputs), tuple(t.dtype for t in inputs))
    dims = _dims(eq, [t.shape for t in inputs])
    return [(dtype, tuple(dims[c] for c in eq.output))]


register_op("Einsum", _einsum_infer)


def einsum_equation(eq: Equation, *operands, optimize=False, name: str | None = None) -> Tensor:
    """The einsum of a written-out equation (what gradients build)."""
    return make_op("Einsum", [convert(x) for x in operands], {"equation": eq, "optimize": optimize},
                   name=name).outputs[0]


def einsum(*args, dtype=None, casting: str = "safe", optimize=False, name: str | None = None) -> Tensor:
    """`np.einsum(subscripts, *operands)` or the sublist form; `dtype` and `casting` as numpy's."""
    subscripts, operands = (args[0], list(args[1:])) if isinstance(args[0], str) else from_sublists(args)
    xs = [convert(x) for x in operands]
    if not xs:
        raise ValueError("einsum needs at least one operand")
    if dtype is not None:
        dtype = _dt.as_dtype(dtype)
        for k, x in enumerate(xs):
            if not np.can_cast(x.dtype, dtype, casting):
                raise TypeError(f"einsum: cannot cast operand {k} from {x.dtype} to {dtype} with casting "
                                f"rule {casting!r}")
        xs = [x if x.dtype == dtype else cast(x, dtype) for x in xs]
    eq = parse(subscripts, [None if x.shape is None else len(x.shape) for x in xs])
    return einsum_equation(eq, *xs, optimize=optimize, name=name)


__all__ = ["einsum"]
