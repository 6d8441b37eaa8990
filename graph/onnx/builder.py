"""ONNX protos under construction: the model's names, one `GraphBuilder` per (sub)graph, value types.

`onnx` is an optional dependency (the `onnx` extra): this module imports
without it, and `require_onnx()` says how to install it when an export needs it.
"""
from __future__ import annotations

import heapq
import itertools
import re

import numpy as np

from graph import dtypes as _dt

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator
except ImportError:  # the `onnx` extra is not installed: export() raises with the command that installs it
    onnx = TensorProto = helper = numpy_helper = ReferenceEvaluator = None

# ONNX operator set and IR version of exported models: the IR version is the newest that
# onnxruntime >= 1.18 (the `onnx` extra's floor) reads; onnx >= 1.17 would otherwise write a newer one
OPSET = 18
IR_VERSION = 10

_ELEM_TYPES = {
    "float32": "FLOAT", "float64": "DOUBLE", "float16": "FLOAT16", "int64": "INT64", "int32": "INT32",
    "int16": "INT16", "int8": "INT8", "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32",
    "uint64": "UINT64", "bool": "BOOL",
}


def require_onnx() -> None:
    if onnx is None:
        raise ImportError("exporting to ONNX needs the onnx package: pip install 'flowgraph-ml[onnx]' "
                          "(onnx>=1.17, onnxruntime>=1.18)")


def elem_type(dtype) -> int:
    """The TensorProto element type of a numpy dtype."""
    name = _ELEM_TYPES.get(np.dtype(dtype).name)
    if name is None:
        raise TypeError(f"ONNX has no tensors of dtype {np.dtype(dtype)}")
    return getattr(TensorProto, name)


def tensor_type(dtype, shape, dim_prefix: str = ""):
    """A tensor TypeProto; unknown dims get no value (or `dim_prefix` + axis as a symbolic name)."""
    dims = None if shape is None else [
        d if d is not None else (f"{dim_prefix}_{i}" if dim_prefix else None) for i, d in enumerate(shape)]
    return helper.make_tensor_type_proto(elem_type(dtype), dims)


def sequence_type(dtype):
    """The TypeProto of a sequence of tensors of `dtype` (a TensorArray)."""
    return helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem_type(dtype), None))


class Names:
    """Unique value and node names for one model (its subgraphs included: ONNX names are model-wide)."""

    def __init__(self):
        self._used: set[str] = set()
        self._counter = itertools.count()

    def new(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_./:-]", "_", hint) or "v"
        name = base
        while name in self._used:
            name = f"{base}__{next(self._counter)}"
        self._used.add(name)
        return name

    def reserve(self, name: str) -> str:
        if name in self._used:
            raise ValueError(f"the name {name!r} is used twice in the model")
        self._used.add(name)
        return name


class GraphBuilder:
    """The nodes, inputs, outputs and initializers of one ONNX graph (the model's or a Loop/If body)."""

    def __init__(self, names: Names, name: str):
        self.names = names
        self.name = name
        self.nodes: list = []
        self.inputs: list = []
        self.outputs: list = []
        self.initializers: list = []
        self.value_info: dict[str, object] = {}  # value -> its declared type (graph/onnx/matmul.py says why)
        self._computed: set[str] = set()  # the values this graph's nodes compute
        self.constants: dict[tuple, str] = {}  # (dtype, shape, bytes) -> the Constant's value name
        # Loop and If nodes with their bodies, attached when this graph is built: until then an If can
        # still get outputs (values of a branch that a later part of the graph reads)
        self.bodies: list[tuple[object, dict[str, "GraphBuilder"]]] = []

    def add(self, op_type: str, inputs: list[str], hint: str, outputs: int = 1, **attrs) -> list[str]:
        """Appends an `op_type` node; returns its `outputs` new value names (derived from `hint`)."""
        outs = [self.names.new(f"{hint}:{k}" if outputs > 1 else hint) for k in range(outputs)]
        node_name = self.names.new(f"{hint}/{op_type}")
        self._computed.update(outs)
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=node_name, **attrs))
        return outs

    def add_with_bodies(self, op_type: str, inputs: list[str], hint: str, outputs: int,
                        bodies: dict[str, "GraphBuilder"], **attrs) -> tuple[object, list[str]]:
        """Appends a node with subgraph attributes (`bodies`, built with this graph); returns the
        NodeProto (whose outputs may still grow) and its output names."""
        outs = self.add(op_type, inputs, hint, outputs, **attrs)
        node = self.nodes[-1]
        self.bodies.append((node, bodies))
        return node, outs

    def constant(self, value: np.ndarray, hint: str) -> str:
        value = np.asarray(value)
        return self.add("Constant", [], hint, value=numpy_helper.from_array(value))[0]

    def initializer(self, value: np.ndarray, hint: str) -> str:
        name = self.names.new(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def input(self, name: str, type_proto) -> None:
        self.inputs.append(helper.make_value_info(name, type_proto))

    def declare(self, value: str, type_proto) -> None:
        """States the type of `value` in the model (the graph's `value_info`), where one of this graph's nodes
        computes it; an input or an outer value keeps the type it has there."""
        if value in self._computed:
            self.value_info.setdefault(value, helper.make_value_info(value, type_proto))

    def output(self, value: str, type_proto, hint: str, exact_name: str | None = None) -> str:
        """Makes `value` an output of this graph, through an Identity: an output must be computed in its
        own graph (not be an input or an outer value), and may not be listed twice. `exact_name`, when
        given, is the output's name (reserved with `Names.reserve`)."""
        if exact_name is None:
            out = self.add("Identity", [value], hint)[0]
        else:
            out = exact_name
            self.nodes.append(helper.make_node("Identity", [value], [out], name=self.names.new(f"{hint}/Identity")))
        self.outputs.append(helper.make_value_info(out, type_proto))
        return out

    def build(self):
        """The GraphProto (once: building attaches the bodies to their nodes)."""
        order = self._sorted()
        for node, bodies in self.bodies:
            node.attribute.extend(helper.make_attribute(k, b.build()) for k, b in bodies.items())
        return helper.make_graph(order, self.name, self.inputs, self.outputs, self.initializers,
                                 value_info=list(self.value_info.values()))

    def outer_names(self) -> set[str]:
        """The names this graph (its bodies included) reads without computing them."""
        defined = {vi.name for vi in self.inputs} | {t.name for t in self.initializers}
        used = set()
        for node in self.nodes:
            used.update(node.input)
            defined.update(node.output)
        for _, bodies in self.bodies:
            for b in bodies.values():
                used |= b.outer_names()
        return used - defined - {""}

    def _sorted(self) -> list:
        """The nodes in an order where each comes after the nodes computing its inputs and the outer
        values its bodies read (an If gets outputs, and so reads values, after it was added), otherwise
        in the order they were added."""
        bodies = {id(node): bs for node, bs in self.bodies}
        producer = {name: k for k, node in enumerate(self.nodes) for name in node.output}
        waits_for: list[set[int]] = []
        for k, node in enumerate(self.nodes):
            names = set(node.input)
            for b in bodies.get(id(node), {}).values():
                names |= b.outer_names()
            waits_for.append({producer[n] for n in names if n in producer and producer[n] != k})
        consumers: dict[int, list[int]] = {}
        for k, deps in enumerate(waits_for):
            for d in deps:
                consumers.setdefault(d, []).append(k)
        ready = [k for k, deps in enumerate(waits_for) if not deps]
        heapq.heapify(ready)
        order = []
        while ready:
            k = heapq.heappop(ready)
            order.append(self.nodes[k])
            for c in consumers.get(k, ()):
                waits_for[c].discard(k)
                if not waits_for[c]:
                    heapq.heappush(ready, c)
        if len(order) != len(self.nodes):
            raise RuntimeError(f"ONNX graph {self.name!r} has a cycle")
        return order


def value_type(dtype, shape, sequence_of=None, dim_prefix: str = ""):
    """The TypeProto of a graph value: a tensor, or (dtype variant) a sequence of `sequence_of` tensors."""
    if dtype is _dt.variant:
        return sequence_type(sequence_of)
    return tensor_type(dtype, shape, dim_prefix)


def build_model(root: GraphBuilder, path=None):
    """The checked ModelProto of main graph `root` at OPSET / IR_VERSION; saved to `path` when given."""
    model = helper.make_model(root.build(), opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                              producer_name="flowgraph")
    onnx.checker.check_model(model)
    if path is not None:
        onnx.save(model, path)
    return model


def evaluate(root: GraphBuilder) -> list[np.ndarray]:
    """The outputs of main graph `root`, which has no inputs, by onnx's reference evaluator."""
    model = helper.make_model(root.build(), opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    return ReferenceEvaluator(model).run(None, {})
