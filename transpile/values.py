"""Values that stand for variables without a value: never assigned, or assigned on some paths only."""
from __future__ import annotations


class Undefined:
    """The value of a local variable that no path has assigned yet.

    Converted code initialises such variables with `Undefined('x')` before an
    `if` or loop that may assign them; reading one (through `ag.ld`) raises the
    UnboundLocalError Python would.
    """

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<undefined {self.name}>"

    def error(self, where: str = "") -> Exception:
        at = f"{where}: " if where else ""
        return UnboundLocalError(f"{at}local variable '{self.name}' is used before it is assigned")


class UndefinedReturn(Undefined):
    """The return value of a function before a `return` has run.

    Unlike a user variable it may be undefined on some branches of a graph
    `cond`: the `do_return` flag guarantees it is only read where a return ran.
    """

    __slots__ = ()

    def __init__(self, name: str = "return value"):
        super().__init__(name)


class PartiallyDefined(Undefined):
    """A variable that a graph `cond` assigns in one branch only.

    It carries the assigned branch's value (for its dtype and shape: a loop
    that goes on to assign it in every iteration can still carry it) and the
    message to raise if it is read.
    """

    __slots__ = ("like", "message")

    def __init__(self, name: str, like, message: str):
        super().__init__(name)
        self.like = like
        self.message = message

    def error(self, where: str = "") -> Exception:
        at = f"{where}: " if where else ""
        return ConditionallyDefinedError(f"{at}{self.message}")


class ConditionallyDefinedError(NameError):
    """A variable is read after a graph `cond` that assigns it in one branch only."""


def one_sided_message(name: str, defined: str, meta_defined: dict, meta_other: dict, if_line, filename) -> str:
    """Names the variable, the `if` and both branch lines, and says how to fix it."""
    other = "false" if defined == "true" else "true"
    line = meta_defined.get("assigned", {}).get(name)
    assigned_at = f" (line {line})" if line else ""
    where_if = f" at {filename}:{if_line}" if filename and if_line else ""
    if other == "false" and not meta_other.get("has_else", True):
        missing = "and the `if` has no else branch"
    else:
        other_line = meta_other.get("line")
        missing = f"but not in the {other} branch" + (f" (line {other_line})" if other_line else "")
    return (f"variable '{name}' is assigned in the {defined} branch of the `if`{where_if}{assigned_at} {missing}; "
            f"its condition is a graph tensor, so after the if '{name}' has a value only when the graph "
            f"takes the {defined} branch. Give '{name}' a value before the if (e.g. `{name} = 0`, with the "
            f"dtype it needs) or assign it in both branches")
