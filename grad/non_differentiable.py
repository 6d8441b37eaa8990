"""An x that the ys depend on only through ops without a gradient: named, not silently zero.

`argmax`, comparisons (`x > 0`, and so the predicate of a cond or a loop), casts
to integers and integer arithmetic have no gradient: a gradient flowing back
stops there. When *every* path from an x to the ys stops at such an op, the ys
do depend on x, but its gradient is zero (or None with `unconnected="none"`),
which is easy to mistake for a bug or a trained-out weight. `gradients` then
warns (`NonDifferentiableWarning`) or, with `non_differentiable="error"`, raises,
naming the ops where the paths stop and the user's lines that built them.
Peers differ here: TF returns None as for an unconnected x, JAX zeros (float0
for integer inputs), PyTorch raises for an output that needs no gradient.

Not reported: an x that the ys do not depend on at all (`unconnected` decides),
paths cut on purpose by `stop_gradient` or by a loop built with `back_prop=False`, and ops that read only a value's shape
(`shape`, `size`, `zeros_like`): those carry no dependence on the values.
"""
from __future__ import annotations

import warnings

from grad.analysis import ForwardIndex, Target, differentiable_dtype, origin
from grad.registry import cut_loop_exit, is_differentiable
from graph.core import Node, Tensor
from graph.errors import GraphError, SourceLocation
from graph.op_names import EXIT, MERGE, NEXT_ITERATION, STOP_GRADIENT

# cut on purpose, or read only the shape of their input
_NOT_REPORTED = frozenset({STOP_GRADIENT, "Shape", "Size", "Rank", "ZerosLike", "OnesLike", "TensorArraySize"})

MODES = ("warn", "error", "ignore")


class NonDifferentiableWarning(UserWarning):
    """The ys depend on an x only through ops without a gradient: its gradient is zero (or None)."""


def blocking_ops(index: ForwardIndex, target: Target, ys: list[Tensor]) -> list[Node]:
    """The ops at which the differentiable paths from `target` to `ys` stop, where the ys depend on
    their outputs (empty when the ys do not depend on the target)."""
    needed = _depended_on(ys)
    reach = index.forward_reach(list(target.sources))
    out: dict[int, Node] = {}
    for t in reach:
        for n in (use.node for use in index.forward.uses(t)):
            if id(n) in out or n.op in _NOT_REPORTED or cut_loop_exit(n) or not any(o in needed for o in n.outputs):
                continue
            if not is_differentiable(n) or not any(differentiable_dtype(o) for o in n.outputs):
                out[id(n)] = n
    return sorted(out.values(), key=lambda n: n.id)


def report(mode: str, target: Target, ops: list[Node], unconnected: str, where: SourceLocation | None) -> None:
    """Warns or raises (by `mode`) that `target`'s gradient stops at `ops`."""
    if mode == "ignore" or not ops:
        return
    shown = ", ".join(f"{n.op} (node {n.name}" + (f", built at {n.source})" if n.source else ")") for n in ops[:3])
    more = f" and {len(ops) - 3} more" if len(ops) > 3 else ""
    value = "None" if unconnected == "none" else "zero"
    if mode == "error":
        value = f"would be {value}"
    message = (f"gradients: the ys depend on {target.describe()} only through ops that have no gradient: "
               f"{shown}{more}; its gradient is {value}. Differentiate through a smooth stand-in (softmax "
               "weights instead of argmax, a sigmoid instead of a comparison), cut the path on purpose with "
               "graph.stop_gradient, or pass non_differentiable='ignore'.")
    if mode == "error":
        raise GraphError(message, where)
    if where is not None:
        warnings.warn_explicit(message, NonDifferentiableWarning, where.filename, where.lineno)
    else:
        warnings.warn(message, NonDifferentiableWarning, stacklevel=4)


def _depended_on(ys: list[Tensor]) -> set[Tensor]:
    """Every tensor the ys' values depend on through data edges, whatever the ops and dtypes."""
    seen = set(ys)
    work = list(ys)
    while work:
        for i in _value_inputs(work.pop().node):
            if i not in seen:
                seen.add(i)
                work.append(i)
    return seen


def _value_inputs(n: Node) -> list[Tensor]:
    """The inputs `n`'s value depends on. A value that a cond passes through both branches, or a loop
    through every iteration, does not depend on the predicate, though its Merge reads the Switches."""
    if n.op in (MERGE, EXIT):
        sources = {id(v): v for v in (_passed_through(t) for t in (n.inputs if n.op == MERGE else n.outputs))}
        if len(sources) == 1 and not any(v is o for v in sources.values() for o in n.outputs):
            return list(sources.values())
    return list(n.inputs)


def _passed_through(t: Tensor) -> Tensor:
    """The value `t` is, through Identity, cond captures and loop variables no iteration changes."""
    while True:
        t = origin(t)
        n = t.node
        if n.op != EXIT:
            return t
        switch = n.inputs[0].node
        merge = switch.inputs[0].node
        back = merge.inputs[1].node if merge.op == MERGE and len(merge.inputs) == 2 else None
        if back is None or back.op != NEXT_ITERATION or origin(back.inputs[0]) is not switch.outputs[1]:
            return t
        t = merge.inputs[0]
