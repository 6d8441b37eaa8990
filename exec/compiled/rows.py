"""Loops over arrays without a TensorArray: the rows of the array itself, read by subscript.

`for x in xs` over an array lowers to a TensorArray unstacked from `xs` before the loop and read
at the loop's counter in each iteration (transpile/operators/iterables.py). Where the plan does
nothing else with that TensorArray (no write, no gradient, no stack: only reads and its size),
compiled code needs none of it: it binds the array, converted to the TensorArray's dtype and
checked against its static size as `TensorArrayUnstack` does, and reads `rows[i]`. What the loop
gets is what the TensorArray held, `list(rows)[i]`: a numpy scalar of the dtype for a vector, a
row view otherwise. Building the TensorArray cost ~3 µs a call (a numpy scalar made for every
row, read or not: a loop that breaks early paid for the whole array), and a read ~160 ns
against ~50 ns for the subscript.

A subscript wraps a negative index around where a TensorArray raises, so it is written only
where the index cannot be negative: a non-negative constant, an unsigned integer, or a loop
counter (exec/compiled/counters.py: from a non-negative constant up by a constant each
iteration). Any other index is read by `RowAt`, which raises for a negative index as a
TensorArray does. An index past the end raises
numpy's IndexError; like every kernel's error, it is reported naming the user's line and the
loop iterations.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from exec.compiled.folding import reads
from exec.compiled.structure import Call, Loop, Structured
from graph.node import Tensor

_UNSTACK, _NEW, _READ, _SIZE = "TensorArrayUnstack", "TensorArrayNew", "TensorArrayRead", "TensorArraySize"


@dataclass(eq=False)
class RowReads:
    """What `specialise` changed: the kernels of the nodes it rewrote, and the reads written as
    subscripts (node -> format string of its arguments, `{}[{}]`)."""
    kernels: dict = field(default_factory=dict)
    operators: dict = field(default_factory=dict)


def specialise(program: Structured, calls: list[Call], counters: dict, value: Callable) -> RowReads:
    """Rewrites in `program`'s steps (whose calls are `calls`) every TensorArray that is only unstacked
    from one value and read (see the module doc): its `TensorArrayNew` call goes, its `TensorArrayUnstack`
    call binds the rows, its reads subscript them. `counters` are the loops' counters (exec/compiled/
    counters.py), `value(t)` t's constant value or None."""
    producer = {_key(t): c for c in calls for t in c.outs if t is not None}
    readers: dict = {}
    for c in calls:
        for t in c.args:
            readers.setdefault(_key(t), []).append(c)
    counts = reads(program)
    out = RowReads()
    dropped: set = set()
    for c in calls:
        if c.node.op != _UNSTACK:
            continue
        new = producer.get(_key(c.args[0]))
        size = _fresh_size(new, value) if new is not None else None
        if size is None or counts.get(_key(c.args[0])) != 1:
            continue
        flow = c.outs[0]
        users = readers.get(_key(flow), []) if flow is not None else []
        if flow is None or counts.get(_key(flow)) != len(users) or not all(_only_reads(u, flow) for u in users):
            continue
        dropped.add(new.node)
        c.args = c.args[1:]
        out.kernels[c.node] = rows_kernel(new.node.attrs["spec"], size)
        for u in users:
            if u.node.op == _SIZE:
                out.kernels[u.node] = rows_count
            elif _never_negative(u.args[1], counters, value):
                out.operators[u.node] = "{}[{}]"
            else:
                out.kernels[u.node] = row_at
    _drop(program.steps, dropped)
    return out


# ----------------------------------------------------------------------------- the kernels

def rows_kernel(spec, size: int):
    """What the unstack of a fresh TensorArray of `spec` becomes: its value as the array's dtype
    (`np.asarray`, as `TensorArrayUnstack` converts it), checked against its `size` where that is
    fixed (not 0)."""
    def rows(value):
        dtype = spec.dtype
        value = np.asarray(value, dtype=dtype) if dtype is not None else np.asarray(value)
        n = value.shape[0]
        if size and size != n:
            raise ValueError(f"cannot unstack {n} elements into TensorArray {spec.name!r} of size {size}")
        return value
    rows.kernel_name = "Rows"
    return rows


def row_at(rows, index):
    """Row `index` of `rows`, as a TensorArray reads it: never from the end."""
    i = int(index)
    if i < 0:
        raise IndexError(f"read at negative index {i} of a loop's rows")
    return rows[i]


row_at.kernel_name = "RowAt"


def rows_count(rows):
    """The TensorArray's size: its number of rows."""
    return np.int64(len(rows))


rows_count.kernel_name = "RowCount"


# ----------------------------------------------------------------------------- the analysis

def _fresh_size(new: Call, value: Callable) -> int | None:
    """The size of the TensorArray `new` makes, where an unstack alone can fill it: not an accumulating
    (gradient) one, of a constant size that the unstack sets (0) or must match (a fixed size); else None."""
    if new.node.op != _NEW or new.node.attrs["accumulate"]:
        return None
    size = value(new.args[0])
    if not _constant_in(size, 0, None) or new.node.attrs["dynamic_size"] and size != 0:
        return None  # (a growable array made with rows to spare keeps them past the unstacked ones)
    return int(size)


def _only_reads(user: Call, flow: Tensor) -> bool:
    """Whether `user` reads the TensorArray `flow` as a read at an integer index or its size."""
    if user.node.op == _SIZE:
        return True
    return user.node.op == _READ and _key(user.args[0]) == _key(flow) and _key(user.args[1]) != _key(flow) and \
        getattr(user.args[1].dtype, "kind", None) in ("i", "u")


def _never_negative(index: Tensor, counters: dict, value: Callable) -> bool:
    return index.dtype.kind == "u" or _key(index) in counters or _constant_in(value(index), 0, None)


def _constant_in(value, low: int, high: int | None) -> bool:
    if value is None or np.ndim(value) != 0 or np.asarray(value).dtype.kind not in "iu":
        return False
    return low <= value and (high is None or value <= high)


def _key(t: Tensor) -> tuple:
    return (t.node.id, t.index)


def _drop(steps: list, nodes: set) -> None:
    steps[:] = [s for s in steps if not (isinstance(s, Call) and s.node in nodes)]
    for s in steps:
        if isinstance(s, Loop):
            for part in (s.head, s.tail, s.body):
                _drop(part, nodes)
