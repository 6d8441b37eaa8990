"""Reverse mode over one region: its units in reverse topological order, gradients summed per tensor."""
from __future__ import annotations

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.control_flow.contexts import CondState
from graph.control_flow.stack import pushed_values, stack_of
from graph.core import Node, Tensor
from graph.errors import GraphError
from graph.ops._util import convert
from grad.analysis import is_within
from grad.registry import GradOp, gradient_rule, is_differentiable


class Grads:
    """Gradient contributions per forward tensor, summed when first asked for."""

    def __init__(self):
        self._parts: dict[Tensor, list[Tensor]] = {}
        self.consumed: set[Tensor] = set()  # values inside nested conds whose gradients were passed in

    def add(self, t: Tensor, g: Tensor) -> None:
        self._parts.setdefault(t, []).append(g)

    def keys(self) -> list[Tensor]:
        return list(self._parts)

    def total(self, *ts: Tensor) -> Tensor | None:
        """The sum of the contributions to `ts` (several tensors: e.g. a loop variable's
        body input and its Merge), or None when there are none."""
        parts = [g for t in ts for g in self._parts.get(t, ())]
        if not parts:
            return None
        out = add_n(parts)
        if len(ts) == 1:
            self._parts[ts[0]] = [out]
        return out


def add_n(parts: list[Tensor]) -> Tensor:
    """Sum of gradient contributions; for TensorArray gradient flows (one accumulating
    array), the first flow once all the others have happened."""
    if len(parts) == 1:
        return parts[0]
    if parts[0].dtype is _dt.variant:
        return _join(parts)
    from grad.array_grad import combine_slice_gradients
    from graph.ops.math import add
    parts = combine_slice_gradients(parts)
    while len(parts) > 1:  # a balanced tree keeps the rounding symmetric and the depth small
        parts = [add(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    return parts[0]


def _join(parts: list[Tensor]) -> Tensor:
    g = parts[0].graph
    return g.create_node("Identity", [parts[0]], name="gradient_flow", control_inputs=parts[1:]).outputs[0]


def conform(g, t: Tensor, what) -> Tensor:
    """Checks a gradient against its forward tensor and gives it the forward tensor's static shape."""
    g = convert(g)
    if t.dtype is _dt.variant or g.dtype is _dt.variant:
        if t.dtype is not g.dtype:
            raise GraphError(f"gradients: the gradient rule for {what} returned a {g.dtype} gradient for "
                             f"{t.dtype} input {t.name}")
        return g
    if g.dtype != t.dtype:
        raise GraphError(f"gradients: the gradient rule for {what} returned a {g.dtype} gradient for "
                         f"{t.dtype} input {t.name}")
    if not _sh.compatible(g.shape, t.shape):
        raise GraphError(f"gradients: the gradient rule for {what} returned a gradient of shape "
                         f"{_sh.format_shape(g.shape)} for input {t.name} of shape {_sh.format_shape(t.shape)}")
    if t.shape is not None and g.shape != t.shape:
        # Same value, better static knowledge: gradient loop variables then keep the
        # forward loop's shapes and their loops never need re-tracing.
        g.shape = t.shape if g.shape is None else tuple(a if a is not None else b
                                                         for a, b in zip(t.shape, g.shape, strict=True))
    return g


def backprop_region(state, region, seeds: dict[Tensor, Tensor]):
    """Propagates `seeds` (gradients of tensors of `region`) back through the region.

    Returns (Grads, {variable: [gradient contributions]}): the Grads hold the
    gradients of everything the region's units read, including the values that
    enter it (Switch outputs, loop constants, loop-variable inputs).
    """
    from grad import control_flow_grad
    grads = Grads()
    for t, g in seeds.items():
        grads.add(t, g)
    var_grads: dict = {}
    for unit in reversed(state.index.units(region)):
        if isinstance(unit, Node):
            _node_grad(state, unit, grads, var_grads)
        elif isinstance(unit, CondState):
            control_flow_grad.cond_grad(state, unit, grads, var_grads)
        else:
            control_flow_grad.while_grad(state, unit, grads, var_grads)
    for t in grads.keys():
        # A gradient for a value inside a nested cond (sent by a gradient cond that read it)
        # must have arrived before that cond was differentiated; losing it would be silent.
        ctx = state.value_context(t)
        if ctx is not region and is_within(ctx, region) and t not in grads.consumed:
            raise GraphError(f"gradients: internal error: the gradient of {t.name} arrived after "
                             f"{ctx.describe()} was differentiated")
    return grads, var_grads


def _node_grad(state, n: Node, grads: Grads, var_grads: dict) -> None:
    if n.op == "StackPush":
        gs = state.gradient_stacks.get(stack_of(n.inputs[0]))
        if gs is None or not any(state.is_active(v) for v in pushed_values(n)):
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


def variable_of(read: Node):
    """The Variable object a ReadVariable node reads."""
    for key in ("variable", "var"):
        v = read.attrs.get(key)
        if v is not None:
            return v
    raise GraphError(f"gradients: cannot find the variable read by {read.name}")
