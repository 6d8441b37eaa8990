"""Array manipulation: reshape, transpose, expand_dims/squeeze, concat/stack/unstack/split,
tile/broadcast_to and their inverse for gradients, gather and where.

Shape arguments go through graph.ops.shape_ops (`shape_tensor`), so they may be
tensors; inference keeps every dimension known when the graph is built.
"""
from __future__ import annotations

import operator

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import make_op
from graph.errors import ShapeError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.axes import common_rank, normalize_axis
from graph.ops.conversion import (
    convert,
    convert_pair,
    stack,  # joins tensors like concat; defined with convert, which packs lists
)
from graph.ops.math import cast
from graph.ops.shape_ops import shape_dims, shape_tensor, shape_value

# --------------------------------------------------------------------------- reshape

def _reshape_infer(inputs, attrs):
    x, s = inputs
    target = shape_value(s)
    if target is None:
        return [(x.dtype, None)]
    if sum(1 for d in target if d == -1) > 1:
        raise ShapeError(f"reshape to {list(target)}: only one dimension can be -1")
    if any(d is not None and d < -1 for d in target):
        raise ShapeError(f"reshape to {list(target)}: negative dimension")
    n = _sh.num_elements(x.shape)
    known = [d for d in target if d is not None and d >= 0]
    if n is not None and len(known) == len(target):
        if int(np.prod(known)) != n:
            raise ValueError(f"cannot reshape a tensor of shape {_sh.format_shape(x.shape)} ({n} elements) "
                             f"into shape {list(target)}")
    if n is not None and -1 in target and len(known) == len(target) - 1:
        rest = int(np.prod(known))
        if rest == 0 or n % rest:
            raise ValueError(f"cannot reshape a tensor of shape {_sh.format_shape(x.shape)} ({n} elements) "
                             f"into shape {list(target)}")
        target = tuple(n // rest if d == -1 else d for d in target)
    return [(x.dtype, shape_dims(target))]


register_op("Reshape", _reshape_infer)


def reshape(x, newshape, name: str | None = None) -> Tensor:
    """`np.reshape(x, newshape)`; `newshape` may hold -1, scalar tensors, or be a tensor."""
    x = convert(x)
    s = shape_tensor(newshape, "reshape's shape")
    target = shape_value(s)
    if target is not None and target == x.shape and _sh.is_fully_defined(x.shape):
        return x
    return make_op("Reshape", [x, s], name=name).outputs[0]


# --------------------------------------------------------------------------- transpose, expand_dims, squeeze

def _transpose_infer(inputs, attrs):
    x, perm = inputs[0], attrs["perm"]
    if x.shape is None:
        return [(x.dtype, None if perm is None else (None,) * len(perm))]
    if perm is None:
        return [(x.dtype, tuple(reversed(x.shape)))]
    if sorted(perm) != list(range(len(x.shape))):
        raise ShapeError(f"axes {list(perm)} are not a permutation of the dimensions of a tensor of shape "
                         f"{_sh.format_shape(x.shape)}")
    return [(x.dtype, tuple(x.shape[p] for p in perm))]


register_op("Transpose", _transpose_infer)


def transpose(x, axes=None, name: str | None = None) -> Tensor:
    """`np.transpose(x, axes)` (reversed axes by default)."""
    x = convert(x)
    if axes is not None:
        axes = tuple(operator.index(a) for a in axes)
        if x.shape is not None:
            axes = tuple(normalize_axis(a, x.shape, "transpose axis") for a in axes)
    if x.shape is not None and len(x.shape) < 2 and (axes is None or axes == tuple(range(len(x.shape)))):
        return x
    return make_op("Transpose", [x], {"perm": axes}, name=name).outputs[0]


def _expand_infer(inputs, attrs):
    x, axes = inputs[0], attrs["axis"]
    if x.shape is None:
        return [(x.dtype, None)]
    nd = len(x.shape) + len(axes)
    pos = sorted(normalize_axis(a, (None,) * nd, "expand_dims axis") for a in axes)
    if len(set(pos)) != len(pos):
        raise ShapeError(f"expand_dims: repeated axis in {list(axes)}")
    rest = iter(x.shape)
    return [(x.dtype, tuple(1 if i in pos else next(rest) for i in range(nd)))]


register_op("ExpandDims", _expand_infer)


def expand_dims(x, axis, name: str | None = None) -> Tensor:
    """`np.expand_dims(x, axis)`; `axis` is an int or a tuple of ints."""
    x = convert(x)
    axes = tuple(operator.index(a) for a in axis) if isinstance(axis, (tuple, list)) else (operator.index(axis),)
    if x.shape is not None:
        nd = len(x.shape) + len(axes)
        axes = tuple(normalize_axis(a, (None,) * nd, "expand_dims axis") for a in axes)
    return make_op("ExpandDims", [x], {"axis": axes}, name=name).outputs[0]


def _squeeze_infer(inputs, attrs):
    x, axes = inputs[0], attrs["axis"]
    if x.shape is None:
        return [(x.dtype, None)]
    if axes is None:
        if any(d is None for d in x.shape):
            return [(x.dtype, None)]
        return [(x.dtype, tuple(d for d in x.shape if d != 1))]
    for a in axes:
        if x.shape[a] not in (1, None):
            raise ValueError(f"cannot squeeze axis {a} of a tensor of shape {_sh.format_shape(x.shape)}: "
                             "its size is not 1")
    return [(x.dtype, tuple(d for i, d in enumerate(x.shape) if i not in axes))]


register_op("Squeeze", _squeeze_infer)


def squeeze(x, axis=None, name: str | None = None) -> Tensor:
    """`np.squeeze(x, axis)`: removes size-1 dimensions (all of them, or those in `axis`)."""
    x = convert(x)
    if axis is not None:
        axis = tuple(operator.index(a) for a in axis) if isinstance(axis, (tuple, list)) else (operator.index(axis),)
        if x.shape is not None:
            axis = tuple(normalize_axis(a, x.shape, "squeeze axis") for a in axis)
    return make_op("Squeeze", [x], {"axis": axis}, name=name).outputs[0]


# --------------------------------------------------------------------------- concat, stack, unstack, split

def _concat_infer(inputs, attrs):
    dtype = np.result_type(*(t.dtype for t in inputs))
    nd = common_rank(inputs, "concatenate")
    if nd is None:
        return [(dtype, None)]
    if nd == 0:
        raise ShapeError("zero-dimensional tensors cannot be concatenated (use stack)")
    axis = attrs["axis"]
    axis_dim, out = 0, [None] * nd
    for t in inputs:
        if t.shape is None:
            axis_dim = None
            continue
        if axis_dim is not None:
            axis_dim = None if t.shape[axis] is None else axis_dim + t.shape[axis]
        for i, d in enumerate(t.shape):
            if i == axis or d is None:
                continue
            if out[i] is not None and out[i] != d:
                shapes = ", ".join(_sh.format_shape(u.shape) for u in inputs)
                raise ValueError(f"concatenate along axis {axis}: dimension {i} differs between inputs {shapes}")
            out[i] = d
    out[axis] = axis_dim
    return [(dtype, tuple(out))]


register_op("Concat", _concat_infer)


def concat(values, axis: int = 0, name: str | None = None) -> Tensor:
    """`np.concatenate(values, axis)`."""
    ts = [convert(v) for v in values]
    if not ts:
        raise ShapeError("concatenate needs at least one tensor")
    nd = common_rank(ts, "concatenate")
    axis = operator.index(axis)
    if nd is not None:
        if nd == 0:
            raise ShapeError("zero-dimensional tensors cannot be concatenated (use stack)")
        axis = normalize_axis(axis, next(t.shape for t in ts if t.shape is not None), "concatenate axis")
    if len(ts) == 1:
        return ts[0]
    return make_op("Concat", ts, {"axis": axis}, name=name).outputs[0]


def _unstack_infer(inputs, attrs):
    x, axis = inputs[0], attrs["axis"]
    elem = None if x.shape is None else x.shape[:axis] + x.shape[axis + 1:]
    return [(x.dtype, elem)] * attrs["num"]


register_op("Unstack", _unstack_infer)


def unstack(x, num: int | None = None, axis: int = 0, name: str | None = None) -> list[Tensor]:
    """`list(np.moveaxis(x, axis, 0))`: the slices of `x` along `axis`, as a Python list.

    The count comes from x's static shape, or `num=` when that dimension is unknown.
    """
    x = convert(x)
    if x.shape is None:
        raise ShapeError(f"unstack needs a tensor of known rank, got {x.name} of unknown shape")
    if len(x.shape) == 0:
        raise ShapeError(f"cannot unstack scalar tensor {x.name}")
    axis = normalize_axis(axis, x.shape, "unstack axis")
    dim = x.shape[axis]
    if num is None:
        if dim is None:
            raise ShapeError(f"unstack: dimension {axis} of {x.name} (shape {_sh.format_shape(x.shape)}) is "
                             "unknown when the graph is built; pass num=")
        num = dim
    elif dim is not None and dim != num:
        raise ShapeError(f"unstack: num={num} but dimension {axis} of {x.name} has size {dim}")
    if num == 0:
        return []
    return list(make_op("Unstack", [x], {"axis": axis, "num": operator.index(num)}, name=name).outputs)


def _split_sizes(dim, sections):
    if isinstance(sections, int):
        if dim is None:
            return [None] * sections
        if dim % sections:
            raise ValueError(f"array split does not result in an equal division ({dim} into {sections})")
        return [dim // sections] * sections
    if dim is None:
        return [None] * (len(sections) + 1)
    bounds = [0] + [min(b if b >= 0 else max(b + dim, 0), dim) for b in sections] + [dim]
    return [max(b - a, 0) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _split_infer(inputs, attrs):
    x, axis, sections = inputs[0], attrs["axis"], attrs["indices_or_sections"]
    if x.shape is None:
        n = sections if isinstance(sections, int) else len(sections) + 1
        return [(x.dtype, None)] * n
    sizes = _split_sizes(x.shape[axis], sections)
    return [(x.dtype, (*x.shape[:axis], s, *x.shape[axis + 1:])) for s in sizes]


register_op("Split", _split_infer)


def split(x, indices_or_sections, axis: int = 0, name: str | None = None) -> list[Tensor]:
    """`np.split(x, indices_or_sections, axis)`: N equal parts, or cut at the given indices."""
    x = convert(x)
    axis = operator.index(axis) if x.shape is None else normalize_axis(axis, x.shape, "split axis")
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ShapeError("split: number of sections must be larger than 0")
    else:
        sections = tuple(operator.index(i) for i in indices_or_sections)
    node = make_op("Split", [x], {"axis": axis, "indices_or_sections": sections}, name=name)
    return list(node.outputs)


# --------------------------------------------------------------------------- tile, broadcast_to, sum-to-shape

def _tile_infer(inputs, attrs):
    x, reps = inputs[0], shape_value(inputs[1])
    if x.shape is None or reps is None:
        return [(x.dtype, None)]
    nd = max(len(x.shape), len(reps))
    xs = (1,) * (nd - len(x.shape)) + tuple(x.shape)
    rs = (1,) * (nd - len(reps)) + tuple(reps)
    return [(x.dtype, tuple(None if a is None or b is None else a * b for a, b in zip(xs, rs, strict=True)))]


register_op("Tile", _tile_infer)


def tile(x, reps, name: str | None = None) -> Tensor:
    """`np.tile(x, reps)`; `reps` may be a tensor or hold scalar tensors."""
    return make_op("Tile", [convert(x), shape_tensor(reps, "tile's reps")], name=name).outputs[0]


def _broadcast_to_infer(inputs, attrs):
    x, target = inputs[0], shape_dims(shape_value(inputs[1]))
    if target is None:
        return [(x.dtype, None)]
    if x.shape is not None:
        if len(x.shape) > len(target):
            raise ValueError(f"cannot broadcast a tensor of shape {_sh.format_shape(x.shape)} to the lower-rank "
                             f"shape {_sh.format_shape(target)}")
        joined = _sh.broadcast(x.shape, target)  # raises when incompatible
        if any(t is not None and j is not None and t != j for t, j in zip(target, joined, strict=True)):
            raise ValueError(f"cannot broadcast shape {_sh.format_shape(x.shape)} to {_sh.format_shape(target)}")
    return [(x.dtype, target)]


register_op("BroadcastTo", _broadcast_to_infer)


def broadcast_to(x, shape, name: str | None = None) -> Tensor:
    """`np.broadcast_to(x, shape)`; `shape` may be a tensor."""
    x = convert(x)
    s = shape_tensor(shape)
    if shape_value(s) == x.shape and _sh.is_fully_defined(x.shape):
        return x
    return make_op("BroadcastTo", [x, s], name=name).outputs[0]


register_op("SumToShape", lambda i, a: [(i[0].dtype, shape_dims(shape_value(i[1])))])


def reduce_to_shape(x, shape, name: str | None = None) -> Tensor:
    """Sums `x` over the dimensions that broadcasting added or stretched, down to `shape`.

    The inverse of broadcasting, for gradients: if `y = broadcast_to(a, s)` then
    `reduce_to_shape(dy, a.shape)` is the gradient for `a`. `shape` may be a tensor.
    """
    x = convert(x)
    s = shape_tensor(shape)
    target = shape_value(s)
    if target is not None and _sh.is_fully_defined(x.shape) and tuple(target) == x.shape:
        return x
    return make_op("SumToShape", [x, s], name=name).outputs[0]


# --------------------------------------------------------------------------- gather, where

def _gather_infer(inputs, attrs):
    params, idx = inputs
    if not _dt.is_integer(idx.dtype):
        raise TypeError(f"gather indices must be integers, got {idx.dtype}")
    if params.shape is None or idx.shape is None:
        return [(params.dtype, None)]
    axis = normalize_axis(attrs["axis"], params.shape, "gather axis")
    return [(params.dtype, (*params.shape[:axis], *idx.shape, *params.shape[axis + 1:]))]


register_op("Gather", _gather_infer)


def gather(params, indices, axis: int = 0, name: str | None = None) -> Tensor:
    """`np.take(params, indices, axis)` (negative indices count from the end)."""
    params, idx = convert(params), convert(indices)
    axis = operator.index(axis)
    if params.shape is not None:
        axis = normalize_axis(axis, params.shape, "gather axis")
    return make_op("Gather", [params, idx], {"axis": axis}, name=name).outputs[0]


take = gather


def _select_infer(inputs, attrs):
    c, x, y = inputs
    dtype = np.where(np.empty(0, bool), np.empty(0, x.dtype), np.empty(0, y.dtype)).dtype
    return [(dtype, _sh.broadcast_all([c.shape, x.shape, y.shape]))]


register_op("Select", _select_infer)


def where(condition, x=None, y=None, name: str | None = None) -> Tensor:
    """`np.where(condition, x, y)`: elements of x where condition holds, else of y (broadcasting)."""
    if x is None or y is None:
        raise TypeError("graph.where needs three arguments, where(condition, x, y); the one-argument form "
                        "(np.nonzero) is not supported")
    c = convert(condition)
    if c.dtype != np.bool_:
        c = cast(c, np.bool_)
    x, y = convert_pair(x, y)
    return make_op("Select", [c, x, y], name=name).outputs[0]


select = where


__all__ = ["reshape", "transpose", "expand_dims", "squeeze", "concat", "stack", "unstack", "split", "tile",
           "broadcast_to", "reduce_to_shape", "gather", "take", "where", "select"]
