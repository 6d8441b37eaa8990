"""The five control-flow primitives of the dynamic dataflow design, plus LoopCond.

- Switch(data, pred) -> (output_false, output_true): the output not selected by
  `pred` is dead.
- Merge(inputs...) -> (output, value_index): forwards its first live input; dead
  only when every input is dead.
- Enter(data)[frame_name, is_constant, parallel_iterations]: moves a value into
  iteration 0 of a child frame (a constant Enter is visible to every iteration).
- Exit(data): moves a value from a loop frame to its parent frame.
- NextIteration(data): moves a value to the next iteration of its frame.
- LoopCond(pred): marks a loop's predicate (an identity the executor and
  partitioner recognise).
"""
from __future__ import annotations

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.op_names import (
    CONTROL_FLOW_OPS,  # noqa: F401  (re-exported: importers found it here first)
    ENTER,
    EXIT,
    LOOP_COND,
    MERGE,
    NEXT_ITERATION,
    SWITCH,
)
from graph.op_registry import register_op, same_as_input


def _check_pred(pred) -> None:
    if pred.dtype is _dt.variant or pred.dtype != np.bool_:
        raise TypeError(f"a predicate must be a bool tensor, got {pred.describe()}, a {pred.dtype} tensor")
    if pred.shape is not None and len(pred.shape) != 0:
        raise ValueError(f"a predicate must be a scalar, got shape {_sh.format_shape(pred.shape)} "
                         f"({pred.describe()}); reduce it with graph.any / graph.all")


def _switch_infer(inputs, attrs):
    data, pred = inputs
    _check_pred(pred)
    return [(data.dtype, data.shape), (data.dtype, data.shape)]


def _merge_infer(inputs, attrs):
    dtypes = {t.dtype for t in inputs}
    if len(dtypes) != 1:
        raise TypeError("Merge inputs differ in dtype: " + ", ".join(str(t.dtype) for t in inputs))
    shape = inputs[0].shape
    for t in inputs[1:]:
        shape = _sh.join(shape, t.shape)
    return [(inputs[0].dtype, shape), (np.dtype(np.int32), ())]


def _loop_cond_infer(inputs, attrs):
    _check_pred(inputs[0])
    return [(inputs[0].dtype, ())]


register_op(SWITCH, _switch_infer)
register_op(MERGE, _merge_infer)
register_op(ENTER, same_as_input)
register_op(EXIT, same_as_input)
register_op(NEXT_ITERATION, same_as_input)
register_op(LOOP_COND, _loop_cond_infer, differentiable=False)
