"""TensorArrays as ONNX sequences: one sequence value per TensorArray handle, carried by Loop and If like any value.

An array of fixed size whose elements have a known shape starts as that many
zeros ("slots"): a write replaces its slot, in any order. Any other array
starts empty and a write appends, which is where it belongs when writes come in
index order (appending to a list, a loop writing iteration i at i); a write out of
index order makes onnxruntime fail the run (an invalid sequence index) rather
than give other values than the graph's; reading the size of a fixed-size array of unknown element shape is refused,
since the sequence only holds what was written.
"""
from __future__ import annotations

import numpy as np

from graph import shapes as _sh
from graph.node import Node
from graph.onnx.builder import GraphBuilder, elem_type, tensor_type
from graph.onnx.lowering import Emitter

_INT64 = np.dtype(np.int64)
_DEFAULT = np.dtype(np.float64)  # the element dtype of an array nothing is ever written to


class TensorArrays:
    """The TensorArray lowerings of one graph (which arrays have slots is a property of the whole graph)."""

    def __init__(self, graph):
        news: dict[int, list[Node]] = {}
        for n in graph.nodes:
            if n.op == "TensorArrayNew":
                news.setdefault(id(n.attrs["spec"]), []).append(n)
        self._slotted = {key for key, nodes in news.items()
                         if all(_has_slots(n) for n in nodes)}
        self.lowerings = {
            "TensorArrayNew": self.new, "TensorArrayWrite": self.write, "TensorArrayRead": self.read,
            "TensorArraySize": self.size, "TensorArrayStack": self.stack, "TensorArrayGather": self.gather,
            "TensorArrayUnstack": self.unstack, "TensorArrayScatter": self.scatter,
            "TensorArrayGrad": self.grad,
        }

    def _slots(self, node: Node) -> bool:
        return id(node.attrs["spec"]) in self._slotted

    def new(self, em: Emitter, node: Node, ins: list) -> list:
        spec = node.attrs["spec"]
        if node.attrs["accumulate"]:
            return self.grad(em, node, ins)
        dtype = spec.dtype if spec.dtype is not None else _DEFAULT
        if not self._slots(node):
            return [em("SequenceEmpty", dtype=elem_type(dtype))]
        size = em("Reshape", em.input_as(ins, 0, _INT64), em.i64(1))
        shape = em("Concat", size, em.i64(*spec.element_shape), axis=0)
        zeros = em("Expand", em.const(0, dtype), shape)
        return [em("SplitToSequence", zeros, axis=0, keepdims=0)]

    def write(self, em: Emitter, node: Node, ins: list) -> list:
        spec = node.attrs["spec"]
        index, value = em.input_as(ins, 1, _INT64), em.input_as(ins, 2, spec.dtype)
        seq = ins[0]
        if self._slots(node):
            seq = em("SequenceErase", seq, index)
            return [em("SequenceInsert", seq, value, index)]
        # the sequence holds the elements written so far, so a write is only where it belongs at the end: a
        # write at any other index goes to position length + 1, which onnxruntime refuses ("invalid sequence
        # index") instead of shifting the elements after it
        length = em("SequenceLength", seq)
        in_order = em("Equal", index, length)
        position = em("Where", in_order, index, em("Add", length, em.const(1, _INT64)))
        return [em("SequenceInsert", seq, value, position)]

    def read(self, em: Emitter, node: Node, ins: list) -> list:
        return [em("SequenceAt", ins[0], em.input_as(ins, 1, _INT64))]

    def size(self, em: Emitter, node: Node, ins: list) -> list:
        spec = node.attrs["spec"]
        fixed = spec.new_node is not None and not spec.new_node.attrs["dynamic_size"]
        if fixed and not self._slots(node):
            raise em.fail(f"the size of fixed-size TensorArray {spec.name!r}, whose element shape is unknown, "
                          "is not what its exported sequence holds (the elements written so far); give the "
                          "array an element_shape")
        return [em("SequenceLength", ins[0])]

    def stack(self, em: Emitter, node: Node, ins: list) -> list:
        return [_stacked(em, ins[0], node.attrs["spec"])]

    def gather(self, em: Emitter, node: Node, ins: list) -> list:
        return [em("Gather", _stacked(em, ins[0], node.attrs["spec"]), em.input_as(ins, 1, _INT64), axis=0)]

    def unstack(self, em: Emitter, node: Node, ins: list) -> list:
        return [em("SplitToSequence", em.input_as(ins, 1, node.attrs["spec"].dtype), axis=0, keepdims=0)]

    def scatter(self, em: Emitter, node: Node, ins: list) -> list:
        raise em.fail("TensorArray scatter has no exported form; write the elements one by one")

    def grad(self, em: Emitter, node: Node, ins: list) -> list:
        raise em.fail("gradient TensorArrays (accumulating writes) have no exported form; export the forward "
                      "computation")


def _has_slots(node: Node) -> bool:
    spec = node.attrs["spec"]
    return not node.attrs["dynamic_size"] and spec.dtype is not None and _sh.is_fully_defined(spec.element_shape)


def _stacked(em: Emitter, seq: str, spec) -> str:
    """The elements joined along a new first axis; an empty sequence gives zero rows of the element shape."""
    joined_type = tensor_type(spec.dtype, None if spec.element_shape is None else (None, *spec.element_shape))
    if not _sh.is_fully_defined(spec.element_shape):
        # the executor cannot stack an empty array of unknown element shape either
        return em("ConcatFromSequence", seq, axis=0, new_axis=1)
    names = em.builder.names
    empty, full = GraphBuilder(names, f"{em.node.name}/empty"), GraphBuilder(names, f"{em.node.name}/joined")
    empty.output(empty.constant(np.zeros((0, *spec.element_shape), spec.dtype), f"{em.node.name}/no_rows"),
                 joined_type, f"{em.node.name}/empty_out")
    joined = full.add("ConcatFromSequence", [seq], f"{em.node.name}/concat", axis=0, new_axis=1)[0]
    full.output(joined, joined_type, f"{em.node.name}/joined_out")
    is_empty = em("Equal", em("SequenceLength", seq), em.const(0, _INT64))
    _, (out,) = em.builder.add_with_bodies("If", [is_empty], em.node.name, 1,
                                           {"then_branch": empty, "else_branch": full})
    return out
