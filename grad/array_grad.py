"""Gradients of shape, array and indexing ops (graph/ops/array.py, graph/ops/indexing.py).

Shape-moving ops move the gradient back (reshape to the input's shape, the
inverse permutation, split what was concatenated); ops that copy values
(broadcast, tile, gather, indexing) sum the gradient over the copies. Only
shapes of forward values are read, except by Select and indexing (their
masks and indices).
"""
from __future__ import annotations

import numpy as np

from grad.math_grad import unbroadcast
from grad.registry import register_gradient
from graph.core import make_op
from graph.ops import array as a
from graph.ops import math as m
from graph.ops import padding
from graph.ops.conversion import constant
from graph.ops.creation import zeros, zeros_like
from graph.ops.indexing import IndexSpec, Slice, get_item_grad, parse_index
from graph.ops.reduce import reduce_sum


def _shape_only(op):
    return [None] * (len(op.fwd_inputs) - 1)


@register_gradient("Reshape", "ExpandDims", "Squeeze")
def _reshape_grad(op, g):
    """Reshape, expand_dims and squeeze only relabel elements: reshape the gradient back."""
    return [a.reshape(g, op.input_shape(0))] + _shape_only(op)


@register_gradient("Transpose")
def _transpose_grad(op, g):
    """Transpose's gradient is the transpose by the inverse permutation."""
    perm = op.attrs["perm"]
    if perm is None:
        return a.transpose(g)
    return a.transpose(g, tuple(int(i) for i in np.argsort(perm)))


@register_gradient("BroadcastTo")
def _broadcast_to_grad(op, g):
    """broadcast_to copies values: the gradient is summed back to the input's shape (SumToShape)."""
    return [a.reduce_to_shape(g, op.input_shape(0)), None]


@register_gradient("SumToShape")
def _sum_to_shape_grad(op, g):
    """SumToShape (reduce_to_shape) sums copies: its gradient broadcasts back (BroadcastTo)."""
    return [a.broadcast_to(g, op.input_shape(0)), None]


@register_gradient("Tile")
def _tile_grad(op, g):
    """Tile's gradient sums the tiles: g reshaped to (reps0, d0, reps1, d1, ...) summed over the reps axes."""
    x = op.fwd_inputs[0]
    reps_t = op.fwd_inputs[1]
    nr = reps_t.shape[0] if reps_t.shape is not None else None
    if x.ndim is None or nr is None:
        raise ValueError("the gradient of tile needs an input of known rank and reps of known length")
    nd = max(x.ndim, nr)
    one = constant(np.ones(1, np.int64))
    dims = a.concat([one] * (nd - x.ndim) + [op.input_shape(0)]) if nd > x.ndim else op.input_shape(0)
    reps = a.concat([one] * (nd - nr) + [op.inputs[1]]) if nd > nr else op.inputs[1]
    split = a.reshape(a.stack([m.cast(reps, np.int64), dims], axis=1), [-1])
    summed = reduce_sum(a.reshape(g, split), axis=tuple(range(0, 2 * nd, 2)))
    return [a.reshape(summed, op.input_shape(0)), None]


@register_gradient("Concat")
def _concat_grad(op, g):
    """Concat's gradient is the gradient split at the inputs' sizes along the axis."""
    axis = op.attrs["axis"]
    ins = op.fwd_inputs
    sizes = [t.shape[axis] if t.shape is not None else None for t in ins]
    if all(s is not None for s in sizes):
        return a.split(g, list(np.cumsum(sizes)[:-1]), axis=axis)
    out, start = [], constant(np.int64(0))
    lead = (slice(None),) * axis
    for i in range(len(ins)):
        stop = m.add(start, op.input_shape(i)[axis])
        out.append(g[lead + (slice(start, stop),)] if op.needs(i) else None)
        start = stop
    return out


@register_gradient("Stack")
def _stack_grad(op, g):
    """Stack's gradient is unstack."""
    return a.unstack(g, num=len(op.fwd_inputs), axis=op.attrs["axis"])


@register_gradient("Unstack")
def _unstack_grad(op, *gs):
    """Unstack's gradient is stack."""
    return a.stack(list(gs), axis=op.attrs["axis"])


@register_gradient("Split")
def _split_grad(op, *gs):
    """Split's gradient is concat."""
    return a.concat(list(gs), axis=op.attrs["axis"])


@register_gradient("Gather")
def _gather_grad(op, g):
    """Gather's gradient adds g into zeros of the params' shape at the indices (repeats accumulate)."""
    axis = op.attrs["axis"]
    spec, dyn = parse_index((slice(None),) * axis + (op.inputs[1],))
    return [get_item_grad(g, op.input_shape(0), spec, dyn), None]


@register_gradient("Select")
def _select_grad(op, g):
    """where(c, x, y): the gradient goes to x where c holds and to y elsewhere (each reduced to its shape)."""
    c = op.inputs[0]
    zeros = zeros_like(g)
    gx = unbroadcast(op, 1, a.where(c, g, zeros)) if op.needs(1) else None
    gy = unbroadcast(op, 2, a.where(c, zeros, g)) if op.needs(2) else None
    return [None, gx, gy]


@register_gradient("Fill")
def _fill_grad(op, g):
    """fill(shape, v): every element is v, so v's gradient is the sum of g."""
    return [None, reduce_sum(g)]


@register_gradient("GetItem")
def _getitem_grad(op, g):
    """x[index]'s gradient is g added into zeros of x's shape at the index (GetItemGrad)."""
    dyn = [op.inputs[i] for i in range(1, len(op.fwd_inputs))]
    return [get_item_grad(g, op.input_shape(0), op.attrs["index"], dyn)] + [None] * len(dyn)


@register_gradient("GetItemGrad")
def _getitem_grad_grad(op, g):
    """GetItemGrad is linear in its gradient input: its own gradient reads g back at the index (GetItem)."""
    dyn = [op.inputs[i] for i in range(2, len(op.fwd_inputs))]
    out = a.reduce_to_shape(_getitem(g, op.attrs["index"], dyn), op.input_shape(0)) if op.needs(0) else None
    return [out, None] + [None] * len(dyn)


@register_gradient("ScatterSlices")
def _scatter_slices_grad(op, g):
    """Linear in each gradient input: each reads g back at its index."""
    return [None] + [a.reduce_to_shape(_getitem(g, ix, []), op.input_shape(k + 1)) if op.needs(k + 1) else None
                     for k, ix in enumerate(op.attrs["indices"])]


@register_gradient("SetItem")
def _setitem_grad(op, g):
    """x with x[index] = v: x's gradient is g with the assigned places zeroed; v's is g[index], reduced."""
    index = op.attrs["index"]
    dyn = [op.inputs[i] for i in range(2, len(op.fwd_inputs))]
    gx = gv = None
    if op.needs(0):
        zero = constant(np.zeros((), g.dtype))
        gx = make_op("SetItem", [g, zero, *dyn], {"index": index}).outputs[0]
    if op.needs(1):
        gv = a.reduce_to_shape(_getitem(g, index, dyn), op.input_shape(1))
    return [gx, gv] + [None] * len(dyn)


def _getitem(x, index: IndexSpec, dyn):
    if not dyn and all(it is Ellipsis or it == Slice(None, None, None) for it in index.items):
        return x
    return make_op("GetItem", [x, *dyn], {"index": index}).outputs[0]


@register_gradient("Pad")
def _pad_grad(op, g):
    """Each input element's gradient is the sum of the gradients of the outputs taken from it (PadGrad); a
    scalar fill's is the sum of the gradients of the filled places."""
    widths, mode = op.attrs["pad_width"], op.attrs["mode"]
    gx = padding.pad_grad(g, op.input_shape(0), widths, mode) if op.needs(0) else None
    if mode != "constant":
        return gx
    gc = None
    if op.needs(1) and op.fwd_inputs[1].shape == ():
        filled = padding.pad(zeros(op.input_shape(0), g.dtype), widths, constant_values=np.ones((), g.dtype))
        gc = reduce_sum(m.mul(g, filled))
    return [gx, gc]


@register_gradient("PadGrad")
def _pad_grad_grad(op, g):
    """PadGrad is linear in its gradient input: its own gradient is the pad again, with a zero fill."""
    return [padding.pad(g, op.attrs["pad_width"], op.attrs["mode"]), None]
