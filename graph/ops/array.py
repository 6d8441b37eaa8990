"""Shape and array ops: shape/size/rank, reshape, transpose, concat/stack, gather, fill, where, range.

Ops that take a shape (Reshape, Fill, BroadcastTo, SumToShape, Tile) take it as
an int64 1-D tensor input, so it may be computed at run time. Builders accept a
tensor, an int, or a list mixing ints and scalar tensors; inference recovers
every dimension that is known when the graph is built (`shape_value`).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import Tensor, make_op, register_op
from graph.errors import ShapeError
from graph.ops._util import constant, convert, convert_pair, static_value
from graph.ops.math import cast

_INT64 = np.dtype(np.int64)


def _tensorish(v) -> bool:
    return isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor")


def _axis_error(axis, shape, what: str = "axis") -> ShapeError:
    return ShapeError(f"{what} {axis} is out of range for a tensor of shape {_sh.format_shape(shape)} "
                      f"(rank {len(shape)})")


def normalize_axis(axis: int, shape, what: str = "axis") -> int:
    """`axis` in [0, rank); the error names the tensor's shape."""
    nd = len(shape)
    axis = operator.index(axis)
    if not -nd <= axis < nd:
        raise _axis_error(axis, shape, what)
    return axis % nd


# --------------------------------------------------------------------------- static shape values

def shape_value(t: Tensor):
    """What is known statically about the 1-D shape tensor `t`: a tuple of
    ints and Nones (None = decided at run time), or None if even its length is unknown."""
    v = static_value(t)
    if v is not None:
        return tuple(int(d) for d in np.asarray(v).reshape(-1))
    n = t.node
    if n.op == "Shape":
        return n.inputs[0].shape
    if n.op == "Cast":
        return shape_value(n.inputs[0])
    if n.op == "Stack" and n.attrs["axis"] == 0 and all(i.shape == () for i in n.inputs):
        return tuple(scalar_value(i) for i in n.inputs)
    if n.op == "Concat" and n.attrs["axis"] == 0:
        parts = [shape_value(i) for i in n.inputs]
        if all(p is not None for p in parts):
            return tuple(d for p in parts for d in p)
    if t.shape is not None and len(t.shape) == 1 and t.shape[0] is not None:
        return (None,) * t.shape[0]
    return None


def scalar_value(t: Tensor):
    """The int value of scalar tensor `t` if known when building (e.g. a static dim of shape(x)[0])."""
    v = static_value(t)
    if v is not None:
        return int(v) if np.ndim(v) == 0 else None
    n = t.node
    if n.op == "Cast":
        return scalar_value(n.inputs[0])
    if n.op == "Size":
        return _sh.num_elements(n.inputs[0].shape)
    if n.op == "Rank":
        return _sh.rank(n.inputs[0].shape)
    if n.op == "GetItem" and n.inputs[0].node.op == "Shape" and len(n.attrs["index"].items) == 1:
        k = n.attrs["index"].items[0]
        dims = n.inputs[0].node.inputs[0].shape
        if isinstance(k, int) and dims is not None and -len(dims) <= k < len(dims):
            return dims[k]
    return None


def _shape_dims(value):
    """Normalised partial dims from shape_value (negative entries are unknown)."""
    return None if value is None else tuple(None if d is None or d < 0 else d for d in value)


def shape_tensor(shape, what: str = "shape") -> Tensor:
    """An int64 1-D tensor for `shape`: a tensor, an int, or a list mixing ints and scalar tensors."""
    if _tensorish(shape):
        t = convert(shape)
        if not _dt.is_integer(t.dtype):
            raise TypeError(f"{what} must be an integer tensor, got {t.dtype} tensor {t.name}")
        if t.shape is not None and len(t.shape) == 0:
            return stack([cast(t, _INT64)])
        if t.shape is not None and len(t.shape) != 1:
            raise ShapeError(f"{what} must be a 1-D tensor, got shape {_sh.format_shape(t.shape)}")
        return cast(t, _INT64)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if isinstance(shape, (list, tuple)):
        if builtins.any(_tensorish(d) for d in shape):
            parts = []
            for d in shape:
                d = convert(d) if _tensorish(d) else constant(np.int64(operator.index(d)))
                if not _dt.is_integer(d.dtype) or (d.shape is not None and d.shape != ()):
                    raise TypeError(f"each entry of {what} must be an int or a scalar integer tensor, "
                                    f"got {d.dtype}{_sh.format_shape(d.shape)}")
                parts.append(cast(d, _INT64))
            return stack(parts)
        return constant(np.asarray([operator.index(d) for d in shape], dtype=np.int64).reshape(-1))
    arr = np.asarray(shape)
    if arr.dtype.kind not in "iu" or arr.ndim > 1:
        raise TypeError(f"{what} must be ints or a 1-D integer tensor, got {shape!r}")
    return constant(arr.astype(np.int64).reshape(-1))


def shape_of(x: Tensor) -> Tensor:
    """x's shape as an int64 tensor: a constant when fully known, else a Shape op."""
    if _sh.is_fully_defined(x.shape):
        return constant(np.asarray(x.shape, dtype=np.int64))
    return shape(x)


# --------------------------------------------------------------------------- shape, size, rank

def _shape_infer(inputs, attrs):
    s = inputs[0].shape
    return [(attrs["out_type"], (None if s is None else len(s),))]


register_op("Shape", _shape_infer, differentiable=False)
register_op("Size", lambda i, a: [(a["out_type"], ())], differentiable=False)
register_op("Rank", lambda i, a: [(_INT64, ())], differentiable=False)


def shape(x, out_type=np.int64, name: str | None = None) -> Tensor:
    """The run-time shape of `x` as a 1-D integer tensor (`t.shape` is the static one)."""
    return make_op("Shape", [convert(x)], {"out_type": _dt.as_dtype(out_type)}, name=name).outputs[0]


def size(x, out_type=np.int64, name: str | None = None) -> Tensor:
    """The number of elements of `x`, as a scalar tensor."""
    return make_op("Size", [convert(x)], {"out_type": _dt.as_dtype(out_type)}, name=name).outputs[0]


def rank(x, name: str | None = None) -> Tensor:
    """The number of dimensions of `x`, as a scalar tensor."""
    return make_op("Rank", [convert(x)], name=name).outputs[0]


# --------------------------------------------------------------------------- reshape

def _reshape_infer(inputs, attrs):
    x, s = inputs
    target = shape_value(s)
    if target is None:
        return [(x.dtype, None)]
    if builtins.sum(1 for d in target if d == -1) > 1:
        raise ShapeError(f"reshape to {list(target)}: only one dimension can be -1")
    if builtins.any(d is not None and d < -1 for d in target):
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
    return [(x.dtype, _shape_dims(target))]


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
    if sorted(perm) != list(builtins.range(len(x.shape))):
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
    if x.shape is not None and len(x.shape) < 2 and (axes is None or axes == tuple(builtins.range(len(x.shape)))):
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
    return [(x.dtype, tuple(1 if i in pos else next(rest) for i in builtins.range(nd)))]


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
        if builtins.any(d is None for d in x.shape):
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

def _common_rank(inputs, what):
    ranks = {len(t.shape) for t in inputs if t.shape is not None}
    if len(ranks) > 1:
        shapes = ", ".join(_sh.format_shape(t.shape) for t in inputs)
        raise ShapeError(f"{what}: all inputs must have the same rank, got shapes {shapes}")
    return ranks.pop() if ranks else None


def _concat_infer(inputs, attrs):
    dtype = np.result_type(*(t.dtype for t in inputs))
    nd = _common_rank(inputs, "concatenate")
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
    nd = _common_rank(ts, "concatenate")
    axis = operator.index(axis)
    if nd is not None:
        if nd == 0:
            raise ShapeError("zero-dimensional tensors cannot be concatenated (use stack)")
        axis = normalize_axis(axis, next(t.shape for t in ts if t.shape is not None), "concatenate axis")
    if len(ts) == 1:
        return ts[0]
    return make_op("Concat", ts, {"axis": axis}, name=name).outputs[0]


def _stack_infer(inputs, attrs):
    dtype = np.result_type(*(t.dtype for t in inputs))
    joined = None
    for t in inputs:
        if t.shape is None:
            continue
        if joined is None:
            joined = t.shape
        elif not _sh.compatible(joined, t.shape):
            shapes = ", ".join(_sh.format_shape(u.shape) for u in inputs)
            raise ValueError(f"stack: all inputs must have the same shape, got {shapes}")
        else:
            joined = tuple(a if a is not None else b for a, b in zip(joined, t.shape, strict=True))
    if joined is None:
        return [(dtype, None)]
    axis = attrs["axis"]
    return [(dtype, (*joined[:axis], len(inputs), *joined[axis:]))]


register_op("Stack", _stack_infer)


def stack(values, axis: int = 0, name: str | None = None) -> Tensor:
    """`np.stack(values, axis)`: joins same-shaped tensors along a new axis."""
    ts = [convert(v) for v in values]
    if not ts:
        raise ShapeError("stack needs at least one tensor")
    nd = _common_rank(ts, "stack")
    axis = operator.index(axis)
    if nd is not None:
        axis = normalize_axis(axis, (None,) * (nd + 1), "stack axis")
    return make_op("Stack", ts, {"axis": axis}, name=name).outputs[0]


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
    x, target = inputs[0], _shape_dims(shape_value(inputs[1]))
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


register_op("SumToShape", lambda i, a: [(i[0].dtype, _shape_dims(shape_value(i[1])))])


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


# --------------------------------------------------------------------------- fill, zeros, ones, *_like

def _fill_infer(inputs, attrs):
    s, v = inputs
    if v.shape is not None and v.shape != ():
        raise ShapeError(f"fill value must be a scalar, got shape {_sh.format_shape(v.shape)}")
    return [(v.dtype, _shape_dims(shape_value(s)))]


register_op("Fill", _fill_infer)


def fill(shape, value, dtype=None, name: str | None = None) -> Tensor:
    """A tensor of `shape` filled with the scalar `value` (`np.full`)."""
    v = convert(value) if _tensorish(value) else constant(value, dtype)
    if dtype is not None:
        v = cast(v, dtype)
    return make_op("Fill", [shape_tensor(shape), v], name=name).outputs[0]


full = fill


def zeros(shape, dtype=np.float64, name: str | None = None) -> Tensor:
    """`np.zeros(shape, dtype)`; `shape` may be a tensor or mix ints and scalar tensors."""
    return fill(shape, constant(np.zeros((), _dt.as_dtype(dtype))), name=name or "zeros")


def ones(shape, dtype=np.float64, name: str | None = None) -> Tensor:
    """`np.ones(shape, dtype)`."""
    return fill(shape, constant(np.ones((), _dt.as_dtype(dtype))), name=name or "ones")


def _like_infer(inputs, attrs):
    x = inputs[0]
    return [(attrs["dtype"] if attrs["dtype"] is not None else x.dtype, x.shape)]


register_op("ZerosLike", _like_infer, differentiable=False)
register_op("OnesLike", _like_infer, differentiable=False)


def zeros_like(x, dtype=None, name: str | None = None) -> Tensor:
    """`np.zeros_like(x, dtype)`."""
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    return make_op("ZerosLike", [convert(x)], {"dtype": dtype}, name=name).outputs[0]


def ones_like(x, dtype=None, name: str | None = None) -> Tensor:
    """`np.ones_like(x, dtype)`."""
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    return make_op("OnesLike", [convert(x)], {"dtype": dtype}, name=name).outputs[0]


def full_like(x, fill_value, dtype=None, name: str | None = None) -> Tensor:
    """`np.full_like(x, fill_value, dtype)`."""
    x = convert(x)
    return fill(shape_of(x), fill_value, dtype=dtype if dtype is not None else x.dtype, name=name)


# --------------------------------------------------------------------------- range, one_hot

def _arange_dtype(*dtypes):
    return np.arange(*(np.ones((), d)[()] for d in dtypes)).dtype


def _range_infer(inputs, attrs):
    dtype = attrs["dtype"] or _arange_dtype(*(t.dtype for t in inputs))
    vals = [static_value(t) for t in inputs]
    n = None
    if all(v is not None for v in vals):
        start, limit, delta = (v.item() for v in vals)
        if delta == 0:
            raise ValueError("range: delta must not be zero")
        n = max(int(np.ceil((limit - start) / delta)), 0)
    return [(dtype, (n,))]


register_op("Range", _range_infer, differentiable=False)


def _scalar_input(v, what):
    t = convert(v)
    if t.shape is not None and t.shape != ():
        raise ShapeError(f"{what} must be a scalar, got shape {_sh.format_shape(t.shape)}")
    if not _dt.is_numeric(t.dtype) or t.dtype.kind == "c":
        raise TypeError(f"{what} must be a real number, got {t.dtype}")
    return t


def range(start, limit=None, delta=1, dtype=None, name: str | None = None) -> Tensor:
    """`np.arange(start, limit, delta, dtype)`; the bounds may be scalar tensors."""
    if limit is None:
        start, limit = 0, start
    ts = [_scalar_input(v, w) for v, w in ((start, "range start"), (limit, "range limit"), (delta, "range delta"))]
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    return make_op("Range", ts, {"dtype": dtype}, name=name).outputs[0]


arange = range


def _one_hot_infer(inputs, attrs):
    idx, depth = inputs
    if not _dt.is_integer(idx.dtype):
        raise TypeError(f"one_hot indices must be integers, got {idx.dtype}")
    d = scalar_value(depth)
    return [(attrs["dtype"], None if idx.shape is None else (*idx.shape, d))]


register_op("OneHot", _one_hot_infer, differentiable=False)


def one_hot(indices, depth, dtype=np.float64, name: str | None = None) -> Tensor:
    """`np.eye(depth, dtype=dtype)[indices]`, except that out-of-range indices give all-zero rows."""
    depth_t = _scalar_input(depth, "one_hot depth")
    return make_op("OneHot", [convert(indices), depth_t], {"dtype": _dt.as_dtype(dtype)}, name=name).outputs[0]


__all__ = ["shape", "size", "rank", "reshape", "transpose", "expand_dims", "squeeze", "concat", "stack",
           "unstack", "split", "tile", "broadcast_to", "reduce_to_shape", "gather", "take", "where", "select",
           "fill", "full", "zeros", "ones", "zeros_like", "ones_like", "full_like", "range", "arange",
           "one_hot", "shape_of"]
