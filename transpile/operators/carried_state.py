"""What a graph cond's branches or a graph loop's body change besides the variables the converters
carry: numpy arrays written in place (MutableArrays, from the journal of writes) and attributes of the
objects of the Python state the trace reads (from snapshots of those objects).

Such changes are side effects on Python objects: traced once for both
branches of a cond, or once for every iteration of a loop, they would leave
the objects with the last branch's or the first iteration's values. So a cond
traces each branch from the state before it and returns the values the
branches leave in those places as extra outputs; a loop carries them as
extra loop variables. They are found while the construct is traced: the
construct is then built again, carrying them from then on (`settle`).
"""
from __future__ import annotations

from transpile.operators.arrays import (
    MutableArray,
    frozen,
    journal_mark,
    undo_writes,
    written_since,
)
from transpile.operators.leaves import convert_leaf, describe, is_convertible
from transpile.operators.staging import StagingError
from transpile.operators.trace_state import trace_state

_ABSENT = object()


class _ArraySlot:
    """The contents of a MutableArray."""

    def __init__(self, array: MutableArray):
        self.array = array

    def same(self, other) -> bool:
        return isinstance(other, _ArraySlot) and other.array is self.array

    def get(self):
        return self.array.value

    def set(self, value) -> None:
        self.array.value = value

    def tensor(self):
        return self.array.tensor()

    def write(self, value) -> None:
        self.array.write(value)


class _AttributeSlot:
    """An attribute of an object of the captured state (in its `__dict__`, as the trace reads it)."""

    def __init__(self, obj, name: str):
        self.obj, self.name = obj, name

    def same(self, other) -> bool:
        return isinstance(other, _AttributeSlot) and other.obj is self.obj and other.name == self.name

    def get(self):
        return vars(self.obj).get(self.name, _ABSENT)

    def set(self, value) -> None:
        if value is _ABSENT:
            vars(self.obj).pop(self.name, None)
        else:
            vars(self.obj)[self.name] = value

    def tensor(self):
        value = self.get()
        if isinstance(value, MutableArray):
            return value.tensor()
        if value is _ABSENT or value is None or not is_convertible(value):
            raise StagingError(
                f"attribute '{self.name}' of a {type(self.obj).__name__} object is changed in a graph branch or "
                f"loop, and is {'unset' if value is _ABSENT else describe(value)} there: graph conds and loops "
                "can only carry tensors and numbers. Give it a numeric value before the branch or loop")
        return convert_leaf(value)

    def write(self, value) -> None:
        vars(self.obj)[self.name] = value


def _objects() -> list:
    """The objects of the captured state of the trace being built (none outside a transpile.function)."""
    captures = trace_state().captures
    return [] if captures is None else captures.walked_objects()


class CarriedWrites:
    """The places made before a graph cond or loop that its branches or body write (see the module
    docstring): learned while tracing them, carried as extra outputs or loop variables."""

    def __init__(self):
        self.slots: list = []
        self.found: list = []   # places written that the construct does not carry yet

    def settle(self) -> bool:
        """Carries the places found written from now on; whether there were any (then the construct is
        built again)."""
        if not self.found:
            return False
        self.slots.extend(self.found)
        self.found = []
        return True

    def contents(self) -> tuple:
        """The places' values now, as tensors (before the construct: a loop's initial values)."""
        return tuple(slot.tensor() for slot in self.slots)

    def traced(self, fn, inside=None):
        """(`fn()`, the places' values after it), for `fn` a branch or loop body being traced.

        It starts from the values before the construct, or from `inside` (a
        loop's variables); the values before are put back after it, so that
        the other branch (or the code after the construct) starts from them.
        """
        before = [slot.get() for slot in self.slots]
        mark = journal_mark()
        objects = _objects()
        snapshot = [(obj, dict(vars(obj))) for obj in objects]
        if inside is not None:
            for slot, value in zip(self.slots, inside, strict=True):
                slot.set(value)
        try:
            out = frozen(fn())
            new = [_ArraySlot(a) for a in written_since(mark)]
            for obj, was in snapshot:
                now = vars(obj)
                new.extend(_AttributeSlot(obj, name) for name in {*now, *was}
                           if now.get(name, _ABSENT) is not was.get(name, _ABSENT))
            self.found.extend(slot for slot in new
                              if not any(slot.same(known) for known in (*self.slots, *self.found)))
            return out, self.contents()
        finally:
            undo_writes(mark)
            for obj, was in snapshot:
                attributes = vars(obj)
                attributes.clear()
                attributes.update(was)
            for slot, value in zip(self.slots, before, strict=True):
                slot.set(value)

    def write(self, values) -> None:
        """Gives the places the construct's outputs for them."""
        for slot, value in zip(self.slots, values, strict=True):
            slot.write(value)
