"""Loop counters: found once for the compiler, and kept as Python ints where nothing sees their type.

A *counter* is an int64 loop variable that starts at a non-negative constant and adds a constant
from 0 to `MAX_STEP` (2^16) each iteration: the index of every `for` over an array or a range.
It is never negative, so a row read at it needs no check (exec/compiled/rows.py), and it cannot
wrap around in any run that ends (2^47 iterations at least).

As a numpy scalar each step (`i + 1`) costs ~30 ns and a row read at it ~50; as a Python int,
~15 and ~35. A counter is one where its type cannot be seen: its step's value is read by the back
edge alone, and the counter itself only by its step, by row and TensorArray reads as their index,
and by comparisons with int64 constants whose values (Python bools then) are only tested
(exec/compiled/truth.py), written with the constant as a Python int (`i < 12`). Anything else
reading the counter (arithmetic, a kernel, a fetch, a loop exit, a comparison with a value that
is not constant) keeps it a numpy scalar.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from exec.compiled.structure import Call, Loop, tensor_key
from exec.compiled.truth import Tested
from graph.node import Tensor

MAX_STEP = 1 << 16
_COMPARISONS = {"Less": "<", "LessEqual": "<=", "Greater": ">", "GreaterEqual": ">=", "Equal": "==",
                "NotEqual": "!="}
_READS = frozenset({"TensorArrayRead"})


@dataclass(frozen=True, eq=False)
class Counter:
    """A loop variable `merge` starting at `start` and stepped by `step` (`merge + by`)."""
    merge: Tensor
    start: int
    step: Call
    by: int


@dataclass(eq=False)
class PythonInts:
    """The counters kept as Python ints: the literal each starts at (merge key -> source text, for
    codegen's `inits`), and the steps and comparisons written with Python ints (node -> format string)."""
    inits: dict = field(default_factory=dict)
    operators: dict = field(default_factory=dict)


def find_counters(steps: list, producer: dict, value: Callable) -> dict:
    """key -> Counter for the counters of the loops in `steps` (`producer`: key -> the Call computing it;
    `value(t)`: t's constant value or None)."""
    out = {}
    for loop in _loops(steps):
        for (merge, init), (_, nxt) in zip(loop.init, loop.back, strict=True):
            start, step = value(init), producer.get(tensor_key(nxt))
            if merge.dtype != np.int64 or not _int_in(start, 0, None) or step is None or step.node.op != "Add":
                continue
            by = _added(step, merge, value)
            if by is not None:
                out[tensor_key(merge)] = Counter(merge, int(start), step, by)
    return out


def python_ints(counters: dict, tested: Tested, row_reads: set, value: Callable) -> PythonInts:
    """The counters that can be Python ints (see the module doc); `row_reads` are the read nodes of
    exec/compiled/rows.py."""
    out = PythonInts()
    for key, c in counters.items():
        written = _written(c, key, tested, row_reads, value)
        if written is not None:
            out.inits[key] = str(c.start)
            out.operators.update(written)
    return out


def _written(c: Counter, key: tuple, tested: Tested, row_reads: set, value: Callable) -> dict | None:
    """The step and comparisons of counter `c` written with Python ints (node -> format string), or None
    where something sees the counter's type."""
    if tested.readers.get(tensor_key(c.step.node.outputs[0])) != [None]:
        return None  # the step's value is read by more than the back edge
    written = {c.step.node: "{0} + %d" % c.by if tensor_key(c.step.args[0]) == key else "%d + {1}" % c.by}
    for r in tested.readers.get(key, []):
        if r is c.step:
            continue
        if not isinstance(r, Call):
            return None
        if r.node in row_reads or r.node.op in _READS:
            if tensor_key(r.args[0]) == key or tensor_key(r.args[1]) != key:
                return None
            continue
        template = _comparison(r, key, tested, value)
        if template is None:
            return None
        written[r.node] = template
    return written


def _comparison(r: Call, key: tuple, tested: Tested, value: Callable) -> str | None:
    """How comparison `r` of the counter with a constant is written with Python ints (a format string), where
    only tests read the result; None otherwise. (Against an np.int64 value a Python int compares in ~30 ns,
    twice numpy's own: what its step saves, so such a counter stays a numpy scalar.)"""
    op = _COMPARISONS.get(r.node.op)
    if op is None or len(r.args) != 2 or any(t.dtype != np.int64 or t.shape != () for t in r.args):
        return None
    (j, other), = [(j, t) for j, t in enumerate(r.args) if tensor_key(t) != key] or [(None, None)]
    if other is None:
        return None
    constant = value(other)
    if constant is None or not tested.only_tested(tensor_key(r.node.outputs[0])):
        return None
    sides = ["{%d}" % (1 - j), str(int(constant))] if j == 1 else [str(int(constant)), "{%d}" % (1 - j)]
    return f"{sides[0]} {op} {sides[1]}"


def _added(step: Call, merge: Tensor, value: Callable) -> int | None:
    a, b = step.args
    for x, c in ((a, b), (b, a)):
        if tensor_key(x) == tensor_key(merge) and c.dtype == np.int64 and _int_in(value(c), 0, MAX_STEP):
            return int(value(c))
    return None


def _int_in(v, low: int, high: int | None) -> bool:
    if v is None or np.ndim(v) != 0 or np.asarray(v).dtype.kind not in "iu":
        return False
    return low <= v and (high is None or v <= high)


def _loops(steps: list):
    for s in steps:
        if isinstance(s, Loop):
            yield s
            for part in (s.head, s.tail, s.body):
                yield from _loops(part)
