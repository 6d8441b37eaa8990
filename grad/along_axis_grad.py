"""Gradients of the ops along one axis (graph/ops/along_axis.py).

A cumulative sum's gradient is the cumulative sum from the other end; a cumulative product's is
CumprodGrad (exact at zeros); a sort moves each gradient back to where its value came from (the
inverse of the sorting permutation, a Permute), and so does a Permute.
"""
from __future__ import annotations

from grad.registry import register_gradient
from graph.ops import along_axis as aa
from graph.ops.math import cast


def _as_input(op, g):
    """`g` in the dtype of the forward input (a cumsum with dtype= may compute in a wider one)."""
    x = op.fwd_inputs[0]
    return g if g.dtype == x.dtype else cast(g, x.dtype)


@register_gradient("Cumsum")
def _cumsum_grad(op, g):
    """Each input adds to every output at or after it: the gradient is the cumsum of g from the end."""
    return _as_input(op, aa.cumsum(g, op.attrs["axis"], reverse=not op.attrs["reverse"]))


@register_gradient("Cumprod")
def _cumprod_grad(op, g):
    """CumprodGrad: products of the other factors, by a recurrence along the axis (no division)."""
    x = op.inputs[0]
    return _as_input(op, aa.cumprod_grad(cast(x, g.dtype) if x.dtype != g.dtype else x, g, op.attrs["axis"],
                                         op.attrs["reverse"]))


def _inverse(perm, axis: int):
    """The permutation that undoes `perm` along `axis` (each line's argsort)."""
    return aa.argsort(perm, axis, kind="stable")


@register_gradient("Sort")
def _sort_grad(op, g):
    """The gradient of each sorted value goes back to its place in the input (ties: in input order)."""
    axis = op.attrs["axis"]
    order = aa.argsort(op.inputs[0], axis, kind="stable")
    return aa.permute(g, _inverse(order, axis), axis)


@register_gradient("Permute")
def _permute_grad(op, g):
    """A permutation's gradient is the inverse permutation; the indices have none."""
    axis = op.attrs["axis"]
    return [aa.permute(g, _inverse(op.inputs[1], axis), axis), None]
