"""Values of variables that may have no value (never assigned, assigned on some paths, assigned in a
graph loop that may run zero times), reading them (`ld`), and assigning globals."""
from __future__ import annotations

import graph
from graph import nest
from graph.errors import user_location
from graph.node import Tensor
from transpile.operators.data_structures import TensorList
from transpile.operators.leaves import has_graph_values
from transpile.operators.staging import StagingError
from transpile.operators.trace_state import note_conditions, trace_state


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

    __slots__ = ("like", "message", "condition")

    def __init__(self, name: str, like, message: str, condition=None):
        super().__init__(name)
        self.like = like
        self.message = message
        self.condition = condition  # the predicate of the cond that assigns it in one branch

    def error(self, where: str = "") -> Exception:
        at = f"{where}: " if where else ""
        error = ConditionallyDefinedError(f"{at}{self.message}")
        if self.condition is not None:
            note_conditions(error, [self.condition])
        return error


class ConditionallyDefinedError(NameError):
    """A variable is read after a graph `cond` that assigns it in one branch only."""


def one_sided_message(name: str, defined: str, facts) -> str:
    """Names the variable, the `if` and both branch lines, and says how to fix it (`facts`: the `if`'s
    IfFacts)."""
    other = "false" if defined == "true" else "true"
    line = facts.branch(defined).assigned.get(name)
    assigned_at = f" (line {line})" if line else ""
    if other == "false" and not facts.has_else:
        missing = "and the `if` has no else branch"
    else:
        other_line = facts.branch(other).line
        missing = f"but not in the {other} branch" + (f" (line {other_line})" if other_line else "")
    return (f"variable '{name}' is assigned in the {defined} branch of the `if`{facts.at}{assigned_at} {missing}; "
            f"its condition is a graph tensor, so after the if '{name}' has a value only when the graph "
            f"takes the {defined} branch. Give '{name}' a value before the if (e.g. `{name} = 0`, with the "
            f"dtype it needs) or assign it in both branches")


class MaybeDefined:
    """A graph value that exists only if `defined` holds when the graph runs.

    The value of a variable first assigned inside a graph loop (which may run
    zero times). Reading it (`ag.ld`) adds a run-time check.
    """

    def __init__(self, name: str, value, defined: Tensor, where: str):
        self.name = name
        self.value = value
        self.defined = defined
        self.where = where

    def _flat_tensors(self):
        return nest.flatten(self.value) + [self.defined]

    def _with_flat_tensors(self, tensors):
        return MaybeDefined(self.name, nest.pack_as(self.value, tensors[:-1]), tensors[-1], self.where)

    def read(self):
        loc = user_location()
        at = f" at {loc}" if loc else ""
        what = f"variable '{self.name}'" if self.name.isidentifier() else self.name  # or an item: d['s']
        check = graph.assert_(self.defined, f"{what} is used{at} but was never assigned: {self.where}")
        with graph.control_dependencies([check]):
            return nest.map_structure(lambda t: graph.identity(t) if isinstance(t, Tensor) else t, self.value)

    def __repr__(self) -> str:
        return f"<maybe-defined {self.name}>"


def undefined_return() -> UndefinedReturn:
    """The return value before any `return` ran."""
    return UndefinedReturn()


def ld(value):
    """`value`, read from a variable that may not be assigned on every path.

    Raises what Python would (UnboundLocalError), or the error of a variable a
    graph `if` assigns in one branch only; a value from a graph loop that may
    have run zero times is checked when the graph runs.
    """
    if isinstance(value, Undefined):
        loc = user_location()
        raise value.error(str(loc) if loc else "")
    if isinstance(value, MaybeDefined):
        return value.read()
    return value


def to_global(names: str, value):
    """`global_name = value`. In a trace of a transpile.function the assignment is made again after each
    run, with the graph values the run computed (transpile/captured_state.py); elsewhere a graph value
    cannot outlive the graph being built, and is refused."""
    if trace_state().captures is not None:
        return value
    if has_graph_values(value) or isinstance(value, (MaybeDefined, TensorList)):
        raise StagingError(f"cannot assign a graph tensor to the global variable {names}: tensors of a converted "
                           "function exist only inside its graph. Return the value instead, or keep state in a "
                           "graph.Variable (assign it with `v.assign(...)`)")
    return value
