"""Reverse mode over one region: its units in reverse topological order, gradients summed per tensor."""
from __future__ import annotations

from grad.accumulate import Grads, conform
from grad.analysis import is_within, stacked_values, variable_of
from grad.mirrors import GradState
from grad.registry import GradOp, construct_gradient_rule, gradient_rule, is_differentiable
from graph.control_flow.contexts import CondState, WhileContext
from graph.control_flow.stack import stack_of
from graph.core import Node, Tensor
from graph.errors import GraphError


def backprop_region(state: GradState, region, seeds: dict[Tensor, Tensor], skip=None,
                    loop_between: WhileContext | None = None) -> tuple[Grads, dict]:
    """Propagates `seeds` (gradients of tensors of `region`) back through the region.

    Returns (Grads, {variable: [gradient contributions]}): the Grads hold the
    gradients of everything the region's units read, including the values that
    enter it (Switch outputs, loop constants, loop-variable inputs). `skip`: a
    unit left out (the one `gradients` is called inside, see grad.enclosing);
    `loop_between`: the loop body between the region and where the gradient is
    built, if any (its conds and loops cannot be differentiated from there).
    """
    grads = Grads()
    for t, g in seeds.items():
        grads.add(t, g)
    var_grads: dict = {}
    for unit in reversed(state.index.units(region)):
        if unit is skip:
            continue
        if isinstance(unit, Node):
            _node_grad(state, unit, grads, var_grads)
        else:
            if loop_between is not None and _receives_gradient(state, unit, grads):
                raise _outside_loop_error(unit, loop_between)
            _construct_grad(state, unit, grads, var_grads)
    for t in grads.keys():
        # A gradient for a value inside a nested cond (sent by a gradient cond that read it)
        # must have arrived before that cond was differentiated; losing it would be silent.
        ctx = state.value_context(t)
        if ctx is not region and is_within(ctx, region) and t not in grads.consumed:
            raise GraphError(f"gradients: internal error: the gradient of {t.name} arrived after "
                             f"{ctx.describe()} was differentiated")
    return grads, var_grads


def _receives_gradient(state: GradState, unit, grads: Grads) -> bool:
    """Whether a gradient reaches cond or loop `unit` through its outputs."""
    outs = [m.outputs[0] for m in state.index.merges_of(unit)] if isinstance(unit, CondState) \
        else [e.outputs[0] for e in unit.exits]
    return any(state.is_active(t) and grads.total(t) is not None for t in outs)


def _outside_loop_error(unit, loop: WhileContext) -> GraphError:
    what = f"the cond at {unit.source}" if isinstance(unit, CondState) else unit.describe()
    return GraphError(f"gradients: called inside {loop.describe()}, it would differentiate {what}, which ran "
                      "before the loop: its gradient would be built in every iteration from values it saved once. "
                      "Take the gradient outside the loop, or compute the value being differentiated inside the "
                      "loop body.")


def _construct_grad(state: GradState, unit, grads: Grads, var_grads: dict) -> None:
    rule = construct_gradient_rule(unit)
    if rule is None:
        raise GraphError(f"gradients: internal error: no gradient rule is registered for {type(unit).__name__} "
                         "(importing grad registers the control-flow rules)")
    rule(state, unit, grads, var_grads)


def _node_grad(state: GradState, n: Node, grads: Grads, var_grads: dict) -> None:
    if n.op in ("StackPush", "StackSplit"):
        gs = state.gradient_stacks.get(stack_of(n.inputs[0]))
        if gs is None or not any(state.is_active(v) for v in stacked_values(n)):
            return
        out_grads = []
    else:
        out_grads = [grads.total(t) if state.is_active(t) else None for t in n.outputs]
        if all(g is None for g in out_grads):
            return
        if n.op == "ReadVariable":
            var_grads.setdefault(variable_of(n), []).append(out_grads[0])
            return
    if not is_differentiable(n):
        return
    rule = gradient_rule(n.op)
    if rule is None:
        built = f", built at {n.source}" if n.source else ""
        raise GraphError(f"gradients: no gradient is defined for op {n.op} (node {n.name}{built}); wrap the "
                         "value in graph.stop_gradient if no gradient should flow through it", n.source)
    if len(out_grads) > 1 and n.op != "StackPop":  # a pop saves only the gradients there are
        out_grads = [g if g is not None else state.zeros_like(t) for g, t in zip(out_grads, n.outputs, strict=True)]
    op = GradOp(n, state)
    with n.graph.colocate_with(n):  # dist.place runs a node's gradient where the node runs
        in_grads = rule(op, *out_grads)
    if isinstance(in_grads, Tensor) or in_grads is None:
        in_grads = [in_grads]
    in_grads = list(in_grads)
    if len(in_grads) != len(n.inputs):
        raise GraphError(f"gradients: the gradient rule for {n.op} returned {len(in_grads)} gradients for "
                         f"{len(n.inputs)} inputs (node {n.name})")
    for t, g in zip(n.inputs, in_grads, strict=True):
        if g is not None and state.is_active(t):
            grads.add(t, conform(g, t, f"{n.op} (node {n.name})"))

