"""`x[index]` as one GetItem op, its gradient GetItemGrad, and the functional update SetItem.

The index structure (ints, slices, Ellipsis, None, tensors) is the `index`
attribute, an `IndexSpec`; tensor parts (slice bounds, scalar indices, integer
arrays, boolean masks) are extra inputs after `x`, referred to by position.
Semantics are numpy's, including advanced indexing: integer arrays broadcast
together, and their dimensions go where the first one was when they are
adjacent, else first.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import make_op
from graph.errors import DTypeError, GraphError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.conversion import constant, convert, static_value
from graph.ops.shape_ops import shape_tensor, shape_value


class IndexGraphError(GraphError, IndexError):
    """An index that cannot apply to the tensor (out of bounds, too many indices)."""


@dataclass(frozen=True, slots=True)
class Dyn:
    """A tensor part of an index: dynamic input `pos`; kind is 'scalar', 'array' or 'mask'."""

    pos: int
    kind: str

    def __repr__(self) -> str:
        return f"${self.pos}" if self.kind != "mask" else f"mask${self.pos}"


@dataclass(frozen=True, slots=True)
class Slice:
    """A slice whose bounds are ints, None or `Dyn` scalars."""

    start: object
    stop: object
    step: object

    def __repr__(self) -> str:
        parts = ["" if v is None else repr(v) for v in (self.start, self.stop, self.step)]
        return ":".join(parts if self.step is not None else parts[:2])

    @property
    def dynamic(self) -> bool:
        return any(isinstance(v, Dyn) for v in (self.start, self.stop, self.step))


@dataclass(frozen=True, slots=True)
class IndexSpec:
    """The structure of an index: a tuple of int | Slice | Dyn | Ellipsis | None."""

    items: tuple

    def __repr__(self) -> str:
        def fmt(it):
            return "..." if it is Ellipsis else "None" if it is None else repr(it)
        return "[" + ", ".join(fmt(it) for it in self.items) + "]"

    @property
    def advanced(self) -> bool:
        return any(isinstance(it, Dyn) and it.kind != "scalar" for it in self.items)


# --------------------------------------------------------------------------- parsing a user index

def parse_index(key) -> tuple[IndexSpec, list[Tensor]]:
    """An IndexSpec and the dynamic input tensors for a Python index expression."""
    if not isinstance(key, tuple):
        key = (key,)
    items, dyn = [], []

    def add(t: Tensor, kind: str) -> Dyn:
        dyn.append(t)
        return Dyn(len(dyn) - 1, kind)

    def bound(v, what):
        if v is None:
            return None
        if isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor"):
            t = convert(v)
            if not _dt.is_integer(t.dtype) or (t.shape is not None and t.shape != ()):
                raise IndexGraphError(f"slice {what} must be an int or a scalar integer tensor, got "
                                      f"{t.describe()}, a {t.dtype}{_sh.format_shape(t.shape)} tensor")
            known = static_value(t)
            return int(known) if known is not None else add(t, "scalar")
        try:
            return operator.index(v)
        except TypeError:
            raise IndexGraphError(f"slice {what} must be an int, None or a scalar integer tensor, "
                                  f"got {type(v).__name__}") from None

    for k in key:
        if k is Ellipsis or k is None:
            items.append(k)
        elif isinstance(k, (bool, np.bool_)):
            raise IndexGraphError("a boolean scalar index is not supported on graph tensors; use graph.where")
        elif isinstance(k, (int, np.integer)):
            items.append(int(k))
        elif isinstance(k, slice):
            step = bound(k.step, "step")
            if step == 0:
                raise IndexGraphError("slice step cannot be zero")
            items.append(Slice(bound(k.start, "start"), bound(k.stop, "stop"), step))
        else:
            items.append(_tensor_item(k, add))
    if sum(it is Ellipsis for it in items) > 1:
        raise IndexGraphError("an index can only have a single ellipsis ('...')")
    return IndexSpec(tuple(items)), dyn


def _tensor_item(k, add):
    if isinstance(k, Tensor) or hasattr(k, "_as_graph_tensor"):
        t = convert(k)
    else:
        if isinstance(k, (list, tuple)) and any(isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor") for v in k):
            t = convert(k)
        else:
            arr = np.asarray(k)
            if arr.size == 0 and arr.dtype.kind == "f":  # x[[]]: numpy reads an empty list as integers
                arr = arr.astype(np.int64)
            if arr.dtype.kind not in "iub":
                raise IndexGraphError(f"only integers, slices, ..., None and integer or boolean arrays are "
                                      f"valid indices, got {k!r}")
            if arr.ndim == 0 and arr.dtype.kind in "iu":
                return int(arr)
            t = constant(arr)
    if _dt.is_bool(t.dtype):
        if t.shape is not None and len(t.shape) == 0:
            raise IndexGraphError("a boolean scalar index is not supported on graph tensors; use graph.where")
        return add(t, "mask")
    if not _dt.is_integer(t.dtype):
        raise IndexGraphError(f"{t.describe()}, a {t.dtype} tensor, cannot be used as an index: "
                              "indices must be integers or booleans")
    if t.shape == ():
        known = static_value(t)
        return int(known) if known is not None else add(t, "scalar")
    return add(t, "array")


# --------------------------------------------------------------------------- shape inference

def _consumed(it, dyn) -> int | None:
    if it is None or it is Ellipsis:
        return 0
    if isinstance(it, Dyn) and it.kind == "mask":
        return _sh.rank(dyn[it.pos].shape)
    return 1


def _slice_len(dim, s: Slice):
    if s.dynamic:
        return None
    if dim is None:
        return None
    return len(range(*slice(s.start, s.stop, s.step).indices(dim)))


def _mask_count(t: Tensor):
    v = static_value(t)
    return None if v is None else int(np.count_nonzero(v))


def indexed_shape(shape, index: IndexSpec, dyn: list[Tensor]):
    """The static shape of `x[index]` for x of (partial) `shape`; None when unknown."""
    if shape is None:
        return None
    counts = [_consumed(it, dyn) for it in index.items]
    if None in counts:
        return None
    used, rank = sum(counts), len(shape)
    if used > rank:
        raise IndexGraphError(f"too many indices for a tensor of shape {_sh.format_shape(shape)}: "
                              f"{used} dimensions indexed")
    items = list(index.items)
    fill = rank - used
    if Ellipsis in items:
        at = items.index(Ellipsis)
        # the Ellipsis stays as a marker: even when it covers no dimension it separates advanced indices
        items[at + 1:at + 1] = [Slice(None, None, None)] * fill
    else:
        items += [Slice(None, None, None)] * fill
    has_array = any(isinstance(it, Dyn) and it.kind != "scalar" for it in items)
    out, adv_at, adv_shapes, p = [], [], [], 0
    for pos, it in enumerate(items):
        if it is Ellipsis:
            continue
        if it is None:
            out.append(1)
            continue
        if isinstance(it, Slice):
            out.append(_slice_len(shape[p], it))
            p += 1
            continue
        if isinstance(it, int):
            d = shape[p]
            if d is not None and not -d <= it < d:
                raise IndexGraphError(f"index {it} is out of bounds for axis {p} with size {d} "
                                      f"(tensor of shape {_sh.format_shape(shape)})")
            p += 1
            if has_array:
                adv_at.append(pos)
                adv_shapes.append(())
                out.append(_ADV)
            continue
        t = dyn[it.pos]
        if it.kind == "scalar":
            p += 1
            if has_array:
                adv_at.append(pos)
                adv_shapes.append(())
                out.append(_ADV)
            continue
        if it.kind == "mask":
            m = len(t.shape)
            if not _sh.compatible(tuple(shape[p:p + m]), t.shape):
                raise IndexGraphError(f"boolean index of shape {_sh.format_shape(t.shape)} does not match "
                                      f"dimensions {p}..{p + m - 1} of a tensor of shape {_sh.format_shape(shape)}")
            adv_shapes.append((_mask_count(t),))
            p += m
        else:
            if t.shape is None:
                return None
            adv_shapes.append(t.shape)
            p += 1
        adv_at.append(pos)
        out.append(_ADV)
    if not adv_at:
        return tuple(out)
    try:
        bshape = _sh.broadcast_all(adv_shapes)
    except ValueError:
        shapes = " ".join(_sh.format_shape(s) for s in adv_shapes)
        raise IndexGraphError(f"shape mismatch: indexing arrays could not be broadcast together with shapes "
                              f"{shapes}") from None
    rest = [d for d in out if d is not _ADV]
    if adv_at[-1] - adv_at[0] + 1 == len(adv_at):
        first = out.index(_ADV)
        return tuple(rest[:first]) + tuple(bshape) + tuple(rest[first:])
    return tuple(bshape) + tuple(rest)


_ADV = object()


# --------------------------------------------------------------------------- ops

def _getitem_infer(inputs, attrs):
    x, dyn = inputs[0], inputs[1:]
    return [(x.dtype, indexed_shape(x.shape, attrs["index"], dyn))]


def _getitem_grad_infer(inputs, attrs):
    grad, shape_t = inputs[0], inputs[1]
    target = shape_value(shape_t)
    return [(grad.dtype, None if target is None else tuple(None if d is None or d < 0 else d for d in target))]


def _setitem_infer(inputs, attrs):
    x, value, dyn = inputs[0], inputs[1], inputs[2:]
    target = indexed_shape(x.shape, attrs["index"], dyn)
    if target is not None and value.shape is not None:
        _sh.broadcast(value.shape, target)  # raises when the value cannot fill the selection
    return [(x.dtype, x.shape)]


def _scatter_slices_infer(inputs, attrs):
    grads, shape_t = inputs[1:], inputs[0]
    dtype = grads[0].dtype
    if any(g.dtype != dtype for g in grads):
        raise TypeError("scatter_slices: the gradients differ in dtype")
    target = shape_value(shape_t)
    return [(dtype, None if target is None else tuple(None if d is None or d < 0 else d for d in target))]


register_op("GetItem", _getitem_infer)
register_op("GetItemGrad", _getitem_grad_infer)
register_op("SetItem", _setitem_infer)
register_op("ScatterSlices", _scatter_slices_infer)


def getitem(x, key, name: str | None = None) -> Tensor:
    """`x[key]` with numpy semantics; parts of `key` may be graph tensors."""
    x = convert(x)
    index, dyn = parse_index(key)
    if not dyn and all(it is Ellipsis or it == Slice(None, None, None) for it in index.items):
        return x
    return make_op("GetItem", [x, *dyn], {"index": index}, name=name).outputs[0]


def get_item_grad(grad, shape, index: IndexSpec, dyn, name: str | None = None) -> Tensor:
    """Zeros of `shape` with `grad` added at `index` (repeated indices accumulate, like np.add.at).

    The gradient of `y = x[index]` is `get_item_grad(dy, shape(x), index, dyn)`,
    with the index and dynamic inputs of the GetItem node.
    """
    return make_op("GetItemGrad", [convert(grad), shape_tensor(shape), *dyn], {"index": index},
                   name=name).outputs[0]


def scatter_slices(shape, grads, indices: tuple, name: str | None = None) -> Tensor:
    """Zeros of `shape` with each `grads[k]` added at the static basic index `indices[k]`.

    The sum of the GetItemGrads of several basic slices of one tensor (`z[:, :H]`,
    `z[:, H:2*H]`, ... in an LSTM cell) as one op: one output buffer and no adds, where the
    sum makes a zero-filled array per slice and adds them up.
    """
    if any(not is_static_basic(ix) for ix in indices):
        raise ValueError("scatter_slices takes static basic indices (ints, slices, None, ...)")
    return make_op("ScatterSlices", [shape_tensor(shape), *map(convert, grads)], {"indices": tuple(indices)},
                   name=name).outputs[0]


def is_static_basic(index: IndexSpec) -> bool:
    """Whether an index has no tensor parts and no arrays: it selects a view."""
    return all(not isinstance(it, Dyn) and not (isinstance(it, Slice) and it.dynamic) for it in index.items)


def set_item(x, key, value, name: str | None = None) -> Tensor:
    """A copy of `x` with `x[key] = value` (numpy assignment semantics); `x` itself is unchanged."""
    x = convert(x)
    index, dyn = parse_index(key)
    v = convert(value, like=x)
    if not np.can_cast(v.dtype, x.dtype, casting="same_kind"):
        raise DTypeError(f"cannot assign a {v.dtype} value into {x.describe()}, a {x.dtype} tensor; cast it first")
    return make_op("SetItem", [x, v, *dyn], {"index": index}, name=name).outputs[0]


__all__ = ["getitem", "get_item_grad", "set_item"]
