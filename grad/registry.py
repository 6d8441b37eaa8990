"""Gradient rules keyed by op name or by control-flow construct, and `GradOp`, what an op's rule gets.

An op's rule is `rule(op, *output_grads) -> input grads` (one entry per input, None
for "no gradient"); a single-input op may return the tensor alone. `op.inputs`
and `op.outputs` are the forward values, usable where the gradient is being
built: inside a gradient loop they come off a stack the forward loop pushed,
and only the values a rule actually reads are saved. A rule that needs only a
value's shape asks `op.input_shape(i)` (or `op.shape_of(t)`), which saves at
most the shape.

A construct's rule differentiates a whole cond or while loop, which the walk
over a region (grad.backprop) meets as one unit: `rule(state, unit, grads,
var_grads)` adds the gradients of what the construct reads to `grads` (and of
the Variables it reads to `var_grads`). The walk looks rules up here and never
names a construct's module; importing `grad` registers them all.
"""
from __future__ import annotations

from typing import Callable, Sequence

from graph.core import Tensor
from graph.op_names import EXIT
from graph.op_registry import get_opdef

_RULES: dict[str, Callable] = {}
_CONSTRUCT_RULES: dict[type, Callable] = {}


def register_gradient(*ops: str):
    """Decorator: `@register_gradient("Mul") def _mul_grad(op, grad): ...`."""
    def register(rule):
        for op in ops:
            if op in _RULES:
                raise ValueError(f"gradient for {op!r} registered twice")
            _RULES[op] = rule
        return rule
    return register


def gradient_rule(op: str) -> Callable | None:
    return _RULES.get(op)


def register_construct_gradient(kind: type):
    """Decorator: `@register_construct_gradient(CondState) def cond_grad(state, s, grads, var_grads): ...`."""
    def register(rule):
        if kind in _CONSTRUCT_RULES:
            raise ValueError(f"gradient for {kind.__name__} registered twice")
        _CONSTRUCT_RULES[kind] = rule
        return rule
    return register


def construct_gradient_rule(unit) -> Callable | None:
    """The rule for control-flow construct `unit` (a CondState or a WhileContext), by its type."""
    for kind in type(unit).__mro__:
        rule = _CONSTRUCT_RULES.get(kind)
        if rule is not None:
            return rule
    return None


def is_differentiable(node) -> bool:
    """Whether gradients flow through `node`: its op has a gradient, and it is not the Exit of a loop
    built with `back_prop=False` (no gradient flows through such a loop, as in TensorFlow)."""
    if cut_loop_exit(node):
        return False
    try:
        return get_opdef(node.op).differentiable
    except KeyError:
        return False


def cut_loop_exit(node) -> bool:
    """Whether `node` is an Exit of a while loop built with `back_prop=False`."""
    return node.op == EXIT and not getattr(node.inputs[0].node.frame, "back_prop", True)


class _Resolved(Sequence):
    """A node's inputs or outputs, each resolved into the backward context on first access."""

    __slots__ = ("_tensors", "_resolve", "_cache")

    def __init__(self, tensors, resolve):
        self._tensors = tensors
        self._resolve = resolve
        self._cache: dict[int, Tensor] = {}

    def __len__(self) -> int:
        return len(self._tensors)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        i = i % len(self._tensors) if i < 0 else i
        t = self._cache.get(i)
        if t is None:
            t = self._cache[i] = self._resolve(self._tensors[i])
        return t


class GradOp:
    """A forward node as its gradient rule sees it.

    `inputs` / `outputs`: forward values (resolved lazily, see the module
    docstring); `fwd_inputs` / `fwd_outputs`: the forward tensors themselves, for
    static dtype and shape only; `attrs`, `op`, `name`, `node`.
    """

    def __init__(self, node, state):
        self.node = node
        self._state = state
        self.inputs = _Resolved(node.inputs, state.resolve)
        self.outputs = _Resolved(node.outputs, state.resolve)

    @property
    def op(self) -> str:
        return self.node.op

    @property
    def attrs(self) -> dict:
        return self.node.attrs

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def fwd_inputs(self) -> list[Tensor]:
        return self.node.inputs

    @property
    def fwd_outputs(self) -> tuple[Tensor, ...]:
        return self.node.outputs

    @property
    def state(self):
        """The `gradients` call building this gradient (for rules that save values themselves)."""
        return self._state

    def needs(self, i: int) -> bool:
        """Whether input i's gradient is wanted (it is on a path from some x to some y)."""
        return self._state.is_active(self.node.inputs[i])

    def outside(self, fn, *ts: Tensor):
        """`fn(*ts)` built where the (resolved) values `ts` live, e.g. a transpose of a weight
        computed once outside the gradient loop instead of in every iteration."""
        return self._state.outside(fn, *ts)

    def summed_after_loop(self, i: int):
        """For input i a constant of the loop being reversed whose gradient adds up over rows and is
        computed after the gradient loop, the record its contributions go to (grad.loop_sums)."""
        return self._state.row_sums.get(self.node.inputs[i])

    def input_shape(self, i: int) -> Tensor:
        """Input i's shape as an int64 vector (a constant when static; never saves the value)."""
        return self._state.resolve_shape(self.node.inputs[i])

    def output_shape(self, i: int = 0) -> Tensor:
        return self._state.resolve_shape(self.node.outputs[i])

    def shape_of(self, t: Tensor) -> Tensor:
        """The shape of forward tensor `t` (an input or output of this node)."""
        return self._state.resolve_shape(t)

    def zeros_like_input(self, i: int) -> Tensor:
        return self._state.zeros_like(self.node.inputs[i])

    def zeros_like_output(self, i: int) -> Tensor:
        return self._state.zeros_like(self.node.outputs[i])
