"""Gradient accumulation: the contributions to one forward tensor summed, checked and shaped.

A forward tensor read by several consumers gets one gradient contribution from
each; `Grads` collects them per tensor during a region's walk and `add_n` sums
them. `conform` checks what a rule returned against the forward tensor it is
the gradient of.
"""
from __future__ import annotations

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import Tensor
from graph.errors import GraphError
from graph.ops.conversion import convert, static_value
from graph.ops.indexing import is_static_basic, scatter_slices
from graph.ops.math import add


class Grads:
    """Gradient contributions per forward tensor, summed when first asked for."""

    def __init__(self):
        self._parts: dict[Tensor, list[Tensor]] = {}
        self.consumed: set[Tensor] = set()  # values inside nested conds whose gradients were passed in

    def add(self, t: Tensor, g: Tensor) -> None:
        self._parts.setdefault(t, []).append(g)

    def keys(self) -> list[Tensor]:
        return list(self._parts)

    def total(self, *ts: Tensor) -> Tensor | None:
        """The sum of the contributions to `ts` (several tensors: e.g. a loop variable's
        body input and its Merge), or None when there are none."""
        parts = [g for t in ts for g in self._parts.get(t, ())]
        if not parts:
            return None
        out = add_n(parts)
        if len(ts) == 1:
            self._parts[ts[0]] = [out]
        return out


def add_n(parts: list[Tensor]) -> Tensor:
    """Sum of gradient contributions; for TensorArray gradient flows (one accumulating
    array), the first flow once all the others have happened."""
    if len(parts) == 1:
        return parts[0]
    if parts[0].dtype is _dt.variant:
        return _join_flows(parts)
    parts = _combine_slice_gradients(parts)
    while len(parts) > 1:  # a balanced tree keeps the rounding symmetric and the depth small
        parts = [add(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    return parts[0]


def _join_flows(parts: list[Tensor]) -> Tensor:
    g = parts[0].graph
    return g.create_node("Identity", [parts[0]], name="gradient_flow", control_inputs=parts[1:]).outputs[0]


def _combine_slice_gradients(parts: list[Tensor]) -> list[Tensor]:
    """Gradient contributions to one tensor that are GetItemGrads of static basic slices (a cell's
    gates cut from one matrix) become one ScatterSlices: one buffer instead of a zero-filled array
    per slice and the adds between them. Other contributions are left as they are."""
    slices = [g for g in parts if g.node.op == "GetItemGrad" and len(g.node.inputs) == 2
              and is_static_basic(g.node.attrs["index"])]
    if len(slices) < 2:
        return parts
    shape = static_value(slices[0].node.inputs[1])
    if shape is None or any(not np.array_equal(static_value(g.node.inputs[1]), shape) for g in slices[1:]) \
            or any(g.node.inputs[0].dtype != slices[0].node.inputs[0].dtype for g in slices[1:]):
        return parts
    combined = scatter_slices(slices[0].node.inputs[1], [g.node.inputs[0] for g in slices],
                              tuple(g.node.attrs["index"] for g in slices))
    taken = {id(g) for g in slices}  # (tensors compare elementwise: no `in`)
    return [combined] + [g for g in parts if id(g) not in taken]


def conform(g, t: Tensor, what: str) -> Tensor:
    """Checks a gradient against its forward tensor and gives it the forward tensor's static shape."""
    g = convert(g)
    if t.dtype is _dt.variant or g.dtype is _dt.variant:
        if t.dtype is not g.dtype:
            raise GraphError(f"gradients: the gradient rule for {what} returned a {g.dtype} gradient for "
                             f"{t.dtype} input {t.name}")
        return g
    if g.dtype != t.dtype:
        raise GraphError(f"gradients: the gradient rule for {what} returned a {g.dtype} gradient for "
                         f"{t.dtype} input {t.name}")
    if not _sh.compatible(g.shape, t.shape):
        raise GraphError(f"gradients: the gradient rule for {what} returned a gradient of shape "
                         f"{_sh.format_shape(g.shape)} for input {t.name} of shape {_sh.format_shape(t.shape)}")
    if t.shape is not None and g.shape != t.shape:
        # Same value, better static knowledge: gradient loop variables then keep the
        # forward loop's shapes and their loops never need re-tracing.
        g.shape = t.shape if g.shape is None else tuple(a if a is not None else b
                                                         for a, b in zip(t.shape, g.shape, strict=True))
    return g
