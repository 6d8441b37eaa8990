"""What lowering one node works with: the `Scope` it is computed in, an `Emitter`, and `ExportError`."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graph.errors import GraphError
from graph.node import Node
from graph.onnx.builder import GraphBuilder, elem_type


class ExportError(GraphError):
    """A graph that ONNX cannot express as it is: names the node, its op and the user's line that built it."""

    def __init__(self, node: Node, message: str):
        super().__init__(f"cannot export {node.op} node {node.name} to ONNX: {message}", node.source)
        self.node = node


@dataclass(eq=False)
class Scope:
    """Where the nodes of one control-flow context are computed during an export.

    `builder` is the ONNX graph being written (a cond branch and a loop body have
    their own; a loop condition evaluated before the loop writes into the
    enclosing one). `memo` maps a node (by id) to the ONNX names of its outputs
    computed here; a loop's Merges are bound to its carried values up front.
    Inner scopes see the values of the scopes around them, as ONNX subgraphs see
    outer names.
    """

    context: object
    builder: GraphBuilder
    parent: "Scope | None"
    memo: dict[int, tuple] = field(default_factory=dict)

    def owner(self, context) -> "Scope | None":
        """The innermost scope, from this one outwards, that computes `context`'s nodes."""
        s = self
        while s is not None and s.context is not context:
            s = s.parent
        return s


class Emitter:
    """Writes the ONNX nodes of one graph node into a builder, named after it."""

    def __init__(self, builder: GraphBuilder, node: Node):
        self.builder = builder
        self.node = node

    def __call__(self, op_type: str, *inputs: str, outputs: int = 1, **attrs) -> str | list[str]:
        outs = self.builder.add(op_type, list(inputs), self.node.name, outputs, **attrs)
        return outs[0] if outputs == 1 else outs

    def const(self, value, dtype=None) -> str:
        """A constant (cached per ONNX graph: a loop body refers to each literal once)."""
        arr = np.asarray(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        name = self.builder.constants.get(key)
        if name is None:
            name = self.builder.constants[key] = self.builder.constant(arr, f"{self.node.name}/const")
        return name

    def i64(self, *values) -> str:
        """A 1-D int64 constant (axes, shapes, slice bounds)."""
        return self.const(np.asarray(values, np.int64))

    def cast(self, name: str, from_dtype, to_dtype) -> str:
        if np.dtype(from_dtype) == np.dtype(to_dtype):
            return name
        return self("Cast", name, to=elem_type(to_dtype))

    def input_as(self, ins: list[str], k: int, dtype) -> str:
        """Input `k` of the node, cast to `dtype`."""
        return self.cast(ins[k], self.node.inputs[k].dtype, dtype)

    @property
    def out_dtype(self):
        return self.node.outputs[0].dtype

    def fail(self, message: str) -> ExportError:
        return ExportError(self.node, message)
