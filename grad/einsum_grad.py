"""The gradient of an einsum, as einsums.

Operand k's gradient contracts the output's gradient with the other operands onto k's labels. Three
things need more than that one einsum: a label only operand k has (summed away in it alone) gets the
gradient copied along it (an einsum with ones); a label k repeats (a diagonal, a trace) gets the
gradient on that diagonal (an einsum with an identity matrix per repeat); and a size-1 dimension
numpy broadcast gets the gradient summed back to size 1 (or copied along another operand's).
"""
from __future__ import annotations

from grad.registry import register_gradient
from graph import shapes as _sh
from graph.ops import array as a
from graph.ops.creation import one_hot, ones, zeros
from graph.ops.creation import range as arange
from graph.ops.einsum import LETTERS, Equation, einsum_equation
from graph.ops.math import add, cast


@register_gradient("Einsum")
def _einsum_grad(op, g):
    eq: Equation = op.attrs["equation"]
    return [_operand_grad(op, eq, k, g) if op.needs(k) else None for k in range(len(eq.inputs))]


def _operand_grad(op, eq: Equation, k: int, g):
    labels = eq.inputs[k]
    others = [(eq.inputs[j], op.inputs[j]) for j in range(len(eq.inputs)) if j != k]
    unique = "".join(dict.fromkeys(labels))
    reached = set(eq.output).union(*(set(s) for s, _ in others))
    kept = "".join(c for c in unique if c in reached)
    contracted = Equation((eq.output, *(s for s, _ in others)), kept)
    out = einsum_equation(contracted, g, *(t for _, t in others))
    shape = op.input_shape(k)
    alone = [c for c in unique if c not in reached]
    if alone:  # copied along the labels only operand k has
        sizes = a.stack([shape[labels.index(c)] for c in alone])
        out = einsum_equation(Equation((kept, "".join(alone)), unique), out, ones(sizes, g.dtype))
    if len(unique) != len(labels):
        out = _on_diagonals(out, unique, labels, shape, g.dtype)
    x = op.fwd_inputs[k]
    if not (_sh.is_fully_defined(x.shape) and out.shape == x.shape):
        # numpy broadcast size-1 dimensions: of operand k (summed back to 1) or of another (copied along)
        out = a.reduce_to_shape(add(out, zeros(shape, out.dtype)), shape)
    return out if out.dtype == x.dtype else cast(out, x.dtype)


def _on_diagonals(out, unique: str, labels: str, shape, dtype):
    """`out` (labelled `unique`) placed on the diagonals that `labels` repeats: an identity matrix ties
    each repeat, relabelled with a letter of its own, to the label's first place."""
    spare = iter(c for c in reversed(LETTERS) if c not in labels)
    renamed, eyes = [], []
    for i, c in enumerate(labels):
        if c in labels[:i]:
            fresh = next(spare)
            renamed.append(fresh)
            n = shape[i]
            eyes.append((c + fresh, one_hot(arange(n), n, dtype=dtype)))
        else:
            renamed.append(c)
    eq = Equation((unique, *(s for s, _ in eyes)), "".join(renamed))
    return einsum_equation(eq, out, *(e for _, e in eyes))
