"""`export(graph, inputs, outputs, path)`: the ONNX model computing `outputs` from the placeholders `inputs`."""
from __future__ import annotations

import os
from typing import Collection, Mapping, Sequence

from graph.core import Graph
from graph.node import Node, Tensor
from graph.onnx import dynamic_axes as dims
from graph.onnx.builder import build_model, require_onnx, tensor_type
from graph.onnx.exporter import DROPPABLE, Walk, check_effects
from graph.op_names import PLACEHOLDER


def export(graph: Graph, inputs: Sequence[Tensor], outputs: Sequence[Tensor], path: str | os.PathLike | None = None,
           *, input_names: Sequence[str] | None = None, output_names: Sequence[str] | None = None,
           drop: Collection[str] = (), effects: Sequence[Node] = (), model_name: str = "flowgraph",
           dynamic_axes: Mapping[str, Mapping[int, str] | Sequence[int]] | None = None):
    """An onnx.ModelProto that computes `outputs` (tensors of `graph`) from `inputs` (its placeholders).

    The model's inputs are `inputs` in order, named `input_names` (default: the
    placeholders' names), with their dtypes and shapes (unknown dims symbolic);
    its outputs are `outputs`, named `output_names` (default `output_0`, ...).
    Variables the outputs read become initializers holding their current values.
    `drop` names effect ops to leave out ("Print", "Assert"); any other op ONNX
    cannot express raises ExportError naming the node and the line that built it.
    `effects` are nodes a run must also run (a traced function's final effect):
    the prints and asserts they wait for must be dropped, and Variable
    assignments among them refuse the export, like those the outputs need.
    `dynamic_axes` names dims of inputs and outputs, by their names: `{"x": {0: "batch"},
    "output_0": {0: "batch"}}` (a list of axes names them "x_0", ...); a named dim must be unknown
    in the graph (graph/onnx/dynamic_axes.py). Other unknown dims get names of their own.
    The model is checked with onnx.checker and, when `path` is given, saved there.
    """
    require_onnx()
    inputs, outputs = list(inputs), list(outputs)
    unknown = set(drop) - DROPPABLE
    if unknown:
        raise ValueError(f"drop= takes {sorted(DROPPABLE)}, got {sorted(unknown)}")
    for t in [*inputs, *outputs]:
        if not isinstance(t, Tensor) or t.graph is not graph:
            raise ValueError(f"{t!r} is not a tensor of the graph being exported")
    for t in inputs:
        if t.op != PLACEHOLDER:
            raise ValueError(f"the inputs of an export are placeholders; {t.name} is a {t.op}")
    input_names = [t.node.name for t in inputs] if input_names is None else list(input_names)
    output_names = [f"output_{k}" for k in range(len(outputs))] if output_names is None else list(output_names)
    if len(input_names) != len(inputs) or len(output_names) != len(outputs):
        raise ValueError("give one name per input and one per output")
    if len(set(input_names) | set(output_names)) != len(input_names) + len(output_names):
        raise ValueError(f"input and output names must all differ: {input_names} {output_names}")
    axes = dims.normalize(dynamic_axes)
    dims.check(axes, {**dict(zip(input_names, inputs)), **dict(zip(output_names, outputs))})
    check_effects(effects, drop)
    walk = Walk(graph, {id(t.node): name for t, name in zip(inputs, input_names)}, outputs, output_names, drop)
    root = walk.run(outputs, output_names)
    for t, name in zip(inputs, input_names):
        root.input(name, tensor_type(t.dtype, t.shape, name))
    root.name = model_name
    dims.name_dims(root.inputs, axes)
    dims.name_dims(root.outputs, axes)
    return build_model(root, None if path is None else os.fspath(path))
