"""numpy indexing as ONNX: GetItem, and SetItem / GetItemGrad / ScatterSlices as scatters over it.

`x[index]` becomes one ONNX node per index item, left to right: Slice for a
slice, Gather of a scalar for an integer (which drops the axis), Unsqueeze for
None, Gather of an array or Compress of a 1-D mask for an advanced index alone.
Several advanced indices (arrays, and the integers beside them, which numpy then
counts as advanced: `x[i, :, idx]`, `np.take_along_axis`) are broadcast together
and gathered at once with GatherND, the result's dimensions placed as numpy
places them (where the indices stood when they are adjacent, else first).
The writes select the positions they touch by applying the same index to a
tensor of flat positions (`arange(size).reshape(shape)`), then scatter.
"""
from __future__ import annotations

import numpy as np

from graph.node import Node, Tensor
from graph.onnx.lowering import Emitter
from graph.ops.indexing import Dyn, IndexSpec, Slice

_INT64 = np.dtype(np.int64)
_MAX, _MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def select(em: Emitter, x: str, rank: int | None, index: IndexSpec, dyn: list[Tensor], dyn_names: list[str]) -> str:
    """`x[index]` for an ONNX value `x` of rank `rank`; `dyn` are the index's tensor parts."""
    if rank is None:
        raise em.fail("indexing needs the rank of the indexed tensor to be known")
    items = _expand(em, list(index.items), rank, dyn)
    advanced = [it for it in items if isinstance(it, Dyn) and it.kind != "scalar"]
    if len(advanced) > 1 or advanced and any(isinstance(it, int) or isinstance(it, Dyn) and it.kind == "scalar"
                                              for it in items):
        if any(it is None or isinstance(it, Dyn) and it.kind == "mask" for it in items):
            raise em.fail(f"the index {index!r} combines several advanced (array or integer) indices with a None "
                          "or a boolean mask, whose result dimensions ONNX cannot place as numpy does; index in steps")
        return _gather_advanced(em, x, items, dyn, dyn_names)
    axis = 0
    for it in items:
        if it is None:
            x = em("Unsqueeze", x, em.i64(axis))
            axis += 1
        elif isinstance(it, Slice):
            if it != Slice(None, None, None):
                x = _slice(em, x, axis, it, dyn, dyn_names)
            axis += 1
        elif isinstance(it, int):
            x = em("Gather", x, em.const(it, _INT64), axis=axis)
        elif it.kind == "scalar":
            x = em("Gather", x, _dyn(em, dyn, dyn_names, it.pos), axis=axis)
        elif it.kind == "array":
            idx = dyn[it.pos]
            if idx.shape is None:
                raise em.fail("an index array of unknown rank cannot be exported")
            x = em("Gather", x, _dyn(em, dyn, dyn_names, it.pos), axis=axis)
            axis += len(idx.shape)
        else:
            mask = dyn[it.pos]
            if mask.shape is None or len(mask.shape) != 1:
                raise em.fail("only a 1-D boolean mask index can be exported")
            x = em("Compress", x, em.cast(dyn_names[it.pos], mask.dtype, np.bool_), axis=axis)
            axis += 1
    return x


def _gather_advanced(em: Emitter, x: str, items: list, dyn: list[Tensor], dyn_names: list[str]) -> str:
    """`x[items]` where the items are one per axis: slices and several advanced indices (arrays, integers).

    numpy broadcasts the advanced indices together to a shape B and puts B where they stand when they are
    adjacent, else first, the sliced axes keeping their order: the slices are applied, the indexed axes
    moved to the front, GatherND takes B + the other axes, and a Transpose moves B to its place."""
    axis_items = []
    for axis, it in enumerate(items):
        if isinstance(it, Slice) and it != Slice(None, None, None):
            x = _slice(em, x, axis, it, dyn, dyn_names)
        axis_items.append(it)
    picked = [k for k, it in enumerate(axis_items) if not isinstance(it, Slice)]
    kept = [k for k, it in enumerate(axis_items) if isinstance(it, Slice)]
    if picked != list(range(len(picked))):
        x = em("Transpose", x, perm=picked + kept)
    shape = em("Shape", x)
    indices, ranks = [], []
    for j, k in enumerate(picked):
        it = axis_items[k]
        if isinstance(it, int):
            idx, rank = em.const(it, _INT64), 0
        else:
            if dyn[it.pos].shape is None:
                raise em.fail("an index array of unknown rank cannot be exported")
            idx, rank = _dyn(em, dyn, dyn_names, it.pos), len(dyn[it.pos].shape)
        size = em("Gather", shape, em.const(j, _INT64))  # negative indices count from the end, as in numpy
        indices.append(em("Where", em("Less", idx, em.const(0, _INT64)), em("Add", idx, size), idx))
        ranks.append(rank)
    broadcast = indices[0]
    for idx in indices[1:]:
        broadcast = em("Add", broadcast, idx)
    b_shape = em("Shape", broadcast)
    stacked = em("Concat", *[em("Unsqueeze", em("Expand", idx, b_shape), em.i64(-1)) for idx in indices], axis=-1)
    out = em("GatherND", x, stacked)
    nb, first = max(ranks), picked[0]
    if picked == list(range(first, first + len(picked))) and first > 0:  # adjacent: B goes where they stood
        perm = [nb + j for j in range(first)] + list(range(nb)) + [nb + j for j in range(first, len(kept))]
        out = em("Transpose", out, perm=perm)
    return out


def _expand(em: Emitter, items: list, rank: int, dyn: list[Tensor]) -> list:
    """The items with the Ellipsis replaced by the full slices it stands for."""
    def consumed(it):
        if it is None or it is Ellipsis:
            return 0
        if isinstance(it, Dyn) and it.kind == "mask":
            if dyn[it.pos].shape is None:
                raise em.fail("a boolean mask index of unknown rank cannot be exported")
            return len(dyn[it.pos].shape)
        return 1
    fill = rank - sum(consumed(it) for it in items)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [Slice(None, None, None)] * fill
    return items


def _dyn(em: Emitter, dyn: list[Tensor], names: list[str], pos: int) -> str:
    return em.cast(names[pos], dyn[pos].dtype, _INT64)


def _slice(em: Emitter, x: str, axis: int, s: Slice, dyn: list[Tensor], dyn_names: list[str]) -> str:
    step = 1 if s.step is None else s.step

    def bound(v):
        return em("Reshape", _dyn(em, dyn, dyn_names, v.pos), em.i64(1)) if isinstance(v, Dyn) else em.i64(v)

    def omitted(forwards: int, backwards: int) -> str:
        """An omitted start or stop: numpy's depends on the step's sign, a tensor's known when the model runs."""
        if isinstance(step, Dyn):
            return em("Where", em("Less", bound(step), em.i64(0)), em.i64(backwards), em.i64(forwards))
        return em.i64(backwards if step < 0 else forwards)
    # ONNX clamps a backward start to the last element, and a backward end to -1, "before the first
    # element", as numpy's omitted stop means
    start = bound(s.start) if s.start is not None else omitted(0, _MAX)
    stop = bound(s.stop) if s.stop is not None else omitted(_MAX, _MIN)
    return em("Slice", x, start, stop, em.i64(axis), bound(step))


def _positions(em: Emitter, shape: str) -> str:
    """`arange(prod(shape)).reshape(shape)`: the flat position of every element of a tensor of `shape`."""
    size = em("ReduceProd", shape, keepdims=0)
    flat = em("Range", em.const(0, _INT64), size, em.const(1, _INT64))
    return em("Reshape", flat, shape, allowzero=1)


def _scatter(em: Emitter, target_flat: str, selected: str, values: str, reduction: str) -> str:
    updates = em("Reshape", em("Expand", values, em("Shape", selected)), em.i64(-1))
    return em("ScatterElements", target_flat, em("Reshape", selected, em.i64(-1)), updates, axis=0,
              reduction=reduction)


def lower_getitem(em: Emitter, node: Node, ins: list) -> list:
    return [select(em, ins[0], node.inputs[0].ndim, node.attrs["index"], node.inputs[1:], ins[1:])]


def lower_setitem(em: Emitter, node: Node, ins: list) -> list:
    x = node.inputs[0]
    shape = em("Shape", ins[0])
    selected = select(em, _positions(em, shape), x.ndim, node.attrs["index"], node.inputs[2:], ins[2:])
    value = em.input_as(ins, 1, x.dtype)
    out = _scatter(em, em("Reshape", ins[0], em.i64(-1)), selected, value, "none")
    return [em("Reshape", out, shape, allowzero=1)]


def lower_getitem_grad(em: Emitter, node: Node, ins: list) -> list:
    grad, shape_t = node.inputs[0], node.inputs[1]
    shape = em.input_as(ins, 1, _INT64)
    rank = None if shape_t.shape is None else shape_t.shape[0]
    selected = select(em, _positions(em, shape), rank, node.attrs["index"], node.inputs[2:], ins[2:])
    zeros = em("Expand", em.const(0, grad.dtype), em("ReduceProd", shape, keepdims=1))
    out = _scatter(em, zeros, selected, ins[0], "add")  # repeated indices accumulate, as np.add.at
    return [em("Reshape", out, shape, allowzero=1)]


def lower_scatter_slices(em: Emitter, node: Node, ins: list) -> list:
    shape_t, out_dtype = node.inputs[0], node.outputs[0].dtype
    shape = em.input_as(ins, 0, _INT64)
    rank = None if shape_t.shape is None else shape_t.shape[0]
    positions = _positions(em, shape)
    out = em("Expand", em.const(0, out_dtype), em("ReduceProd", shape, keepdims=1))
    for k, index in enumerate(node.attrs["indices"]):
        selected = select(em, positions, rank, index, [], [])
        out = _scatter(em, out, selected, em.input_as(ins, k + 1, out_dtype), "add")
    return [em("Reshape", out, shape, allowzero=1)]


INDEXING = {"GetItem": lower_getitem, "SetItem": lower_setitem, "GetItemGrad": lower_getitem_grad,
            "ScatterSlices": lower_scatter_slices}
