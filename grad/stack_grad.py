"""Gradients of the stacks that gradient loops read (for gradients of gradients).

A popped value is a forward value seen from a gradient loop, so its gradient
belongs to the value that was pushed. Both sides use the same slot keys:
- StackPop's gradient is a StackPush: the popped values' gradients are saved, under
  the pop's keys, on a gradient stack (one per forward stack);
- StackPush's gradient is a StackPop: the pushed value receives what was saved
  under the push's keys, once every push of a gradient is done (the gradient
  stack's handle waits for the counters of the loops that push);
- StackConcat's gradient is a StackSplit: the joined value's gradient is cut back
  into the slots it came from, on the gradient stack;
- StackSplit's gradient is a StackConcat (third order): the value it cut into slots
  receives the gradients saved for those slots, joined in key order.
"""
from __future__ import annotations

from grad.registry import register_gradient
from graph.control_flow.stack import pushed_values, stack_concat, stack_of, stack_pop, stack_split


@register_gradient("StackPop")
def _stack_pop_grad(op, *grads):
    """StackPop's gradient is a StackPush onto the gradient stack (of the values that have one)."""
    state = op.state
    gs = state.gradient_stack(stack_of(op.fwd_inputs[0]))
    keys = [op.inputs[k] for k in range(1, len(op.fwd_inputs))]
    gs.positions = [j for j, g in enumerate(grads) if g is not None]
    gs.pushes.append(state.push(gs.handle, [grads[j] for j in gs.positions], state.graph.context, keys))
    return [None] * len(op.fwd_inputs)


@register_gradient("StackPush")
def _stack_push_grad(op):
    """StackPush's gradient is a StackPop from the gradient stack."""
    state = op.state
    gs = state.gradient_stacks[stack_of(op.fwd_inputs[0])]
    values = pushed_values(op.node)
    keys = [op.inputs[k] for k in range(1 + len(values), len(op.fwd_inputs))]
    got = stack_pop(gs.ready_handle(state), keys, [values[j].dtype for j in gs.positions],
                    [values[j].shape for j in gs.positions], name="gradient_of_saved")
    out = [None] * len(op.fwd_inputs)
    for j, g in zip(gs.positions, got, strict=True):
        out[1 + j] = g
    return out


@register_gradient("StackConcat")
def _stack_concat_grad(op, g):
    """StackConcat's gradient is a StackSplit onto the gradient stack, under the keys it joined."""
    state = op.state
    gs = state.gradient_stack(stack_of(op.fwd_inputs[0]))
    gs.positions = [0]
    gs.pushes.append(stack_split(gs.handle, g, op.inputs[0], name="gradient_of_joined"))
    return [None]


@register_gradient("StackSplit")
def _stack_split_grad(op):
    """StackSplit's gradient is a StackConcat of the gradient stack: the rows it saved, in key order."""
    state = op.state
    gs = state.gradient_stacks[stack_of(op.fwd_inputs[0])]
    value = op.fwd_inputs[1]
    return [None, stack_concat(gs.ready_handle(state), value.dtype, value.shape[1:], name="gradient_of_split"), None]
