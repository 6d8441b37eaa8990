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
from graph.ops.array import concat, transpose
from graph.ops.conversion import convert, static_value
from graph.ops.indexing import is_static_basic, scatter_slices
from graph.ops.math import add, matmul


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
    parts = _combine_outer_products(parts)
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


def _combine_outer_products(parts: list[Tensor]) -> list[Tensor]:
    """Contributions a_kᵀ @ b_k of 2-D matmuls (a weight's gradient from each use of it: the time steps of
    an unrolled loop) become one matmul of the joined rows, [a_1; ...; a_N]ᵀ @ [b_1; ...; b_N]: the same sum
    in another order, as grad/loop_sums.py does for a loop's weight. N matmuls with inner dimension `rows`
    and N - 1 weight-sized adds become one large matmul, which BLAS runs several times faster (an LSTM's
    256x32 by 32x1024 products ran at a third of the speed of one 256x3200 by 3200x1024). Only contributions
    built, with their operands, in the context the sum is built in join; other contributions are left as
    they are."""
    groups: dict[tuple, list[Tensor]] = {}
    for g in parts:
        key = _outer_product_key(g)
        if key is not None:
            groups.setdefault(key, []).append(g)
    joined = [group for group in groups.values() if len(group) >= 2]
    if not joined:
        return parts
    taken = {id(g) for group in joined for g in group}  # (tensors compare elementwise: no `in`)
    out = [g for g in parts if id(g) not in taken]
    for group in joined:
        a = concat([g.node.inputs[0].node.inputs[0] for g in group], axis=0)
        b = concat([g.node.inputs[1] for g in group], axis=0)
        out.append(matmul(transpose(a, (1, 0)), b))
    return out


def _outer_product_key(g: Tensor) -> tuple | None:
    """(device, dtype, columns of a, columns of b) of a contribution `aᵀ @ b` of known 2-D shapes built in the
    context the graph builds in now; None for any other contribution."""
    n = g.node
    here = g.graph.context
    if n.op != "MatMul" or len(n.inputs) != 2 or n.inputs[0].node.op != "Transpose":
        return None
    t = n.inputs[0].node
    a, b = t.inputs[0], n.inputs[1]
    if any(x.context is not here for x in (n, t, a.node, b.node)):
        return None
    if tuple(t.attrs.get("perm") or ()) != (1, 0) or a.shape is None \
            or b.shape is None or len(a.shape) != 2 or len(b.shape) != 2 or a.dtype != b.dtype \
            or not _sh.is_fully_defined(g.shape):
        return None
    return (n.device, a.dtype, a.shape[1], b.shape[1])
