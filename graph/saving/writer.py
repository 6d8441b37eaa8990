"""`save(graph, path, signature=None)`: a graph, its control-flow records and Variables, to one file."""
from __future__ import annotations

import os

import numpy as np

from graph.control_flow.contexts import CondContext, CondState, WhileContext
from graph.control_flow.tensor_array import TensorArraySpec
from graph.core import Graph
from graph.node import Node, Tensor
from graph.ops import Variable
from graph.saving import records
from graph.saving.archive import write_archive
from graph.saving.signature import Output, Signature
from graph.saving.values import Encoder, encode_dtype, encode_shape


def save(graph: Graph, path: str | os.PathLike, signature: Signature | None = None) -> None:
    """Writes `graph` to `path` in the saved-graph format (docs/export.md).

    Everything a run needs is kept: nodes with their attributes, devices and
    source lines, the cond and loop records, the Variables it uses (current and
    initial values) and, when given, the `signature` that tells which
    placeholders are arguments and which tensors are results.
    """
    _Writer(graph).write(path, signature)


class _Writer:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.node_index = {id(n): i for i, n in enumerate(graph.nodes)}
        self.contexts: list = []
        self.context_index: dict[int, int] = {}
        self.cond_states: list[CondState] = []
        self.cond_state_index: dict[int, int] = {}
        self.variables: list[Variable] = []
        self.variable_index: dict[int, int] = {}
        self.specs: list[TensorArraySpec] = []
        self.spec_index: dict[int, int] = {}
        self.encoder = Encoder(self._ref)
        for v in graph.variables.values():
            self._variable(v)
        for n in graph.nodes:
            self._context(n.context)

    # -- references to graph objects ---------------------------------------------------------
    def _ref(self, value) -> dict | None:
        if isinstance(value, Tensor):
            return {"$tensor": [self._node(value.node), value.index]}
        if isinstance(value, Node):
            return {"$node": self._node(value)}
        if isinstance(value, (CondContext, WhileContext)):
            return {"$context": self._context(value)}
        if isinstance(value, CondState):
            return {"$cond": self._cond_state(value)}
        if isinstance(value, Variable):
            return {"$variable": self._variable(value)}
        if isinstance(value, TensorArraySpec):
            return {"$tensor_array": self._spec(value)}
        if isinstance(value, Output):
            if value.as_list is None:
                return {"$output": value.index}
            if value.number:
                return {"$output_number": [value.index, value.as_list]}
            return {"$output_list": [value.index, value.as_list]}
        return None

    def _node(self, node: Node) -> int:
        k = self.node_index.get(id(node))
        if k is None or node.graph is not self.graph:
            raise ValueError(f"node {node.name} is referred to but is not in the graph being saved")
        return k

    def _context(self, ctx) -> int | None:
        """Registers `ctx` after the contexts around it (a loaded graph builds them outer first)."""
        if ctx is None:
            return None
        k = self.context_index.get(id(ctx))
        if k is None:
            self._context(ctx.outer)
            if isinstance(ctx, CondContext):
                self._cond_state(ctx.state)
            k = self.context_index[id(ctx)] = len(self.contexts)
            self.contexts.append(ctx)
        return k

    def _cond_state(self, state: CondState) -> int:
        k = self.cond_state_index.get(id(state))
        if k is None:
            k = self.cond_state_index[id(state)] = len(self.cond_states)
            self.cond_states.append(state)
            for branch in state.branches:
                self._context(branch)
        return k

    def _variable(self, v: Variable) -> int:
        k = self.variable_index.get(id(v))
        if k is None:
            k = self.variable_index[id(v)] = len(self.variables)
            self.variables.append(v)
        return k

    def _spec(self, spec: TensorArraySpec) -> int:
        k = self.spec_index.get(id(spec))
        if k is None:
            k = self.spec_index[id(spec)] = len(self.specs)
            self.specs.append(spec)
        return k

    # -- the document ------------------------------------------------------------------------
    def write(self, path, signature: Signature | None) -> None:
        document = {"nodes": [self._node_record(n) for n in self.graph.nodes]}
        # encoding a record may register more contexts, states, Variables and specs: until none is left
        contexts, states = [], []
        while len(contexts) < len(self.contexts) or len(states) < len(self.cond_states):
            for k in range(len(contexts), len(self.contexts)):
                ctx = self.contexts[k]
                contexts.append({"kind": records.CONTEXT_KINDS[type(ctx)],
                                 "fields": self._fields(records.context_fields(ctx), f"context {k}")})
            for k in range(len(states), len(self.cond_states)):
                states.append({"fields": self._fields(records.cond_state_fields(self.cond_states[k]), f"cond {k}")})
        document["contexts"], document["cond_states"] = contexts, states
        document["graph"] = {
            "seed": self.graph.seed,
            "last_effect": self._optional_node(self.graph.last_effect(None)),
            "collections": self.encoder.encode(self.graph.collections, "the graph's collections"),
        }
        document["signature"] = None if signature is None else self._signature(signature)
        document["tensor_arrays"] = [self._spec_record(s) for s in self.specs]
        document["variables"] = [self._variable_record(v) for v in self.variables]
        write_archive(path, document, self.encoder.arrays)

    def _fields(self, fields: dict, where: str) -> dict:
        return {name: self.encoder.encode(v, f"field {name!r} of {where}") for name, v in fields.items()}

    def _optional_node(self, node: Node | None) -> int | None:
        return None if node is None else self._node(node)

    def _node_record(self, n: Node) -> dict:
        where = f"node {n.name} ({n.op})"
        return {
            "name": n.name,
            "op": n.op,
            "inputs": [[self._node(t.node), t.index] for t in n.inputs],
            "control_inputs": [self._node(c) for c in n.control_inputs],
            "attrs": {k: self.encoder.encode(v, f"attribute {k!r} of {where}") for k, v in n.attrs.items()},
            "outputs": [[encode_dtype(t.dtype), encode_shape(t.shape)] for t in n.outputs],
            "device": n.device,
            "source": None if n.source is None else [n.source.filename, n.source.lineno, n.source.function],
            "context": self._context(n.context),
        }

    def _signature(self, sig: Signature) -> dict:
        return {
            "name": sig.name,
            "inputs": [[name, [self._node(t.node), t.index]] for name, t in zip(sig.input_names, sig.inputs)],
            "outputs": [self.encoder.encode(o, "an output of the signature") for o in sig.outputs],
            "structure": self.encoder.encode(sig.structure, "the signature's result structure"),
            "effects": self._optional_node(sig.effects),
        }

    def _spec_record(self, spec: TensorArraySpec) -> dict:
        new = spec.new_node
        return {
            "name": spec.name,
            "dtype": None if spec.dtype is None else encode_dtype(spec.dtype),
            "element_shape": encode_shape(spec.element_shape),
            # an element shape of None means "unknown" once something was written, "not learned yet" before
            "shape_learned": spec.shape_known,
            "accumulate": bool(spec.accumulate),
            "size": spec.size,
            "new_node": None if new is None or id(new) not in self.node_index else self._node(new),
        }

    def _variable_record(self, v: Variable) -> dict:
        return {
            "name": v.name,
            "dtype": encode_dtype(v.dtype),
            "shape": list(v.shape),
            "trainable": bool(v.trainable),
            "value": self.encoder.array(np.asarray(v.value)),
            "initial_value": self.encoder.array(np.asarray(v.initial_value)),
        }
