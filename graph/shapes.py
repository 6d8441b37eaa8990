"""Partially known shapes: a tuple of ints and Nones, or None for unknown rank."""
from __future__ import annotations

from typing import Optional, Sequence

Shape = Optional[tuple]  # tuple[int | None, ...] | None


def as_shape(shape) -> Shape:
    if shape is None:
        return None
    return tuple(None if d is None or d < 0 else int(d) for d in shape)


def rank(shape: Shape) -> int | None:
    return None if shape is None else len(shape)


def is_fully_defined(shape: Shape) -> bool:
    return shape is not None and all(d is not None for d in shape)


def num_elements(shape: Shape) -> int | None:
    if not is_fully_defined(shape):
        return None
    n = 1
    for d in shape:
        n *= d
    return n


def format_shape(shape: Shape) -> str:
    if shape is None:
        return "[?]"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def broadcast(a: Shape, b: Shape) -> Shape:
    """numpy broadcasting on partial shapes; raises ValueError when it cannot hold."""
    if a is None or b is None:
        return None
    out = []
    for i in range(max(len(a), len(b))):
        da = a[len(a) - 1 - i] if i < len(a) else 1
        db = b[len(b) - 1 - i] if i < len(b) else 1
        if da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        elif da is None:
            out.append(db)
        elif db is None:
            out.append(da)
        elif da == db:
            out.append(da)
        else:
            raise ValueError(f"shapes {format_shape(a)} and {format_shape(b)} do not broadcast")
    return tuple(reversed(out))


def broadcast_all(shapes: Sequence[Shape]) -> Shape:
    out: Shape = ()
    for s in shapes:
        out = broadcast(out, s)
    return out


def join(a: Shape, b: Shape) -> Shape:
    """The most specific shape compatible with both (dims that differ become None)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def compatible(a: Shape, b: Shape) -> bool:
    if a is None or b is None:
        return True
    if len(a) != len(b):
        return False
    return all(x is None or y is None or x == y for x, y in zip(a, b))


def normalize_axis(axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < max(ndim, 1) and not (ndim == 0 and axis in (0, -1)):
        raise ValueError(f"{what} {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim if ndim else 0


def reduce_shape(shape: Shape, axis, keepdims: bool) -> Shape:
    if shape is None:
        return None
    nd = len(shape)
    if axis is None:
        axes = set(range(nd))
    else:
        axes = {normalize_axis(a, nd) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))}
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)
