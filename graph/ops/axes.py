"""Axis arguments checked against partially known shapes, with errors that name the shape."""
from __future__ import annotations

import operator

from graph import shapes as _sh
from graph.errors import ShapeError


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


def common_rank(inputs, what: str) -> int | None:
    """The rank that all of `inputs` (tensors joined by `what`) share, None if no rank is known."""
    ranks = {len(t.shape) for t in inputs if t.shape is not None}
    if len(ranks) > 1:
        shapes = ", ".join(_sh.format_shape(t.shape) for t in inputs)
        raise ShapeError(f"{what}: all inputs must have the same rank, got shapes {shapes}")
    return ranks.pop() if ranks else None
