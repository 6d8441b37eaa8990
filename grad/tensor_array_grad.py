"""Gradients of TensorArray ops: reads and writes swap roles on the accumulating gradient array.

A TensorArray handle's gradient is a *flow* of the gradient array attached to
the forward array (TensorArrayGrad; one per forward array, whose writes add
up). Flows order the gradient array's reads after the writes they depend on;
two flows of one array are summed by joining them.
"""
from __future__ import annotations

from grad.registry import register_gradient
from graph.control_flow.tensor_array import TensorArray
from graph.core import Tensor
from graph.op_names import ENTER, EXIT, IDENTITY, MERGE, NEXT_ITERATION, SWITCH

_PLUMBING = (ENTER, EXIT, MERGE, SWITCH, IDENTITY, NEXT_ITERATION)


def spec_of(handle: Tensor):
    """The TensorArraySpec of a forward handle (found through control-flow plumbing)."""
    t = handle
    while "spec" not in t.node.attrs:
        if t.node.op not in _PLUMBING or not t.node.inputs:
            raise ValueError(f"cannot find the TensorArray that {handle.name} refers to")
        t = t.node.inputs[0]
    return t.node.attrs["spec"]


def gradient_array(op_or_state, handle: Tensor, spec=None) -> TensorArray:
    """This gradient computation's accumulating array attached to the forward array `handle`."""
    state = getattr(op_or_state, "state", op_or_state)
    spec = spec if spec is not None else spec_of(handle)
    return TensorArray.from_handle(handle, spec).grad(source=state.source)


def _flow(flow: Tensor, spec) -> TensorArray:
    return TensorArray.from_handle(flow, spec)


@register_gradient("TensorArrayRead")
def _read_grad(op, g):
    """read(i)'s gradient is a write of g at i into the gradient array (reads of one index add up)."""
    return [gradient_array(op, op.inputs[0], op.attrs["spec"]).write(op.inputs[1], g).handle, None]


@register_gradient("TensorArrayWrite")
def _write_grad(op, flow):
    """write(i, v)'s gradient reads v's gradient at i from the gradient array; the flow passes on."""
    gv = _flow(flow, op.attrs["spec"]).read(op.inputs[1]) if op.needs(2) else None
    return [flow, None, gv]


@register_gradient("TensorArrayStack")
def _stack_grad(op, g):
    """stack's gradient is an unstack into the gradient array."""
    return gradient_array(op, op.inputs[0], op.attrs["spec"]).unstack(g).handle


@register_gradient("TensorArrayUnstack")
def _unstack_grad(op, flow):
    """unstack's gradient is a stack of the gradient array."""
    gv = _flow(flow, op.attrs["spec"]).stack() if op.needs(1) else None
    return [flow, gv]


@register_gradient("TensorArrayGather")
def _gather_grad(op, g):
    """gather's gradient is a scatter into the gradient array."""
    return [gradient_array(op, op.inputs[0], op.attrs["spec"]).scatter(op.inputs[1], g).handle, None]


@register_gradient("TensorArrayScatter")
def _scatter_grad(op, flow):
    """scatter's gradient is a gather from the gradient array."""
    gv = _flow(flow, op.attrs["spec"]).gather(op.inputs[1]) if op.needs(2) else None
    return [flow, None, gv]


__all__ = ["gradient_array", "spec_of"]
