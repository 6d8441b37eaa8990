"""NumpyCall (graph/ops/numpy_call.py) has no gradient: numpy computes it from the values when the graph
runs, and what its derivative is the graph cannot know. A gradient reaching one is an error naming the
numpy function and the user's line, rather than a silent zero."""
from __future__ import annotations

from grad.registry import register_gradient
from graph.errors import GraphError
from graph.ops.numpy_call import display_name


@register_gradient("NumpyCall")
def _numpy_call_grad(op, *grads):
    node = op.node
    name = display_name(node.attrs["function"], node.attrs["method"])
    built = f", built at {node.source}" if node.source else ""
    raise GraphError(f"gradients: {name} (node {node.name}{built}) has no gradient: the graph runs numpy's own "
                     f"{name} on the values, and no graph op computes its derivative. Build the value from "
                     "differentiable graph ops, or wrap it in graph.stop_gradient if no gradient should flow "
                     "through it", node.source)
