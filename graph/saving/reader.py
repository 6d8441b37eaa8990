"""`load(path)`: a saved graph back, runnable without the code that built it.

Nodes are rebuilt in their saved order with the ops' own shape inference (which
checks that the file is consistent with the op definitions of this code), then
their saved output dtypes and shapes, control inputs and the back edges that
point forward in that order (a loop's NextIteration, inputs rewired after a cond
was built) are restored, then the cond and loop records.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from graph.control_flow.contexts import CondState
from graph.control_flow.tensor_array import TensorArraySpec
from graph.core import CPU, Graph
from graph.errors import GraphError, SourceLocation
from graph.node import Node, Tensor
from graph.op_names import NO_OP
from graph.op_registry import get_opdef
from graph.ops import Variable
from graph.ops.strings import STRING
from graph.saving import records
from graph.saving.archive import Archive
from graph.saving.signature import Output, Signature
from graph.saving.values import Decoder, FormatError, decode_dtype, decode_shape


@dataclass(frozen=True)
class SavedGraph:
    """What a saved-graph file holds: the graph, and the signature it was saved with (or None)."""

    graph: Graph
    signature: Signature | None
    version: int


def load(path: str | os.PathLike) -> Graph:
    """The graph saved at `path` (see `save`); its Variables are new ones holding the saved values.

    Raises FormatError for a file that is not a saved graph, is corrupt, or was
    written in a newer format version than this code reads.
    """
    return load_saved(path).graph


def load_saved(path: str | os.PathLike) -> SavedGraph:
    """The graph saved at `path` together with its signature."""
    with Archive(path) as archive:
        try:
            return _Reader(archive).read()
        except FormatError as e:
            raise FormatError(f"{archive.path}: {e}" if not str(e).startswith(archive.path) else str(e)) from None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            raise FormatError(f"{archive.path} is corrupt: {type(e).__name__}: {e}") from None


def _expect(value, kind, what: str):
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise FormatError(f"{what} is malformed: {value!r:.80}")
    return value


class _Reader:
    def __init__(self, archive: Archive):
        self.archive = archive
        self.doc = archive.document
        self.graph = Graph()
        self.nodes: list[Node] = []
        self.contexts: list = []
        self.cond_states: list[CondState] = []
        self.variables: list[Variable] = []
        self.specs: list[TensorArraySpec] = []
        self.decoder = Decoder(archive.array, self._deref)
        # stands in for an input that is built later (a back edge) while its consumer is built
        self._pending = Node(self.graph, -1, "<loading>", NO_OP, [], [], {}, CPU, None, None)

    def read(self) -> SavedGraph:
        doc = self.doc
        node_records = _expect(doc.get("nodes"), list, "the node list")
        self.variables = [self._variable(r) for r in _expect(doc.get("variables", []), list, "variables")]
        self.specs = [self._spec(r) for r in _expect(doc.get("tensor_arrays", []), list, "tensor arrays")]
        state_records = _expect(doc.get("cond_states", []), list, "cond records")
        context_records = _expect(doc.get("contexts", []), list, "context records")
        self.cond_states = [records.new_cond_state({"source": self.decoder.decode(r["fields"].get("source"))})
                            for r in state_records]
        for r in context_records:
            fields = {k: self.decoder.decode(v) for k, v in r["fields"].items() if k in _CONSTRUCTOR_FIELDS}
            self.contexts.append(records.new_context(r["kind"], fields))
        for k, r in enumerate(node_records):
            self.nodes.append(self._node(k, r, node_records))
        self._finish_nodes(node_records)
        for ctx, r in zip(self.contexts, context_records, strict=True):
            records.fill_context(ctx, {k: self.decoder.decode(v) for k, v in r["fields"].items()})
        for state, r in zip(self.cond_states, state_records, strict=True):
            records.fill_cond_state(state, {k: self.decoder.decode(v) for k, v in r["fields"].items()})
        for spec, r in zip(self.specs, doc.get("tensor_arrays", []), strict=True):
            if r.get("new_node") is not None:
                spec.new_node = self._node_ref(r["new_node"])
        self._finish_graph(_expect(doc.get("graph", {}), dict, "the graph record"))
        signature = None if doc.get("signature") is None else self._signature(doc["signature"])
        try:
            self.graph.validate()
        except GraphError as e:
            raise FormatError(f"the graph it holds is not well formed: {e}") from None
        return SavedGraph(self.graph, signature, self.archive.version)

    # -- references ------------------------------------------------------------------------------
    def _deref(self, tag: str, payload):
        if tag == "$node":
            return self._node_ref(payload)
        if tag == "$tensor":
            node, port = payload
            return self._tensor_ref(node, port)
        if tag == "$context":
            return self._table(self.contexts, payload, "context")
        if tag == "$cond":
            return self._table(self.cond_states, payload, "cond")
        if tag == "$variable":
            return self._table(self.variables, payload, "Variable")
        if tag == "$tensor_array":
            return self._table(self.specs, payload, "TensorArray")
        if tag == "$output":
            return Output(_expect(payload, int, "an output reference"))
        if tag in ("$output_list", "$output_number"):
            index, items = _expect(payload, list, "an output reference")
            items = _expect(items, str, "an output's Python type")
            if tag == "$output_number" and items not in ("int", "float", "bool"):
                raise FormatError(f"an output number of type {items!r}")
            return Output(_expect(index, int, "an output reference"), items, number=tag == "$output_number")
        raise FormatError(f"unknown value tag {tag!r}")

    @staticmethod
    def _table(table: list, k, what: str):
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(table):
            raise FormatError(f"reference to {what} {k!r}, which is not (yet) defined")
        return table[k]

    def _node_ref(self, k) -> Node:
        return self._table(self.nodes, k, "node")

    def _tensor_ref(self, k, port) -> Tensor:
        node = self._node_ref(k)
        if not isinstance(port, int) or not 0 <= port < len(node.outputs):
            raise FormatError(f"reference to output {port!r} of node {node.name}, which has {len(node.outputs)}")
        return node.outputs[port]

    # -- tables ------------------------------------------------------------------------------
    def _variable(self, r: dict) -> Variable:
        dtype = decode_dtype(r["dtype"])
        initial, value = self.archive.array(r["initial_value"]), self.archive.array(r["value"])
        shape = tuple(_expect(r["shape"], list, f"the shape of Variable {r.get('name')!r}"))
        if initial.shape != shape or value.shape != shape:
            raise FormatError(f"the values of Variable {r['name']!r} do not have its shape {shape}")
        v = Variable(initial, name=str(r["name"]), trainable=bool(r["trainable"]), dtype=dtype)
        v.load(value)
        return v

    def _spec(self, r: dict) -> TensorArraySpec:
        dtype = None if r["dtype"] is None else decode_dtype(r["dtype"])
        size = r.get("size")  # graphs saved before arrays kept a fixed size lack it
        # shape_learned with no element shape: learned, from values whose shape was unknown
        return TensorArraySpec(dtype, decode_shape(r["element_shape"]), str(r["name"]), bool(r["accumulate"]),
                               None if size is None else int(size), shape_known=bool(r["shape_learned"]))

    # -- nodes -------------------------------------------------------------------------------
    def _node(self, k: int, r: dict, node_records: list) -> Node:
        graph = self.graph
        op = _expect(r["op"], str, f"the op of node {k}")
        try:
            opdef = get_opdef(op)
        except KeyError:
            raise FormatError(f"node {r.get('name')!r} is a {op!r} op, which this flowgraph does not define") from None
        inputs = []
        for j, port in _expect(r["inputs"], list, f"the inputs of node {k}"):
            if isinstance(j, int) and not isinstance(j, bool) and k <= j < len(node_records):
                dtype, shape = node_records[j]["outputs"][port]
                inputs.append(Tensor(self._pending, port, decode_dtype(dtype), decode_shape(shape)))
            else:
                inputs.append(self._tensor_ref(j, port))
        attrs = {name: self.decoder.decode(v) for name, v in _expect(r["attrs"], dict, f"node {k}'s attrs").items()}
        ctx = None if r["context"] is None else self._table(self.contexts, r["context"], "context")
        if opdef.ordered:
            # building an ordered op chains it after the context's last effect; the saved control inputs
            # replace that chain, so any node will do as the last effect (and no pivot is built for it)
            graph.set_last_effect(ctx, self._pending)
        try:
            node = graph.create_node(op, inputs, attrs, name=_expect(r["name"], str, f"node {k}'s name"),
                                     source=self._source(r["source"]), context=ctx)
        except (GraphError, TypeError, ValueError, IndexError, KeyError) as e:
            raise FormatError(f"node {r['name']!r} ({op}) does not agree with the op's definition: {e}") from None
        if node.name != r["name"]:
            raise FormatError(f"two nodes are named {r['name']!r}")
        node.device = _expect(r["device"], str, f"node {node.name}'s device")
        node.source = self._source(r["source"])
        saved = _expect(r["outputs"], list, f"node {node.name}'s outputs")
        if len(saved) != len(node.outputs):
            raise FormatError(f"node {node.name} ({op}) has {len(saved)} outputs in the file, the op gives "
                              f"{len(node.outputs)}")
        for t, (dtype, shape) in zip(node.outputs, saved, strict=True):
            decoded = decode_dtype(dtype)
            if (decoded is STRING) != (t.dtype is STRING):  # text only where the op makes text
                raise FormatError(f"node {node.name} ({op}) has an output of dtype {dtype} in the file, the op "
                                  f"gives {t.dtype}")
            t.dtype, t.shape = decoded, decode_shape(shape)
        return node

    @staticmethod
    def _source(s) -> SourceLocation | None:
        if s is None:
            return None
        filename, line, function = s
        return SourceLocation(str(filename), int(line), str(function))

    def _finish_nodes(self, node_records: list) -> None:
        for node, r in zip(self.nodes, node_records, strict=True):
            for i, (j, port) in enumerate(r["inputs"]):
                if node.inputs[i].node is self._pending:
                    node.update_input(i, self._tensor_ref(j, port))
            self.graph.update_node(node, control_inputs=[self._node_ref(c) for c in r["control_inputs"]])

    def _finish_graph(self, r: dict) -> None:
        graph = self.graph
        # name scopes (a loop's frame name among them) count as used, as they did in the saved graph: a
        # loop built later gets a new frame name
        scopes = {name.rsplit("/", k)[0] for n in self.nodes for name in [n.name]
                  for k in range(1, name.count("/") + 1)}
        for scope in sorted(scopes):
            graph.unique_name(scope, mark_used=True)
        for ctx in self.contexts:
            graph.set_last_effect(ctx, None)
        last = r.get("last_effect")
        graph.set_last_effect(None, None if last is None else self._node_ref(last))
        graph.seed = r.get("seed")
        collections = self.decoder.decode(r.get("collections", {"$dict": []}))
        graph.collections.update(_expect(collections, dict, "the graph's collections"))
        for v in self.variables:
            graph.variables[v.name] = v

    def _signature(self, r: dict) -> Signature:
        inputs, names = [], []
        for name, (k, port) in r["inputs"]:
            names.append(_expect(name, str, "an input name"))
            inputs.append(self._tensor_ref(k, port))
        outputs = tuple(self.decoder.decode(o) for o in r["outputs"])
        for o in outputs:
            if not isinstance(o, (Tensor, Variable)):
                raise FormatError(f"a signature output is a {type(o).__name__}")
        effects = None if r.get("effects") is None else self._node_ref(r["effects"])
        try:
            return Signature(tuple(inputs), tuple(names), outputs, self.decoder.decode(r["structure"]), effects,
                             str(r.get("name", "")))
        except (TypeError, ValueError) as e:
            raise FormatError(f"the signature is malformed: {e}") from None


# what `records.new_context` reads; decoded before any node exists (they refer to no node)
_CONSTRUCTOR_FIELDS = frozenset({"frame_name", "parallel_iterations", "outer", "source", "names", "swap_memory",
                                 "state", "branch"})
