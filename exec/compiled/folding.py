"""Constant folding: the values a compiled program can compute once, when it is compiled.

A pure op (not stateful: no Variable, random stream, print or stack involved) whose inputs are
all constants gives the same value on every run, and so does an op that only looks at its
input's dtype and shape when that shape is known (`ones_like(x)`, `shape(x)`): gradients are
full of both (the seed `ones_like(loss) / n`, `shape(x)` for broadcasting's gradient). Each is
computed once, with the node's own kernel, and bound as a constant of the generated module.
A kernel that fails is left to fail at run time, where the error names the iteration.
"""
from __future__ import annotations

import numpy as np

from exec.compiled.structure import Call, Loop, Select, Structured
from exec.donation import FRESH_OPS
from graph import dtypes as _dt
from graph import shapes as _sh
from graph.node import Tensor
from graph.op_names import CONST
from graph.op_registry import get_opdef

# Ops whose result depends on their input's dtype and shape only.
SHAPE_ONLY = frozenset({"OnesLike", "ZerosLike", "Shape", "Size", "Rank"})
# Folded values past this many elements stay computed at run time (a constant of the module is
# held for the program's life).
MAX_ELEMENTS = 1 << 12


def fold_constants(steps: list, kernel_of, constant_of, fed: frozenset = frozenset()) -> dict:
    """(node id, port) -> value of every output the steps compute from constants alone; the
    folded Call steps are removed from `steps` (and from the loops in them). A fed Const (in `fed`,
    the fed nodes) is no constant: it takes the fed value, as in the dataflow executor."""
    values: dict = {}
    _fold(steps, values, kernel_of, lambda node: _NOT_CONSTANT if node in fed else constant_of(node))
    return values


def _fold(steps: list, values: dict, kernel_of, constant_of) -> None:
    kept = []
    for s in steps:
        if isinstance(s, Loop):
            for part in (s.head, s.tail, s.body):
                _fold(part, values, kernel_of, constant_of)
        elif isinstance(s, Call) and _fold_call(s, values, kernel_of, constant_of):
            continue
        kept.append(s)
    steps[:] = kept


def _fold_call(s: Call, values: dict, kernel_of, constant_of) -> bool:
    node = s.node
    if get_opdef(node.op).stateful or not node.outputs or any(
            t.dtype is _dt.variant for t in [*node.inputs, *node.outputs]):
        return False  # effects, and handles (TensorArrays, stacks): a new object per run
    if node.op in SHAPE_ONLY and len(node.inputs) == 1 and _known(node.inputs[0]):
        t = node.inputs[0]
        args = [np.zeros(t.shape, t.dtype)[()]]
    else:
        args = [_constant(t, values, constant_of) for t in s.args]
        if any(a is _NOT_CONSTANT for a in args):
            return False
    try:
        with np.errstate(all="raise"):
            out = kernel_of(node)(*args)
    except Exception:  # left to the run, which reports it as the executor would
        return False
    outs = [out] if len(node.outputs) == 1 else list(out)
    if any(np.size(v) > MAX_ELEMENTS for v in outs):
        return False
    if node.op in FRESH_OPS and any(np.ndim(v) for v in outs):
        return False  # a new buffer each run, which the plan may let a later kernel compute into
    for t, v in zip(node.outputs, outs, strict=True):
        if isinstance(v, np.ndarray):
            v.flags.writeable = False  # shared by every run
        values[(t.node.id, t.index)] = v
    return True


_NOT_CONSTANT = object()


def constant_lookup(folded: dict, constant_of, fed: frozenset):
    """`value(t)`: tensor t's value where the program has it as a constant (folded, or a Const that is
    not fed), else None."""
    def value(t: Tensor):
        got = folded.get((t.node.id, t.index))
        if got is None and t.node.op == CONST and t.node not in fed:
            got = constant_of(t.node)
        return got
    return value


def _constant(t: Tensor, values: dict, constant_of):
    got = values.get((t.node.id, t.index), _NOT_CONSTANT)
    if got is _NOT_CONSTANT and t.node.op == CONST:
        got = constant_of(t.node)
    return got


def _known(t: Tensor) -> bool:
    return t.dtype is not None and getattr(t.dtype, "kind", "V") in "biufc" and _sh.is_fully_defined(t.shape)


def drop_unread(program: Structured) -> None:
    """Removes the calls of pure kernels whose values nothing reads, once folding has taken their readers
    away (a loss whose only reader was its gradient's seed `ones_like(loss)`, folded to a constant), and
    then the calls that fed only those. Stateful kernels (Variables, random draws, prints, stacks) stay.
    The dataflow executor still runs such a kernel; the one difference is a pure kernel that would fail."""
    while True:
        counts = reads(program)
        if not _drop(program.steps, counts):
            return


def _drop(steps: list, counts: dict) -> bool:
    kept, dropped = [], False
    for s in steps:
        if isinstance(s, Loop):
            for part in (s.head, s.tail, s.body):
                dropped |= _drop(part, counts)
        elif isinstance(s, Call) and s.node.outputs and not get_opdef(s.node.op).stateful and not any(
                counts.get((t.node.id, t.index)) for t in s.node.outputs):
            dropped = True
            continue
        kept.append(s)
    steps[:] = kept
    return dropped


def reads(program: Structured) -> dict:
    """How many times each value (node id, port) is read: by steps, guards and fetches."""
    counts: dict = {}

    def read(t):
        key = (t.node.id, t.index)
        counts[key] = counts.get(key, 0) + 1

    def walk(steps):
        for s in steps:
            for key, _ in s.guard or ():
                counts[key] = counts.get(key, 0) + 1
            if isinstance(s, Call):
                for t in s.args:
                    read(t)
            elif isinstance(s, Select):
                read(s.source)
            elif not isinstance(s, Loop):  # a fused chain (exec/compiled/fusion.py): what its calls read
                walk(s.calls)
            else:
                for _, t in s.init + s.back:
                    read(t)
                for t in [s.pred] + s.exits:
                    read(t)
                walk(s.head)
                walk(s.tail)
                walk(s.body)
    walk(program.steps)
    for t, guard in program.results:
        read(t)
        for key, _ in guard or ():
            counts[key] = counts.get(key, 0) + 1
    return counts
