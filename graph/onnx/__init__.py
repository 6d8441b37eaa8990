"""ONNX export: `graph.onnx.export(graph, inputs, outputs, path)` -> onnx.ModelProto.

Loops become ONNX `Loop`, conds `If`, TensorArrays sequences, Variables
initializers, and numpy-like ops their ONNX operators with the graph's dtypes
(docs/export.md lists the mapping). Needs the optional `onnx` package
(`pip install 'flowgraph-ml[onnx]'`); the models use opset `OPSET` and IR version
`IR_VERSION`, which onnxruntime >= 1.18 runs.
"""
from graph.onnx.builder import IR_VERSION, OPSET
from graph.onnx.lowering import ExportError
from graph.onnx.model import export

__all__ = ["export", "ExportError", "OPSET", "IR_VERSION"]
