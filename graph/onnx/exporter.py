"""The export walk: computes the requested outputs node by node, demand-driven, into nested ONNX graphs.

Like the reference interpreter (exec/reference.py), it follows the recorded
cond and loop structure instead of Switch/Merge dead-value propagation: a
node is computed in the scope of its own control-flow context (the root graph,
a branch of an If, a Loop body), found by walking out from where it is needed,
and memoised there. A cond Merge computes its whole cond as one If, a loop Exit
its whole loop as one Loop (graph/onnx/control_flow.py); control edges carry
no value and are not exported (effects are either refused or dropped).
"""
from __future__ import annotations

import sys

import numpy as np

from graph import dtypes as _dt
from graph.control_flow.contexts import CondContext, WhileContext
from graph.core import Graph
from graph.index import in_graph_order, upstream
from graph.node import Node, Tensor
from graph.onnx import control_flow
from graph.onnx.builder import GraphBuilder, Names, evaluate, sequence_type, tensor_type
from graph.onnx.indexing import INDEXING
from graph.onnx.lowering import Emitter, ExportError, Scope
from graph.onnx.numpy_ops import NUMPY_LOWERINGS
from graph.onnx.ops import LOWERINGS
from graph.onnx.sequences import TensorArrays
from graph.onnx.ufunc_ops import UFUNC_LOWERINGS
from graph.op_names import (
    CONST,
    ENTER,
    EXIT,
    IDENTITY,
    LOOP_COND,
    MERGE,
    NEXT_ITERATION,
    NO_OP,
    PLACEHOLDER,
    STOP_GRADIENT,
    SWITCH,
)
from graph.op_registry import get_opdef

# effects an exported model cannot have, left out when asked: prints, asserts, a loop's iteration limit
# (a run fails beyond it); what they pass through (a Print's or a limit check's first input) stays
DROPPABLE = frozenset({"Print", "Assert", "CheckIterationLimit"})
_PLUMBING = frozenset({ENTER, EXIT, IDENTITY, NEXT_ITERATION, SWITCH, MERGE, LOOP_COND, STOP_GRADIENT})


class Walk:
    """One export of `graph`: the ONNX values of the tensors it is asked for, written into `root`."""

    def __init__(self, graph: Graph, inputs: dict[int, str], outputs: list[Tensor], output_names: list[str],
                 drop=(), flat: bool = False):
        self.graph = graph
        self.flat = flat  # every node in the root graph: to evaluate constants, whatever context they live in
        self.names = Names()
        for name in [*inputs.values(), *output_names]:
            self.names.reserve(name)
        self.root = Scope(None, GraphBuilder(self.names, "main"), None)
        self.inputs = inputs  # id(Placeholder node) -> ONNX input name
        self.drop = frozenset(drop)
        self.lowerings = {**LOWERINGS, **NUMPY_LOWERINGS, **UFUNC_LOWERINGS, **INDEXING, **TensorArrays(graph).lowerings}
        self.cond_of: dict[int, object] = {}   # id(cond Merge) -> its CondState
        self.loop_of: dict[int, WhileContext] = {}  # id(loop Merge) -> its loop
        for ctx in _contexts(graph):
            if isinstance(ctx, CondContext):
                for m in ctx.state.merges:
                    self.cond_of[id(m)] = ctx.state
            elif isinstance(ctx, WhileContext):
                for m in ctx.merges:
                    self.loop_of[id(m)] = ctx
        self.needed = self._needed(outputs)
        self._initializers: dict[int, str] = {}
        self._decided: dict[int, bool | None] = {}

    # -- what the outputs depend on -------------------------------------------------------------
    def _needed(self, outputs: list[Tensor]) -> set[tuple[int, int]]:
        """(id(node), port) of every tensor the outputs depend on through data edges; a loop Merge needs
        its loop's condition too (the Merge's value is the Loop's to compute)."""
        ports, seen, todo = set(), set(), list(outputs)
        while todo:
            t = todo.pop()
            ports.add((id(t.node), t.index))
            n = t.node
            if id(n) in seen:
                continue
            seen.add(id(n))
            todo.extend(n.inputs)
            loop = self.loop_of.get(id(n))
            if loop is not None:
                todo.append(loop.loop_cond.outputs[0])
        return ports

    def is_needed(self, t: Tensor) -> bool:
        return (id(t.node), t.index) in self.needed

    # -- values --------------------------------------------------------------------------------
    def value(self, t: Tensor, scope: Scope) -> str:
        if not self.flat and scope.owner(t.node.context) is None:
            return self._escaped(t, scope)
        name = self.outputs(t.node, scope)[t.index]
        if name is None:
            raise ExportError(t.node, f"its output {t.index} has no exported value")
        return name

    def outputs(self, node: Node, scope: Scope) -> tuple:
        home = self.root if self.flat else scope.owner(node.context)
        if home is None:
            where = node.context.describe() if node.context is not None else "the top level"
            raise ExportError(node, f"its value, computed in {where}, is used outside it")
        got = home.memo.get(id(node))
        if got is None:
            got = home.memo[id(node)] = self._compute(node, home)
        return got

    def _escaped(self, t: Tensor, scope: Scope) -> str:
        """`t`, computed in cond branches that `scope` is not in, carried out of each (innermost first) as an
        If output: what a gradient cond reads from the forward cond's branch under the same predicate."""
        levels, ctx = [], t.node.context
        while scope.owner(ctx) is None:
            if not isinstance(ctx, CondContext):
                raise ExportError(t.node, f"its value, computed in {ctx.describe()}, is used outside it")
            levels.append(ctx)
            ctx = ctx.outer
        name = self.value(t, self._scope_of(levels[0], scope))
        for ctx in levels:
            record = control_flow.cond_record(self, ctx.state, self._scope_of(ctx.outer, scope))
            key = ("escaped", id(t.node), t.index)
            if key not in record.scope.memo:
                record.scope.memo[key] = control_flow.escape(self, t.node, t.index, record, ctx.branch, name)
            name = record.scope.memo[key]
        return name

    def _scope_of(self, ctx, scope: Scope) -> Scope:
        """Where the nodes of branch `ctx` are computed, seen from `scope`: a scope around it, or the side
        of the cond's record (made now if the cond was not exported yet)."""
        found = scope.owner(ctx)
        if found is not None:
            return found
        record = control_flow.cond_record(self, ctx.state, self._scope_of(ctx.outer, scope))
        side = record.sides.get(ctx.branch)
        if side is None:
            raise ExportError(ctx.state.pred.node, f"{ctx.describe()} is never taken, yet its values are used")
        return side

    def decided(self, pred: Tensor) -> bool | None:
        """The value of a cond's predicate when it depends on no input (only on constants and Variables,
        which the model holds as initializers), else None.

        onnxruntime folds an If on such a predicate into the taken branch, and then loses the values
        that Loop and If bodies in that branch read from it: the export decides these conds itself.
        """
        key = id(pred)
        if key not in self._decided:
            self._decided[key] = None
            if _depends_on_constants_only(pred):
                try:
                    probe = Walk(self.graph, {}, [pred], ["value"], flat=True)
                    self._decided[key] = bool(evaluate(probe.run([pred], ["value"]))[0])
                except ExportError:
                    pass
        return self._decided[key]

    def value_type(self, t: Tensor):
        if t.dtype is _dt.variant:
            return sequence_type(self._tensor_array_dtype(t))
        return tensor_type(t.dtype, t.shape)

    def _tensor_array_dtype(self, t: Tensor):
        seen = set()
        while id(t.node) not in seen:
            seen.add(id(t.node))
            spec = t.node.attrs.get("spec")
            if spec is not None:
                return spec.dtype if spec.dtype is not None else np.dtype(np.float64)
            if t.node.op not in _PLUMBING:
                break
            t = t.node.inputs[0]
        raise ExportError(t.node, "this value is neither a tensor nor a TensorArray")

    # -- one node ------------------------------------------------------------------------------
    def _compute(self, node: Node, scope: Scope) -> tuple:
        op = node.op
        if op == MERGE:
            state = self.cond_of.get(id(node))
            if state is None:
                what = "a loop's Merge is only computed by its loop" if id(node) in self.loop_of else \
                    "this Merge belongs to no recorded cond or loop"
                raise ExportError(node, what)
            control_flow.lower_cond(self, state, scope)
            return scope.memo[id(node)]
        if op == EXIT:
            control_flow.lower_loop(self, node.inputs[0].node.frame, scope)
            return scope.memo[id(node)]
        if op == SWITCH:
            # both sides carry the value; each is only used inside its side's branch (or loop body)
            v = self.value(node.inputs[0], scope)
            return (v, v)
        if op in (IDENTITY, STOP_GRADIENT, LOOP_COND):
            return (self.value(node.inputs[0], scope),)
        if op == ENTER:
            if not node.attrs["is_constant"]:
                raise ExportError(node, "a loop variable's initial value is only used by its loop's Merge")
            return (self.value(node.inputs[0], scope),)
        if op == NO_OP:
            return ()
        if op == PLACEHOLDER:
            name = self.inputs.get(id(node))
            if name is None:
                raise ExportError(node, "the outputs depend on this placeholder, which is not among the inputs "
                                        "of the export")
            return (name,)
        if op == CONST:
            return (Emitter(scope.builder, node).const(node.attrs["value"]),)
        if op == "ReadVariable":
            return (self._initializer(node.attrs["variable"]),)
        if op in DROPPABLE:
            if op not in self.drop:
                raise ExportError(node, f"{op} has no ONNX form; export with drop=({op!r},) to leave it out")
            return (self.value(node.inputs[0], scope),) if node.outputs else ()
        lower = self.lowerings.get(op)
        if lower is None:
            raise ExportError(node, "the op has no ONNX lowering")
        ins = [self.value(t, scope) for t in node.inputs]
        return tuple(lower(Emitter(scope.builder, node), node, ins))

    def _initializer(self, variable) -> str:
        """The Variable's current value, as an initializer of the main graph (shared by every read)."""
        name = self._initializers.get(id(variable))
        if name is None:
            name = self._initializers[id(variable)] = self.root.builder.initializer(
                np.asarray(variable.value), variable.name)
        return name

    def run(self, outputs: list[Tensor], output_names: list[str]) -> GraphBuilder:
        """Computes `outputs` into the root graph, as model outputs named `output_names`."""
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20000))  # the walk recurses along the graph's longest path
        try:
            for t, name in zip(outputs, output_names, strict=True):
                if t.dtype is _dt.variant:
                    raise ExportError(t.node, "a TensorArray cannot be an output: stack it first")
                if t.shape is None:
                    raise ExportError(t.node, "an output of an ONNX model needs a known rank")
                self.root.builder.output(self.value(t, self.root), tensor_type(t.dtype, t.shape, name), name,
                                         exact_name=name)
        finally:
            sys.setrecursionlimit(limit)
        return self.root.builder


def check_effects(effects, drop) -> None:
    """Raises ExportError for what the nodes in `effects` wait for (data and control edges) that an exported
    model would not do: prints and asserts not in `drop`, Variable assignments."""
    for n in in_graph_order(upstream(effects)):
        if n.op in DROPPABLE and n.op not in drop:
            raise ExportError(n, f"{n.op} has no ONNX form; export with drop=({n.op!r},) to leave it out")
        if n.op in _ASSIGNMENTS:
            raise ExportError(n, "an exported model has no state: it reads Variables (as initializers) but cannot "
                                 "assign them")


_ASSIGNMENTS = frozenset({"AssignVariable", "AssignAddVariable", "AssignSubVariable", "AssignItemVariable"})
# ops whose value does not depend on anything fed or computed in another iteration
_NOT_CONSTANT = frozenset({PLACEHOLDER, MERGE, EXIT, NEXT_ITERATION})


def _depends_on_constants_only(t: Tensor) -> bool:
    return not any(_varies(n) for n in upstream([t.node], follow=_value_sources))


def _varies(n: Node) -> bool:
    """Whether `n`'s value may differ between runs or iterations: fed, carried, or from state."""
    if n.op in _NOT_CONSTANT or n.op == ENTER and not n.attrs["is_constant"]:
        return True
    return get_opdef(n.op).stateful and n.op != "ReadVariable"


def _value_sources(n: Node) -> list[Node]:
    # a Switch's predicate only decides where its value goes: inside a branch, the value is its input's
    return [t.node for t in (n.inputs[:1] if n.op == SWITCH else n.inputs)]


def _contexts(graph: Graph):
    """Every control-flow context of the graph's nodes (and the contexts around them), once."""
    seen = set()
    for n in graph.nodes:
        ctx = n.context
        while ctx is not None and id(ctx) not in seen:
            seen.add(id(ctx))
            yield ctx
            if isinstance(ctx, CondContext):
                for other in ctx.state.branches:
                    if id(other) not in seen:
                        seen.add(id(other))
                        yield other
            ctx = ctx.outer
