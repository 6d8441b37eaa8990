"""`if` statements and conditional expressions: Python's when the condition is a Python value,
a graph cond when it is a tensor."""
from __future__ import annotations

import dis
from dataclasses import dataclass, field

import graph
from graph.errors import SourceLocation
from graph.node import Tensor
from transpile import conversion
from transpile.errors import UncatchableError
from transpile.operators.arrays import MutableArray, link_on_path
from transpile.operators.carried_state import CarriedWrites
from transpile.operators.carry import DROPPED, AsLists, WithGraphLists
from transpile.operators.cond_outputs import Raised, as_is, encode, plan, restore
from transpile.operators.data_structures import list_truth, stacked_list
from transpile.operators.encoding import (
    fresh_containers,
    pack_result,
    replace_at,
    spec_of,
    stand_in,
    unpack_outputs,
    value_at,
    zeros_like_spec,
)
from transpile.operators.facts import NO_IF_FACTS, IfFacts
from transpile.operators.leaves import is_tensor, mark_weak
from transpile.operators.staging import Rebuild, StagingError, anchor_effects, build_until_settled, predicate
from transpile.operators.trace_state import note_conditions, trace_state
from transpile.operators.uncatchable import refuse_if_caught
from transpile.operators.values import ConditionallyDefinedError, Undefined


def _user_raise_location(exc: BaseException) -> SourceLocation | None:
    """Where a `raise` statement in converted code raised `exc`, or None for any other error."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None or not conversion.is_converted_code(last.tb_frame.f_code):
        return None
    code = last.tb_frame.f_code
    op = code.co_code[last.tb_lasti] if 0 <= last.tb_lasti < len(code.co_code) else None
    if op is None or dis.opname[op] not in ("RAISE_VARARGS", "RERAISE"):
        return None
    return SourceLocation(code.co_filename, last.tb_lineno, code.co_name)


def _staged_raise(raised: Raised) -> None:
    """Fails the run, when the current branch is taken, with the exception it raises."""
    g = graph.get_default_graph()
    msg = f"{type(raised.exc).__name__}: {raised.exc}"
    g.create_node("Assert", [graph.constant(False)], {"message": msg}, name="raise", source=raised.location)


def graph_cond(pred: Tensor, true_fn, false_fn, state, names, what: str, facts: IfFacts = NO_IF_FACTS):
    """Builds a graph cond for `if pred: state = true_fn(*state) else: state = false_fn(*state)`.

    Both branches are traced; their values are compared variable by variable
    (`cond_outputs.plan`). When the true branch, traced first, was encoded
    differently from what the false branch shows is needed (a placeholder, a
    dtype), the cond is rolled back and built again with that knowledge. So is
    a cond whose branches write numpy arrays made before it (MutableArrays): it
    is built again with their contents as extra outputs.
    """
    tracer = CondTracer(pred, true_fn, false_fn, tuple(state), tuple(names), what, facts)
    conditions = trace_state().conditions
    conditions.append(pred)
    try:
        return tracer.run()
    except (StagingError, ConditionallyDefinedError) as e:
        note_conditions(e, reversed(conditions))
        raise
    except UncatchableError as e:  # (an error an `except` of the user's must not catch: the same)
        note_conditions(e.error, reversed(conditions))
        raise
    finally:
        conditions.pop()


@dataclass
class _Branches:
    """One attempt at the cond: what each branch gave, the modes the true branch was encoded in, the plans."""

    raw: dict = field(default_factory=dict)        # "true"/"false" -> the branch's values (or a Raised)
    used: dict = field(default_factory=dict)       # variable index -> the mode the true branch used
    plans: list = field(default_factory=list)      # per variable: cond_outputs.CondPlan
    wanted: dict = field(default_factory=dict)     # variable index -> the true branch's mode, where it differs
    # variables whose array before the cond a branch gave back on some of its own paths only (an inner
    # `if` that bound a new array on one path): the array after is the one before on paths the graph's
    # predicates tell only inside that branch
    partly_before: set = field(default_factory=set)


class CondTracer:
    """Builds one graph cond (see graph_cond)."""

    def __init__(self, pred, true_fn, false_fn, state: tuple, names: tuple, what: str, facts: IfFacts):
        self.pred, self.true_fn, self.false_fn = pred, true_fn, false_fn
        self.state, self.names, self.what, self.facts = state, names, what, facts
        self.hints: dict = {}  # variable index -> the true branch's mode, learned from the false branch
        self.written = CarriedWrites()  # arrays made before the cond that the branches write: extra outputs

    def run(self):
        anchor_effects(graph.get_default_graph())
        return build_until_settled(self._build, self._adjust,
                                   f"could not build the graph cond for {self.what}: its branches kept changing")

    def _adjust(self, changes: dict) -> None:
        if self.written.settle() and not changes:
            return
        self.hints = dict(changes)

    def _build(self):
        b = _Branches()
        merged = graph.cond(self.pred, lambda: self._with_writes(lambda: self._true_outputs(b)),
                            lambda: self._with_writes(lambda: self._false_outputs(b)))
        if b.wanted or self.written.found:
            return Rebuild(b.wanted)
        self.written.write(merged[len(self.names):])
        return pack_result([self._result(b, i, merged[i]) for i in range(len(self.names))], self.names)

    def _with_writes(self, outputs):
        out, contents = self.written.traced(outputs)
        return out + contents

    def _run(self, b: _Branches, side: str, fn):
        try:
            outs = unpack_outputs(fn(*fresh_containers(self.state)), self.names)
        except Exception as exc:
            location = _user_raise_location(exc)
            refuse_if_caught(exc, f"only when the graph takes that branch of {self.what}", location)
            if location is None:
                raise
            outs = Raised(exc, location)
            _staged_raise(outs)
        b.raw[side] = outs
        if not isinstance(outs, Raised):  # (read before the branch's links are undone with its writes)
            b.partly_before |= {i for i, (v, before) in enumerate(zip(outs, self.state)) if _partly(v, before)}
        return outs

    def _true_outputs(self, b: _Branches) -> tuple:
        outs = self._run(b, "true", self.true_fn)
        result = []
        for i, name in enumerate(self.names):
            value = outs if isinstance(outs, Raised) else outs[i]
            mode = self.hints.get(i) or (DROPPED if isinstance(outs, Raised) else as_is(value))
            b.used[i] = mode
            result.append(encode(value, mode, name))
        return tuple(result)

    def _false_outputs(self, b: _Branches) -> tuple:
        """The false branch's outputs; where the plans want the true branch encoded otherwise, placeholders
        like its outputs (the cond is built to completion, then again)."""
        outs = self._run(b, "false", self.false_fn)
        t_outs = b.raw["true"]
        for i, name in enumerate(self.names):
            t = t_outs if isinstance(t_outs, Raised) else t_outs[i]
            f = outs if isinstance(outs, Raised) else outs[i]
            b.plans.append(plan(t, f, name, self.facts))
        if any(p.true.key() != b.used[i].key() for i, p in enumerate(b.plans)):
            b.wanted = {i: p.true for i, p in enumerate(b.plans)}
            return tuple(encode(_value_of(t_outs, i), b.used[i], name) if b.used[i] == DROPPED
                         else zeros_like_spec(spec_of(encode(_value_of(t_outs, i), b.used[i], name)), name, exact=True)
                         for i, name in enumerate(self.names))
        return tuple(encode(_value_of(outs, i), p.false, self.names[i]) for i, p in enumerate(b.plans))

    def _result(self, b: _Branches, i: int, merged):
        """Variable `i`'s value after the cond, from the merged output."""
        p = b.plans[i]
        if p.true == DROPPED:
            return p.kept
        t_outs, f_outs = b.raw["true"], b.raw["false"]
        original = t_outs[i] if not isinstance(t_outs, Raised) else f_outs[i]
        true_mode, false_mode, resized = p.true, p.false, ()
        if isinstance(true_mode, WithGraphLists):  # lists one branch resized: GraphLists in the merged value
            true_mode, false_mode, resized = true_mode.inner, false_mode.inner, true_mode.lists
        for r in resized:
            original = replace_at(original, r.path, lambda _, r=r: value_at(merged, r.path))
        lists = true_mode if isinstance(true_mode, AsLists) else false_mode if isinstance(false_mode, AsLists) \
            else None
        if lists is None:
            value = restore(merged, original)
            if not isinstance(f_outs, Raised) and not isinstance(t_outs, Raised):
                mark_weak(value, t_outs[i], f_outs[i])   # Python numbers on both sides
                before = self.state[i] if i < len(self.state) else None  # (a conditional expression: none)
                value = self._array_after(value, before, t_outs[i], f_outs[i], i in b.partly_before)
            return value
        if isinstance(original, Undefined) and not isinstance(f_outs, Raised):
            original = f_outs[i]
        value = restore(merged, stand_in(original, lists.lists))
        for path in lists.lists:
            if path.stack_after:  # outside its loops, a built list is a list of its stacked items
                value = replace_at(value, path.path, stacked_list)
        return value


    def _array_after(self, value, before, t, f, partly: bool):
        """A variable that names a numpy array on both paths names one after the cond (writes into it and
        views of it are numpy's). Where one branch left the array it had before and the other bound a new
        one, it is that earlier array on the first path only: their writes reach each other on that path.
        Where a branch left it on some of its own paths only, the path is not told here: writes that the
        earlier array's other names would see are refused (arrays.SameWhen)."""
        if not isinstance(value, Tensor) or not (isinstance(t, MutableArray) or isinstance(f, MutableArray)):
            return value
        array = MutableArray(value)
        if partly:
            link_on_path(array, before, None, self.what)
        elif isinstance(before, MutableArray) and (t is before) != (f is before):
            when = self.pred if t is before else graph.logical_not(self.pred)
            link_on_path(array, before, when, self.what)
        return array


def _partly(value, before) -> bool:
    """Whether `value`, a branch's array, is the array `before` on some of the branch's paths only."""
    return isinstance(before, MutableArray) and isinstance(value, MutableArray) and value is not before \
        and any(link.array is before.root for link in value.root.same_when)


def _value_of(outs, i: int):
    return outs if isinstance(outs, Raised) else outs[i]


def if_stmt(test, if_true, if_false, state=(), names=(), facts: IfFacts = NO_IF_FACTS):
    """Runs one branch, and returns the variables it assigns::

        if test:
            state = if_true(*state)
        else:
            state = if_false(*state)

    A graph-tensor `test` builds a graph cond: both branches are traced and the
    graph runs one of them.
    """
    test = list_truth(test)
    if not is_tensor(test):
        out = if_true(*state) if test else if_false(*state)
        return out
    facts = facts.in_file(if_true)
    what = f"the `if`{facts.at}" if facts.at else "an `if`"
    return graph_cond(predicate(test, what), if_true, if_false, tuple(state), tuple(names), what, facts)


def if_exp(test, if_true, if_false):
    """`if_true() if test else if_false()`; only the chosen side runs."""
    test = list_truth(test)
    if not is_tensor(test):
        return if_true() if test else if_false()
    return graph_cond(predicate(test, "a conditional expression"), if_true, if_false, (),
                      ("<the value of the conditional expression>",),
                      "a conditional expression")
