"""Indexing kernels: GetItem, GetItemGrad (scatter-add into zeros) and SetItem.

The factory turns the node's IndexSpec into a function from the dynamic input
values to a numpy index tuple once; a fully static index is a ready-made tuple.
"""
from __future__ import annotations

import operator

import numpy as np

from exec.kernels.array import _static_shape, known_value
from exec.kernels.registry import kernel
from graph.ops.indexing import Dyn, Slice


def _dyn_getter(d: Dyn):
    pos = d.pos
    if d.kind == "scalar":
        return lambda vals: operator.index(vals[pos])
    if d.kind == "mask":
        return lambda vals: np.asarray(vals[pos], dtype=bool)
    return lambda vals: np.asarray(vals[pos])


def _part(v):
    if isinstance(v, Dyn):
        return _dyn_getter(v)
    return lambda vals, v=v: v


def index_function(items):
    """`key(dyn_values) -> tuple` for numpy indexing, or a constant tuple when nothing is dynamic."""
    static = all(not isinstance(it, Dyn) and not (isinstance(it, Slice) and it.dynamic) for it in items)
    if static:
        key = tuple(slice(it.start, it.stop, it.step) if isinstance(it, Slice) else it for it in items)
        return lambda vals: key
    if len(items) == 1 and isinstance(items[0], Dyn) and items[0].kind == "scalar":
        # x[i] (a replay memory's row): the common dynamic key, without a part's call per element
        pos = items[0].pos
        return lambda vals: (operator.index(vals[pos]),)
    parts = []
    for it in items:
        if isinstance(it, Slice):
            start, stop, step = _part(it.start), _part(it.stop), _part(it.step)
            parts.append(lambda vals, a=start, b=stop, c=step: slice(a(vals), b(vals), c(vals)))
        else:
            parts.append(_part(it))
    if len(parts) == 1:
        (only,) = parts
        return lambda vals: (only(vals),)
    return lambda vals: tuple([p(vals) for p in parts])  # a list display: a third of a generator's time


def _scalar(out):
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


@kernel("GetItem")
def _getitem(node, rt):
    items = node.attrs["index"].items
    key_of = index_function(items)
    if not node.inputs[1:]:
        key = key_of(())

        def getitem_static(x):
            return x[key]
        return getitem_static

    if len(items) == 1 and isinstance(items[0], Dyn) and items[0].kind == "scalar":
        def getitem_scalar(x, i):  # x[i] in a loop over the first axis: the common dynamic case
            return x[operator.index(i)]
        return getitem_scalar

    if _rows_by_array(node, items):
        def getitem_rows(x, i):
            # x[i]: whole rows picked by an integer array (a replay memory's batch), the same rows, errors and
            # layout as indexing gives them; indexing's general machinery costs 4x the copy for small rows
            return x.take(i, 0) if type(x) is np.ndarray and type(i) is np.ndarray else np.asarray(x)[i]
        return getitem_rows

    if _arrays_in_order(items, node.inputs[1:], node.inputs[0].shape):
        def getitem_arrays(x, *dyn):  # x[rows, cols] (a Q-value per row): the arrays are the key as they come
            return x[dyn]
        return getitem_arrays

    def getitem(x, *dyn):
        return np.asarray(x)[key_of(dyn)]
    return getitem


def _arrays_in_order(items, inputs, shape) -> bool:
    """Whether the index is only integer arrays of rank 1 or more, `inputs` in their order, into an array of
    `shape` of known rank at least their number: then the tuple of the input values is numpy's key (no
    conversion of each, and no scalar among them, which indexing would take otherwise than a 0-d array)."""
    if not items or len(items) != len(inputs) or shape is None or len(shape) < len(items):
        return False
    return all(isinstance(it, Dyn) and it.kind == "array" and it.pos == k and t.dtype.kind in "iu"
               and t.shape is not None and len(t.shape) >= 1 for k, (it, t) in enumerate(zip(items, inputs)))


def _rows_by_array(node, items) -> bool:
    """Whether the index is one integer array over the first axis of an input of rank 2 or more (where
    `take` is the cheaper copy; a vector's indexing is cheaper than its take)."""
    if len(items) != 1 or not isinstance(items[0], Dyn) or items[0].kind != "array":
        return False
    x, i = node.inputs[0], node.inputs[1]
    return x.shape is not None and len(x.shape) >= 2 and i.dtype.kind in "iu" and i.shape is not None \
        and len(i.shape) >= 1


def _is_mask(it) -> bool:
    return isinstance(it, Dyn) and it.kind == "mask"


def _scatter_key(items, key, shape):
    """A key for np.add.at and the shape of the view of the target it applies to.

    np.add.at cannot insert axes, so each None becomes a full slice over a
    size-1 axis of a reshaped view; boolean masks become their nonzero() arrays.
    The Ellipsis stays: it separates advanced indices even when it covers nothing.
    """
    widths = [0 if it is None or it is Ellipsis else np.ndim(k) if _is_mask(it) else 1
              for it, k in zip(items, key, strict=True)]
    covered = len(shape) - sum(widths)
    view, akey, p = [], [], 0
    for it, k, w in zip(items, key, widths, strict=True):
        if it is None:
            view.append(1)
            akey.append(slice(None))
            continue
        n = covered if it is Ellipsis else w
        view.extend(shape[p:p + n])
        p += n
        if _is_mask(it):
            akey.extend(np.nonzero(k))
        else:
            akey.append(k)
    view.extend(shape[p:])
    return tuple(akey), tuple(view)


def scatter_add(shape, grad, items, key):
    """Zeros of `shape` with `grad` added at `key` (repeated indices accumulate)."""
    shape = tuple(np.asarray(shape).tolist())
    grad = np.asarray(grad)
    out = np.zeros(shape, grad.dtype)
    if not any(isinstance(it, Dyn) and it.kind != "scalar" for it in items):
        out[key] = grad  # basic indexing selects each element at most once
        return _scalar(out)
    akey, view = _scatter_key(items, key, shape)
    np.add.at(out.reshape(view), akey, grad)
    return _scalar(out)


@kernel("GetItemGrad")
def _getitem_grad(node, rt):
    items = node.attrs["index"].items
    key_of = index_function(items)
    rows = _distinct_rows(node, items)
    if rows is not None:
        arrays = [it.pos for it in items if isinstance(it, Dyn) and it.kind == "array"]
        static = _static_shape(node, 1)  # the input's shape, when the graph fixes it: converted once

        fixed = _fixed_distinct_pick(node, items, rows, static)
        if fixed is not None:
            return fixed

        def getitem_grad_distinct(grad, shape, *dyn):
            # x[rows, j] with rows a constant of distinct values picks each element at most once (a Q-value
            # per row of a batch): an assignment adds what np.add.at would, at a fraction of its cost
            for p in arrays:
                if np.shape(dyn[p]) != rows:
                    return scatter_add(shape, grad, items, key_of(dyn))
            grad = np.asarray(grad)
            out = np.zeros(static if static is not None else tuple(np.asarray(shape).tolist()), grad.dtype)
            out[key_of(dyn)] = grad + out.dtype.type(0)  # 0 + g, as np.add.at gives: -0.0 becomes 0.0
            return _scalar(out)
        return getitem_grad_distinct

    def getitem_grad(grad, shape, *dyn):
        return scatter_add(shape, grad, items, key_of(dyn))
    return getitem_grad


def _fixed_distinct_pick(node, items, rows: tuple, static: tuple | None):
    """getitem_grad_distinct where the graph fixes what it checks per call: the output's shape and dtype, the
    arrays' shapes (those of the distinct rows), and the key (the arrays as they come, in order); else None."""
    dtype = node.outputs[0].dtype
    if static is None or dtype != node.inputs[0].dtype or any(t.shape != rows for t in node.inputs[2:]) or \
            not _arrays_in_order(items, node.inputs[2:], static):
        return None
    zero = dtype.type(0)

    def getitem_grad_picks(grad, shape, *dyn):
        out = np.zeros(static, dtype)
        out[dyn] = grad + zero  # 0 + g, as np.add.at gives: -0.0 becomes 0.0
        return out
    return getitem_grad_picks


def _distinct_rows(node, items) -> tuple | None:
    """The shape (n,) of the index's arrays when one of them is a constant of n distinct non-negative values the
    run does not feed and the others are integer arrays, with no masks: then where all of them are of that shape,
    the index picks n distinct elements. None otherwise."""
    arrays = [it for it in items if isinstance(it, Dyn) and it.kind != "scalar"]
    if not arrays or any(it.kind != "array" for it in arrays) or any(
            node.inputs[2 + it.pos].dtype.kind not in "iu" for it in arrays):
        return None
    for it in arrays:
        value = known_value(node.inputs[2 + it.pos])
        # non-negative: -1 and n - 1 are one position
        if value is not None and np.ndim(value) == 1 and np.all(np.asarray(value) >= 0) \
                and len(np.unique(value)) == len(value):
            return np.shape(value)
    return None


@kernel("ScatterSlices")
def _scatter_slices(node, rt):
    keys = [index_function(ix.items)(()) for ix in node.attrs["indices"]]
    dtype = node.outputs[0].dtype

    def scatter_slices(shape, *grads):
        out = np.zeros(tuple(shape.tolist()), dtype)
        for key, g in zip(keys, grads):
            out[key] += g  # basic indices: a view, so overlapping slices add up
        return _scalar(out)
    return scatter_slices


@kernel("SetItem")
def _setitem(node, rt):
    items = node.attrs["index"].items
    key_of = index_function(items)
    dtype = node.outputs[0].dtype

    def setitem(x, value, *dyn):
        out = np.array(x, dtype=dtype, copy=True)
        out[key_of(dyn)] = value
        return _scalar(out)
    return setitem
