"""Shape and array kernels: reshape, transpose, concat/stack/unstack, gather, fill, where, range."""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import inplace, is_fed, kernel, simple
from graph import shapes as _sh
from graph.ops.conversion import static_value


def _scalar(out):
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


@kernel("Shape")
def _shape(node, rt):
    out_type = node.attrs["out_type"]

    def shape(x):
        return np.asarray(np.shape(x), dtype=out_type)
    return shape


@kernel("Size")
def _size(node, rt):
    out_type = node.attrs["out_type"].type

    def size(x):
        return out_type(np.size(x))
    return size


simple("Rank", lambda x: np.int64(np.ndim(x)))


def _static_shape(node, k: int):
    """Input k (a shape) as a tuple when the graph fixes it and the run feeds none of the nodes it comes
    from, so the kernel skips converting it."""
    if _fed_on_the_way(node.inputs[k]):
        return None
    v = static_value(node.inputs[k])
    return None if v is None else tuple(int(d) for d in np.asarray(v).reshape(-1))


def known_value(t):
    """t's value when the graph fixes it (a constant, maybe through Switches, Enters and identities) and the run
    feeds none of the nodes on the way to it; else None."""
    return None if _fed_on_the_way(t) else static_value(t)


def _fed_on_the_way(t) -> bool:
    """Whether the run feeds a node on the path `static_value` follows from `t` to the value it knows."""
    while not is_fed(t.node):
        n = t.node
        if not (n.op in ("Switch", "Enter") or (n.op in ("Identity", "StopGradient") and not n.control_inputs)):
            return False
        t = n.inputs[0]
    return True


@kernel("Reshape")
def _reshape(node, rt):
    static = _static_shape(node, 1)
    if static is not None:
        def reshape_static(x, shape):
            return np.asarray(x).reshape(static)
        return reshape_static

    def reshape(x, shape):
        return np.asarray(x).reshape(shape.tolist())
    return reshape


@kernel("Transpose")
def _transpose(node, rt):
    perm = node.attrs["perm"]

    def transpose(x):
        # the method: np.transpose's dispatch through fromnumeric costs as much again (a DQN learning step
        # transposes three operands of its gradient's matmuls)
        return x.transpose(perm) if type(x) is np.ndarray else np.transpose(x, perm)
    return transpose


@kernel("ExpandDims")
def _expand_dims(node, rt):
    axis = node.attrs["axis"]

    def expand_dims(x):
        return np.expand_dims(x, axis)
    return expand_dims


@kernel("Squeeze")
def _squeeze(node, rt):
    axis = node.attrs["axis"]

    def squeeze(x):
        return _scalar(np.squeeze(x, axis))
    return squeeze


@kernel("Concat")
def _concat(node, rt):
    axis = node.attrs["axis"]

    def concat(*xs):
        return np.concatenate(xs, axis)
    return concat


@kernel("Stack")
def _stack(node, rt):
    axis = node.attrs["axis"]

    def stack(*xs):
        return np.stack(xs, axis)
    return stack


def _check_dim(x, axis, num, what):
    n = np.shape(x)[axis]
    if n != num:
        raise ValueError(f"{what}: dimension {axis} has size {n} at run time, but the graph was built "
                         f"for {num}")


@kernel("Unstack")
def _unstack(node, rt):
    axis, num = node.attrs["axis"], node.attrs["num"]

    def unstack(x):
        x = np.asarray(x)
        _check_dim(x, axis, num, "unstack")
        parts = tuple(x) if axis == 0 else tuple(np.moveaxis(x, axis, 0))
        return parts if num != 1 else parts[0]
    return unstack


@kernel("Split")
def _split(node, rt):
    axis, sections = node.attrs["axis"], node.attrs["indices_or_sections"]
    single = len(node.outputs) == 1
    x_shape = node.inputs[0].shape
    if isinstance(sections, int) and x_shape is not None and x_shape[axis] is not None and not single:
        # the cut points are known when the plan is built: the parts are basic slices (views),
        # without np.split's per-call argument handling
        n = x_shape[axis]
        lead = (slice(None),) * axis
        keys = [lead + (slice(k * n // sections, (k + 1) * n // sections),) for k in range(sections)]

        def split_static(x):
            if x.shape[axis] != n:
                _check_dim(x, axis, n, "split")
            return tuple([x[key] for key in keys])
        return split_static

    def split(x):
        parts = tuple(np.split(x, sections if isinstance(sections, int) else list(sections), axis))
        return parts[0] if single else parts
    return split


@kernel("Tile")
def _tile(node, rt):
    static = _static_shape(node, 1)

    def tile(x, reps):
        return np.tile(x, static if static is not None else tuple(reps.tolist()))
    return tile


@kernel("BroadcastTo")
def _broadcast_to(node, rt):
    static = _static_shape(node, 1)

    def broadcast_to(x, shape):
        return np.broadcast_to(x, static if static is not None else tuple(shape.tolist()))
    return broadcast_to


def sum_to_shape(x, shape):
    """Sums `x` over the axes broadcasting added (leading) or stretched (size 1 in `shape`)."""
    shape = tuple(shape.tolist()) if isinstance(shape, np.ndarray) else tuple(shape)
    x = np.asarray(x)
    if x.shape == shape:
        return _scalar(x)
    lead = x.ndim - len(shape)
    if lead < 0:
        raise ValueError(f"cannot sum a value of shape {x.shape} down to the larger shape {shape}")
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and x.shape[lead + i] != 1)
    out = np.sum(x, axis=axes, dtype=x.dtype, keepdims=True) if axes else x
    if out.shape[lead:] != shape:
        raise ValueError(f"cannot sum a value of shape {x.shape} down to shape {shape}")
    return _scalar(out.reshape(shape))


@kernel("SumToShape")
def _sum_to_shape(node, rt):
    target, x_shape = _static_shape(node, 1), node.inputs[0].shape
    if target is None or not _sh.is_fully_defined(x_shape) or len(x_shape) < len(target):
        return sum_to_shape
    # both shapes fixed: the summed axes are known when the plan is built
    lead = len(x_shape) - len(target)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(target) if d == 1 and x_shape[lead + i] != 1)
    if not axes:
        return sum_to_shape

    if axes == tuple(range(lead)):
        def sum_leading_axes(x, shape):  # a bias's gradient: the reduction has the target's shape already
            return _scalar(np.add.reduce(x, axis=axes, dtype=x.dtype))
        return sum_leading_axes

    def sum_to_static_shape(x, shape):
        return _scalar(np.add.reduce(x, axis=axes, dtype=x.dtype, keepdims=True).reshape(target))
    return sum_to_static_shape


@kernel("Gather")
def _gather(node, rt):
    axis = node.attrs["axis"]

    def gather(params, indices):
        return np.take(params, indices, axis)
    return gather


def _select(c, x, y):
    return _scalar(np.where(c, x, y))


# the unsigned integer of each float's width: a float's bits, which a product by a bool keeps or zeroes
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _masks_to_zero(node) -> np.dtype | None:
    """The dtype to multiply x's elements as, when `where(c, x, y)` is `x` where c holds and zero elsewhere
    (a relu's gradient): c bool, y a constant +0 (all bits zero: not -0.0), the result x's own dtype. A
    float is taken as its bits, so NaNs and infinities that c drops become +0 and those it keeps stay
    as they are, bit for bit as np.where gives them; an integer as itself. None otherwise."""
    c, x, y = node.inputs
    out = node.outputs[0]
    zero = known_value(y)
    if c.dtype != np.bool_ or out.dtype != x.dtype or zero is None or np.ndim(zero) != 0 \
            or not _sh.is_fully_defined(out.shape) or not out.shape or x.shape is None or not x.shape:
        return None
    zero = np.asarray(zero)
    if x.dtype.kind == "f" and x.dtype.itemsize in _BITS:
        bits = np.dtype(_BITS[x.dtype.itemsize])
        return bits if zero.dtype.kind in "biuf" and zero.astype(x.dtype).view(bits) == 0 else None
    if x.dtype.kind in "iu":
        return x.dtype if zero.dtype.kind in "biu" and zero == 0 else None
    return None


@kernel("Select")
def _select_factory(node, rt):
    bits = _masks_to_zero(node)
    if bits is None:
        return _select
    shape, dtype = node.outputs[0].shape, node.outputs[0].dtype

    def keep_where(c, x, y):
        # np.where costs twice a product (a masked copy): the product by the mask, into a new array of x's
        # dtype seen as `bits`
        if type(x) is not np.ndarray:
            return _select(c, x, y)
        out = np.empty(shape, dtype)
        np.multiply(x.view(bits), c, out=out.view(bits))
        return out
    return keep_where


@inplace("Select")
def _select_into(node, rt, slot):
    bits = _masks_to_zero(node)
    if bits is None or slot != 1:
        return None

    def keep_where_into(c, x, y):  # x is this node's alone, of the result's shape and dtype (exec/donation.py)
        xb = x.view(bits)
        np.multiply(xb, c, out=xb)
        return x
    return keep_where_into


def _fill(shape, value):
    return _scalar(np.full(tuple(shape.tolist()), value, dtype=np.asarray(value).dtype))


simple("Fill", _fill)


@kernel("ZerosLike", "OnesLike")
def _like(node, rt):
    dtype = node.attrs["dtype"]
    one = node.op == "OnesLike"

    def like(x):
        dt = dtype if dtype is not None else np.asarray(x).dtype
        if np.ndim(x) == 0:
            return dt.type(one)
        return np.ones(np.shape(x), dt) if one else np.zeros(np.shape(x), dt)
    return like


@kernel("Range")
def _range(node, rt):
    dtype = node.outputs[0].dtype

    def range_(start, limit, delta):
        return np.arange(start, limit, delta, dtype=dtype)
    return range_


@kernel("OneHot")
def _one_hot(node, rt):
    dtype = node.attrs["dtype"]

    def one_hot(indices, depth):
        return (np.expand_dims(indices, -1) == np.arange(depth)).astype(dtype)
    return one_hot


@kernel("Pad")
def _pad(node, rt):
    widths, mode = node.attrs["pad_width"], node.attrs["mode"]
    if mode == "constant":
        def pad_constant(x, fill):
            return np.pad(x, widths, "constant", constant_values=fill)
        return pad_constant

    def pad(x):
        return np.pad(x, widths, mode)
    return pad


@kernel("PadGrad")
def _pad_grad(node, rt):
    widths, mode = node.attrs["pad_width"], node.attrs["mode"]

    def pad_grad(g, x_shape):
        """Each output element's gradient summed into the input element it was taken from: where np.pad
        puts each input position, read off the pad of their flat indices."""
        shape = tuple(int(d) for d in np.asarray(x_shape).reshape(-1))
        g = np.asarray(g)
        if mode == "constant":
            return _scalar(g[tuple(slice(lo, lo + d) for (lo, _), d in zip(widths, shape, strict=True))].copy())
        size = int(np.prod(shape))
        source = np.pad(np.arange(size).reshape(shape), widths, mode).reshape(-1)
        if g.dtype.kind == "f":
            out = np.bincount(source, weights=g.reshape(-1), minlength=size).astype(g.dtype, copy=False)
        else:
            out = np.zeros(size, g.dtype)
            np.add.at(out, source, g.reshape(-1))
        return _scalar(out.reshape(shape))
    return pad_grad
