"""Recorded loops and conds as ONNX `Loop` and `If`.

A while loop's frame (Enter -> Merge -> Switch(LoopCond) -> body -> NextIteration,
Exit) is one Loop node: no trip count (or `maximum_iterations` as the trip
count), its condition computed once on the initial values before the loop and
then at the end of every body on the next values, one carried value per loop
variable that the exported outputs need, the Exits bound to the Loop's final
values. A loop whose condition is false from the start runs zero times and
hands back the initial values, as the Exits do.

A cond's Switch/Merge pairs are one If node: each branch is a subgraph that
computes the Merges' inputs from its side (outer values are visible there), and
the Merges are bound to the If's outputs.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from graph import dtypes as _dt
from graph.control_flow.contexts import CondContext, CondState, WhileContext
from graph.node import Node, Tensor
from graph.onnx.builder import GraphBuilder, elem_type, tensor_type
from graph.onnx.lowering import ExportError, Scope
from graph.op_names import ENTER, NEXT_ITERATION

_INT64 = np.dtype(np.int64)
_INT32 = np.dtype(np.int32)
_BOOL = np.dtype(np.bool_)


class Walk(Protocol):
    """What lowering control flow asks of the exporter's walk (graph/onnx/exporter.py)."""

    def value(self, t: Tensor, scope: Scope) -> str:
        """The ONNX name of `t`'s value as seen from `scope` (computed there or in a scope around it)."""
        ...

    def is_needed(self, t: Tensor) -> bool:
        """Whether the exported outputs depend on `t`."""
        ...

    def value_type(self, t: Tensor):
        """The ONNX TypeProto of `t`'s values."""
        ...

    def decided(self, pred: Tensor) -> bool | None:
        """A cond predicate's value when the export can know it (it depends on no input), else None."""
        ...


def loop_variables(loop: WhileContext) -> list[tuple[Node, Node, Node]]:
    """(Enter, Merge, NextIteration) of each loop variable, read from the Merges' inputs."""
    out = []
    for merge in loop.merges:
        enter, nxt = merge.inputs[0].node, merge.inputs[1].node
        if enter.op != ENTER or nxt.op != NEXT_ITERATION:
            raise ExportError(merge, "this loop Merge is not fed by an Enter and a NextIteration")
        out.append((enter, merge, nxt))
    return out


def lower_loop(walk: Walk, loop: WhileContext, scope: Scope) -> None:
    """Writes `loop` as a Loop node into `scope` (the scope of the loop's outer context) and binds its Exits."""
    builder, names = scope.builder, scope.builder.names
    carried = [(enter, merge, nxt) for enter, merge, nxt in loop_variables(loop) if walk.is_needed(merge.outputs[0])]
    initial = [walk.value(enter.inputs[0], scope) for enter, _, _ in carried]
    types = [walk.value_type(merge.outputs[0]) for _, merge, _ in carried]

    # the condition on the initial values, before the loop (in the enclosing graph)
    first = Scope(loop, builder, scope)
    _bind(first, carried, initial)
    go = walk.value(loop.loop_cond.outputs[0], first)

    body = GraphBuilder(names, f"{loop.frame_name}/body")
    body.input(names.new(f"{loop.frame_name}/iteration"), tensor_type(_INT64, ()))
    body.input(names.new(f"{loop.frame_name}/condition"), tensor_type(_BOOL, ()))
    current = [names.new(merge.name) for _, merge, _ in carried]
    for name, t in zip(current, types, strict=True):
        body.input(name, t)
    inside = Scope(loop, body, scope)
    _bind(inside, carried, current)
    following = [walk.value(nxt.inputs[0], inside) for _, _, nxt in carried]
    # the condition on the next values, at the end of the body
    last = Scope(loop, body, scope)
    _bind(last, carried, following)
    body.output(walk.value(loop.loop_cond.outputs[0], last), tensor_type(_BOOL, ()), f"{loop.frame_name}/go_on")
    for (_, merge, _), value, t in zip(carried, following, types, strict=True):
        body.output(value, t, f"{merge.name}/next")

    trips = "" if loop.maximum_iterations is None else _trip_count(walk, loop, scope)
    finals = builder.add_with_bodies("Loop", [trips, go, *initial], loop.frame_name, len(carried),
                                     {"body": body})[1] if carried else []
    final_of = {id(merge): v for (_, merge, _), v in zip(carried, finals, strict=True)}
    for exit_ in loop.exits:
        merge = exit_.inputs[0].node.inputs[0].node  # Exit <- Switch <- Merge
        if id(merge) in final_of:
            scope.memo[id(exit_)] = (final_of[id(merge)],)


def _bind(scope: Scope, carried, values) -> None:
    for (_, merge, _), v in zip(carried, values, strict=True):
        scope.memo[id(merge)] = (v, None)


def _trip_count(walk: Walk, loop: WhileContext, scope: Scope) -> str:
    t = loop.maximum_iterations
    value = walk.value(t, scope)
    if t.dtype == _INT64:
        return value
    return scope.builder.add("Cast", [value], f"{loop.frame_name}/trip_count", to=elem_type(_INT64))[0]


class CondRecord:
    """The If node of one cond (or, for a cond the export decided, the scope of its taken branch).

    Outputs are added as they are needed: the cond's Merges, and values of a branch that a part of the
    graph outside the cond reads (a gradient cond reading the forward branch's values: it runs under
    the same predicate, so only the branch's own side needs the value; the other side gives a zero).
    """

    def __init__(self, walk: Walk, state: CondState, scope: Scope):
        self.state = state
        self.scope = scope
        first = state.merges[0] if state.merges else state.pred.node
        self.hint = first.name
        self.taken = walk.decided(state.pred)
        if self.taken is not None:
            ctx = _branch(state, int(self.taken), first)
            self.sides = {int(self.taken): Scope(ctx, scope.builder, scope)}
            self.node = None
            return
        names = scope.builder.names
        self.sides = {b: Scope(_branch(state, b, first), GraphBuilder(names, f"{self.hint}/{label}"), scope)
                      for b, label in ((1, "then"), (0, "else"))}
        self.node, _ = scope.builder.add_with_bodies(
            "If", [walk.value(state.pred, scope)], self.hint, 0,
            {"then_branch": self.sides[1].builder, "else_branch": self.sides[0].builder})

    def add_output(self, values: dict[int, str], type_proto, hint: str) -> str:
        """An output that is `values[b]` when branch b runs; the name to read it by in `scope`."""
        if self.node is None:
            return values[int(self.taken)]
        for b, side in self.sides.items():
            side.builder.output(values[b], type_proto, hint)
        out = self.scope.builder.names.new(hint)
        self.node.output.append(out)
        # Consumers read an Identity of each If output: onnxruntime inlines an If whose condition it
        # folds to a constant and renames the uses of its outputs, but not those inside Loop or If
        # bodies, which then miss their input
        return self.scope.builder.add("Identity", [out], hint)[0]


def cond_record(walk, state: CondState, scope: Scope) -> CondRecord:
    """The cond's record in `scope` (a scope of the cond's outer context), made on first use. A loop's
    condition is computed in two scopes (before the loop, at the end of its body): one If in each."""
    key = ("cond", id(state))
    record = scope.memo.get(key)
    if record is None:
        record = scope.memo[key] = CondRecord(walk, state, scope)
    return record


def lower_cond(walk: Walk, state: CondState, scope: Scope) -> None:
    """Binds the Merges of the cond of `state` in `scope` (the scope of its outer context) to If outputs."""
    record = cond_record(walk, state, scope)
    for m in state.merges:
        if id(m) in scope.memo or not (walk.is_needed(m.outputs[0]) or walk.is_needed(m.outputs[1])):
            continue
        inputs = {b: _input_from(m, side.context) for b, side in record.sides.items()}
        value = record.add_output({b: walk.value(m.inputs[k], record.sides[b]) for b, k in inputs.items()},
                                  walk.value_type(m.outputs[0]), m.name)
        index = None
        if walk.is_needed(m.outputs[1]):
            index = record.add_output({b: record.sides[b].builder.constant(np.asarray(k, _INT32), f"{m.name}/index")
                                       for b, k in inputs.items()}, tensor_type(_INT32, ()), f"{m.name}/value_index")
        scope.memo[id(m)] = (value, index)


def escape(walk: Walk, node: Node, port: int, record: CondRecord, branch: int, value: str) -> str:
    """`value`, output `port` of `node` computed in branch `branch` of `record`'s cond, as an If output."""
    if record.node is None:
        return value
    t = node.outputs[port]
    values = {b: value if b == branch else _zero_like(walk, t, side) for b, side in record.sides.items()}
    return record.add_output(values, _unshaped(walk.value_type(t)), f"{node.name}/out{port}")


def _zero_like(walk: Walk, t: Tensor, side: Scope) -> str:
    """A stand-in of `t`'s dtype for the branch that does not compute it (no consumer reads it there)."""
    if t.dtype is _dt.variant:
        elem = walk.value_type(t).sequence_type.elem_type.tensor_type.elem_type
        return side.builder.add("SequenceEmpty", [], f"{t.node.name}/absent", dtype=elem)[0]
    return side.builder.constant(np.zeros((), t.dtype), f"{t.node.name}/absent")


def _unshaped(type_proto):
    """The type without its shape: the two sides of an escaped value differ in shape."""
    out = type(type_proto)()
    out.CopyFrom(type_proto)
    if out.HasField("tensor_type"):
        out.tensor_type.ClearField("shape")
    return out


def _branch(state: CondState, branch: int, node: Node) -> CondContext:
    ctx = next((c for c in state.branches if c.branch == branch), None)
    if ctx is None:
        raise ExportError(node, f"its cond has no {'true' if branch else 'false'} branch recorded")
    return ctx


def _input_from(merge: Node, branch: CondContext) -> int:
    """Which input of a cond Merge its branch `branch` gives."""
    for k, t in enumerate(merge.inputs):
        if t.node.context is branch:
            return k
    raise ExportError(merge, f"no input of this Merge comes from {branch.describe()}")
