"""Logical ops whose value is only ever tested, written as Python's `not`, `and` and `or`.

A loop with a `break` tests a flag every iteration: `while i < n and not broke` lowers to
`LogicalAnd(Less(i, n), LogicalNot(broke))`, and the operators compiled code writes for them on
numpy bools (`a & b`, `a ^ TRUE`) cost ~30 ns each. Where a logical op's value is read by
nothing but truth tests (an `if`'s guard, a loop's predicate, or another such op or cond
result), its type can never be seen, only its truth: `not a` and `a and b` give the same truth
for ~10 ns (they may give a Python bool, or return one of their operands as it is). A value that
anything else reads (a kernel, a loop variable, a fetch) keeps numpy's operator and its np.bool_.
"""
from __future__ import annotations

from exec.compiled.structure import Call, Loop, Select, Structured, tensor_key
from graph.node import Tensor

_WRITTEN = {"LogicalNot": "not {}", "LogicalAnd": "({} and {})", "LogicalOr": "({} or {})"}
_TESTED = "tested"  # a read that is a truth test: a guard or a loop predicate


class Tested:
    """Which values of a program only truth tests read: `logical` are the logical ops written with Python's
    operators (node -> format string of its arguments, for codegen's `operators`); `only_tested(key)` says
    it of any value."""

    def __init__(self, program: Structured):
        self.readers = readers(program)
        candidates: dict = {}  # key -> the Call or Select computing a scalar bool that may be tested only
        for s in _steps(program.steps):
            if isinstance(s, Call) and s.node.op in _WRITTEN and _scalar_bools([*s.node.inputs, *s.node.outputs]):
                candidates[tensor_key(s.node.outputs[0])] = s
            elif isinstance(s, Select) and s.index_out is None and _scalar_bools([s.out]):
                candidates[tensor_key(s.out)] = s
        self.kept = candidates
        while True:  # drop the candidates that something other than a test or a kept candidate reads
            dropped = [key for key in candidates if not self.only_tested(key)]
            if not dropped:
                break
            for key in dropped:
                del candidates[key]
        self.logical = {s.node: _WRITTEN[s.node.op] for s in candidates.values() if isinstance(s, Call)}

    def only_tested(self, key: tuple) -> bool:
        """Whether value `key` is read, at least once, by truth tests and the logical ops and cond results
        that only they read."""
        return all(r == _TESTED or (isinstance(r, Select) or isinstance(r, Call) and r.node.op in _WRITTEN) and
                   _key_of(r) in self.kept for r in self.readers.get(key, [None]))


def readers(program: Structured) -> dict:
    """key -> what reads that value, each read once: _TESTED (a guard or a loop predicate), the Call or
    Select reading it, or None (a loop's variables and exits, a fetch)."""
    out: dict = {}

    def read(t: Tensor, by) -> None:
        out.setdefault(tensor_key(t), []).append(by)

    def tested(guard) -> None:
        for key, _ in guard or ():
            read(program.predicates[key], _TESTED)

    for s in _steps(program.steps):
        tested(s.guard)
        if isinstance(s, Call):
            for t in s.args:
                read(t, s)
        elif isinstance(s, Select):
            read(s.source, s)
        elif isinstance(s, Loop):
            for _, t in s.init + s.back:
                read(t, None)
            for t in s.exits:
                read(t, None)
            read(s.pred, _TESTED)
    for t, guard in program.results:
        read(t, None)
        tested(guard)
    return out


def _key_of(step) -> tuple:
    return tensor_key(step.node.outputs[0] if isinstance(step, Call) else step.out)


def _scalar_bools(tensors: list) -> bool:
    return all(t.shape == () and getattr(t.dtype, "kind", None) == "b" for t in tensors)


def _steps(steps: list):
    """Every step, loops' parts included (a loop before its parts); a fused chain's calls."""
    for s in steps:
        if isinstance(s, Loop):
            yield s
            for part in (s.head, s.tail, s.body):
                yield from _steps(part)
        elif isinstance(s, (Call, Select)):
            yield s
        else:
            yield from s.calls
