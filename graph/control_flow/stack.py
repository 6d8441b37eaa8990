"""Stacks of values saved by a forward loop for its gradient loop: StackNew, StackPush, StackPop.

A stack is a `variant` handle to a run-time store of slots keyed by iteration
indices (one int64 scalar per enclosing loop being differentiated, outermost
first). Keys, not push order, decide which value a pop gets, so iterations
running concurrently (`parallel_iterations` > 1) may push and pop in any order.

- StackNew()[name] -> handle
- StackPush(handle, *values, *keys)[swap_memory, num_values]: saves `values` in
  slot `keys` (no outputs: other nodes wait for it through control edges).
- StackPop(handle, *keys)[dtypes, shapes] -> values: takes the values out of slot
  `keys`, freeing them.
A gradient saves everything one forward context saves per iteration as one slot
(one push and one pop per iteration, whatever the number of values).
- StackConcat(handle)[dtype, shape] -> value: takes every value out, in key
  order, joined along their first axis (values with `shape[1:]`; none: zero rows).
  What a gradient loop sums over iterations row by row is computed from these
  after the loop in one op (grad/loop_sums.py).
- StackSplit(dst, value, src): pushes onto `dst` the rows of `value` under the keys
  and row counts the last StackConcat of `src` took (StackConcat's gradient).
"""
from __future__ import annotations

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import make_op
from graph.node import Tensor
from graph.op_names import ENTER, IDENTITY, SWITCH
from graph.op_registry import register_op

_INT = "iu"


def _check_keys(keys) -> None:
    for k in keys:
        if k.dtype is _dt.variant or k.dtype.kind not in _INT or (k.shape is not None and k.shape != ()):
            raise TypeError(f"a stack key must be an integer scalar, got {k.dtype}{_sh.format_shape(k.shape)}")


def _new_infer(inputs, attrs):
    return [(_dt.variant, ())]


def _push_infer(inputs, attrs):
    if inputs[0].dtype is not _dt.variant:
        raise TypeError("StackPush needs a stack handle as its first input")
    _check_keys(inputs[1 + attrs["num_values"]:])
    return []


def _pop_infer(inputs, attrs):
    if inputs[0].dtype is not _dt.variant:
        raise TypeError("StackPop needs a stack handle as its first input")
    _check_keys(inputs[1:])
    return list(zip(attrs["dtypes"], attrs["shapes"], strict=True))


def pushed_values(push) -> list[Tensor]:
    """The values a StackPush node saves."""
    return push.inputs[1:1 + push.attrs["num_values"]]


def push_keys(push) -> list[Tensor]:
    return push.inputs[1 + push.attrs["num_values"]:]


def add_pushed_value(push, value: Tensor) -> int:
    """Makes StackPush node `push` save `value` too (a gradient saving one more value of the same
    context); returns its position in the slot."""
    k = push.attrs["num_values"]
    inputs = [*push.inputs[:1 + k], value, *push.inputs[1 + k:]]
    push.graph.update_node(push, inputs=inputs, attrs={"num_values": k + 1})
    return k


def add_popped_value(pop, dtype, shape) -> Tensor:
    """One more output of StackPop node `pop`, for the value added to its pushes."""
    dtype = dtype if dtype is _dt.variant else np.dtype(dtype)
    shape = _sh.as_shape(shape)
    attrs = {"dtypes": (*pop.attrs["dtypes"], dtype), "shapes": (*pop.attrs["shapes"], shape)}
    (out,) = pop.graph.update_node(pop, attrs=attrs, new_outputs=[(dtype, shape)])
    return out


def _concat_infer(inputs, attrs):
    if inputs[0].dtype is not _dt.variant:
        raise TypeError("StackConcat needs a stack handle")
    shape = attrs["shape"]
    if shape is None or len(shape) < 1 or not _sh.is_fully_defined(shape[1:]):
        raise ValueError("StackConcat needs values of known rank >= 1 and known dims after the first")
    return [(attrs["dtype"], shape)]


def _split_infer(inputs, attrs):
    if inputs[0].dtype is not _dt.variant or inputs[2].dtype is not _dt.variant:
        raise TypeError("StackSplit needs two stack handles")
    return []


register_op("StackNew", _new_infer, stateful=True, differentiable=False)
register_op("StackConcat", _concat_infer, stateful=True)
register_op("StackSplit", _split_infer, stateful=True)
register_op("StackPush", _push_infer, stateful=True)
register_op("StackPop", _pop_infer, stateful=True)


def stack_new(name: str = "stack") -> Tensor:
    """A new, empty stack (one per execution of this node)."""
    return make_op("StackNew", [], {"name": name}, name="StackNew").outputs[0]


def stack_push(handle: Tensor, values, keys, swap_memory: bool = False, name: str | None = None):
    """Saves `values` (a list) under `keys`; returns the push node (to order other nodes after it)."""
    return make_op("StackPush", [handle, *values, *keys], {"swap_memory": bool(swap_memory),
                                                          "num_values": len(values)}, name=name or "StackPush")


def stack_pop(handle: Tensor, keys, dtypes, shapes, name: str | None = None) -> list[Tensor]:
    """The values saved under `keys` (which are removed from the stack)."""
    dtypes = tuple(d if d is _dt.variant else np.dtype(d) for d in dtypes)
    shapes = tuple(_sh.as_shape(s) for s in shapes)
    return list(make_op("StackPop", [handle, *keys], {"dtypes": dtypes, "shapes": shapes},
                        name=name or "StackPop").outputs)


def stack_concat(handle: Tensor, dtype, row_shape, name: str | None = None) -> Tensor:
    """Every value saved on the stack, in key order, joined along axis 0 (values of `row_shape` after
    their first dim); the stack is emptied."""
    shape = (None, *_sh.as_shape(row_shape))
    return make_op("StackConcat", [handle], {"dtype": np.dtype(dtype), "shape": shape},
                   name=name or "StackConcat").outputs[0]


def stack_split(dst: Tensor, value: Tensor, src: Tensor, name: str | None = None):
    """Pushes the rows of `value` onto `dst` as the last StackConcat of `src` joined them."""
    return make_op("StackSplit", [dst, value, src], name=name or "StackSplit")


def stack_of(handle: Tensor):
    """The StackNew node a handle comes from (through Enter/Identity/Switch plumbing), or None."""
    t = handle
    while t.node.op != "StackNew":
        if t.node.op not in (ENTER, IDENTITY, SWITCH) or not t.node.inputs:
            return None
        t = t.node.inputs[0]
    return t.node
