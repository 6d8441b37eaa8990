"""Gradients of the stacks that gradient loops read (for gradients of gradients).

A popped value is a forward value seen from a gradient loop, so its gradient
belongs to the value that was pushed. Both sides use the same slot keys:
- StackPop's gradient is a StackPush: the popped value's gradient is saved, under
  the pop's keys, on a gradient stack (one per forward stack);
- StackPush's gradient is a StackPop: the pushed value receives what was saved
  under the push's keys, once every push of a gradient is done (the gradient
  stack's handle waits for the counters of the loops that push);
- StackConcat's gradient is a StackSplit: the joined value's gradient is cut back
  into the slots it came from, on the gradient stack.
"""
from __future__ import annotations

from graph.control_flow.stack import stack_of, stack_pop, stack_split
from grad.registry import register_gradient


@register_gradient("StackPop")
def _stack_pop_grad(op, g):
    """StackPop's gradient is a StackPush onto the gradient stack."""
    state = op.state
    gs = state.gradient_stack(stack_of(op.fwd_inputs[0]))
    keys = [op.inputs[k] for k in range(1, len(op.fwd_inputs))]
    gs.pushes.append(state.push(gs.handle, g, state.graph.context, keys))
    return [None] * len(op.fwd_inputs)


@register_gradient("StackPush")
def _stack_push_grad(op):
    """StackPush's gradient is a StackPop from the gradient stack."""
    state = op.state
    gs = state.gradient_stacks[stack_of(op.fwd_inputs[0])]
    keys = [op.inputs[k] for k in range(2, len(op.fwd_inputs))]
    v = op.fwd_inputs[1]
    g = stack_pop(gs.ready_handle(state), keys, v.dtype, v.shape, name="gradient_of_saved")
    return [None, g] + [None] * len(keys)


@register_gradient("StackConcat")
def _stack_concat_grad(op, g):
    """StackConcat's gradient is a StackSplit onto the gradient stack, under the keys it joined."""
    state = op.state
    gs = state.gradient_stack(stack_of(op.fwd_inputs[0]))
    gs.pushes.append(stack_split(gs.handle, g, op.inputs[0], name="gradient_of_joined"))
    return [None]
