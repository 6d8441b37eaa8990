"""Sources and plumbing: Const, Placeholder, Identity, NoOp, StopGradient, Print, Assert."""
from __future__ import annotations

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import make_op
from graph.node import Tensor
from graph.op_registry import register_op, same_as_input
from graph.ops.conversion import constant, convert
from graph.ops.math import cast

register_op("Placeholder", lambda i, a: [(a["dtype"], a["shape"])], hoist=True, differentiable=False)
register_op("Identity", same_as_input)
register_op("StopGradient", same_as_input, differentiable=False)
register_op("NoOp", lambda i, a: [])
register_op("Print", lambda i, a: [(i[0].dtype, i[0].shape)] if i else [], stateful=True, ordered=True)
register_op("Assert", lambda i, a: [], stateful=True, ordered=True, differentiable=False)


def placeholder(dtype, shape=None, name: str | None = None) -> Tensor:
    """A graph input, fed at run time (`Session.run(..., feed_dict={p: value})`)."""
    return make_op("Placeholder", [], {"dtype": _dt.as_dtype(dtype), "shape": _sh.as_shape(shape)},
                   name=name or "Placeholder").outputs[0]


def identity(x, name: str | None = None) -> Tensor:
    return make_op("Identity", [convert(x)], name=name).outputs[0]


def stop_gradient(x, name: str | None = None) -> Tensor:
    return make_op("StopGradient", [convert(x)], name=name).outputs[0]


def no_op(name: str | None = None):
    """A node that does nothing; a handle for grouping control dependencies."""
    return make_op("NoOp", [], name=name)


def group(*inputs, name: str | None = None):
    """A NoOp that runs after all `inputs` (tensors or nodes)."""
    deps = [x.node if isinstance(x, Tensor) else x for x in inputs]
    return make_op("NoOp", [], name=name or "group", control_inputs=deps)


def print_(*values, sep: str = " ", end: str = "\n", summarize: int | None = 6, name: str | None = None):
    """Prints `values` when the graph runs (like `print`), in program order.

    Returns the first tensor argument passed through (so prints can be chained in
    data flow), or the Print node when no tensor is given.
    """
    template, tensors = [], []
    for v in values:
        if isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor"):
            template.append(None)
            tensors.append(convert(v))
        else:
            template.append(str(v))
    node = make_op("Print", tensors, {"template": tuple(template), "sep": sep, "end": end,
                                      "summarize": summarize}, name=name)
    return node.outputs[0] if node.outputs else node


def assert_(condition, message: str = "assertion failed", data=(), name: str | None = None):
    """Fails the run with `message` (and the values of `data`) if `condition` is not all true."""
    cond = convert(condition)
    if cond.dtype != np.bool_:
        cond = cast(cond, np.bool_)
    node = make_op("Assert", [cond] + [convert(d) for d in data], {"message": str(message)}, name=name)
    return node


__all__ = ["constant", "placeholder", "identity", "stop_gradient", "no_op", "group", "print_", "assert_"]
