"""What the converters know about a loop or an `if` that the operators need to name things: lines,
the variables a body appends to or resizes, the names that hold the function's return value.

The converters write these records into the generated call (`ag.for_stmt(..., ag.LoopFacts(...))`),
so what the operators are told is in the code `transpile.to_code` prints, and nothing is looked up
by code object at run time. A record's file is its generated function's: the converted code is
compiled with the user's file name.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True, slots=True)
class BranchFacts:
    """One branch of an `if`: where it starts, and the line where each name is first assigned in it."""

    line: int
    assigned: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IfFacts:
    """An `if` statement. Lines are 0 where unknown (a conditional expression, `and` / `or`); the
    operator adds the file (`in_file`)."""

    line: int
    true: BranchFacts
    false: BranchFacts
    has_else: bool = True
    return_vars: tuple[str, ...] = ()
    filename: str | None = None

    def in_file(self, fn) -> IfFacts:
        """These facts with the file of generated function `fn`."""
        return replace(self, filename=filename_of(fn))

    @property
    def at(self) -> str:
        """" at file:line" of the `if`, or nothing where unknown."""
        return f" at {self.filename}:{self.line}" if self.filename and self.line else ""

    def branch(self, side: str) -> BranchFacts:
        return self.true if side == "true" else self.false


@dataclass(frozen=True, slots=True)
class LoopFacts:
    """A `while` or `for` loop: its line, its body's first line, the lists its body appends to or
    resizes (the converter sees `l.append(x)`, `l.pop()`), the names that hold the return value."""

    line: int
    body_line: int
    appends: tuple[str, ...] = ()
    resizes: tuple[str, ...] = ()
    return_vars: tuple[str, ...] = ()


NO_FACTS = LoopFacts(0, 0)   # for loops that are not the user's (helpers that build loops)
NO_IF_FACTS = IfFacts(0, BranchFacts(0), BranchFacts(0))


def variable_label(name: str, return_vars: tuple[str, ...] = ()) -> str:
    """A carried variable as an error message names it."""
    if name in return_vars:
        return "the return value"
    if name.startswith("<"):  # the value of an expression, e.g. "<the conditional expression>"
        return name[1:-1]
    return f"variable '{name}'"


def filename_of(fn) -> str | None:
    """The user's file of a generated function (None for other callables)."""
    code = getattr(fn, "__code__", None)
    return code.co_filename if code is not None else None


__all__ = ["BranchFacts", "IfFacts", "LoopFacts", "NO_FACTS", "NO_IF_FACTS", "filename_of", "variable_label"]
