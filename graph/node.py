"""The IR's records: `Node`, its output `Tensor`s, and the `ControlFlowContext` protocol of `Node.context`.

A node records the control-flow context it was built in: a cond branch or a
while loop body (None at the top level). The contexts themselves are built by
graph/control_flow/contexts.py, which needs the graph builder; the protocol
below is what the IR asks of them, so that this module and graph/core.py need
not import them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from graph import shapes as _sh
from graph.errors import (
    SourceLocation,
    SymbolicBoolError,
    SymbolicIndexError,
    SymbolicValueError,
)
from graph.op_names import ENTER, EXIT, IDENTITY, PLACEHOLDER, STOP_GRADIENT, SWITCH

# Ops that pass a value on unchanged: a tensor seen through them is described as the value they pass.
_PASS_THROUGH = frozenset({IDENTITY, ENTER, EXIT, SWITCH, STOP_GRADIENT})


class Tensor:
    """A symbolic value: output `index` of `node`, with a dtype and a partial shape.

    Arithmetic, comparisons, indexing and numpy functions on tensors build graph
    nodes (installed by `graph.ops.tensor_methods` and `graph.ops.numpy_api`). Python
    cannot branch on one: `bool(t)` raises with a pointer to the transpiler,
    `cond` and `while_loop`.
    """

    __slots__ = ("node", "index", "dtype", "shape", "__weakref__")
    __array_priority__ = 1000  # numpy defers binary operators to us

    def __init__(self, node: "Node", index: int, dtype, shape):
        self.node = node
        self.index = index
        self.dtype = dtype
        self.shape = shape

    @property
    def graph(self):
        """The Graph that holds this tensor's node."""
        return self.node.graph

    @property
    def op(self) -> str:
        return self.node.op

    @property
    def name(self) -> str:
        return f"{self.node.name}:{self.index}"

    @property
    def ndim(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    def __repr__(self) -> str:
        return f"<Tensor {self.name} {self.dtype}{_sh.format_shape(self.shape)}>"

    def describe(self) -> str:
        """This tensor as error messages name it for the user: `input 'n'` (a placeholder), `loop variable
        'i' of the loop at f.py:3`, `the value computed at f.py:12`; its graph name (`while/Switch_4:1`)
        only when nothing better is known. Values passed on unchanged (a captured value's Switch or
        Enter, an Identity) are described as the value they pass."""
        t = self
        while True:
            node = t.node
            if node.op == PLACEHOLDER:
                return f"input {node.name!r}"
            named = node.context.name_of(t) if node.context is not None else None
            if named is not None:
                return named
            if node.op not in _PASS_THROUGH or not node.inputs:
                break
            t = node.inputs[0]
        return f"the value computed at {node.source.short}" if node.source is not None else f"graph tensor {self.name}"

    def _typed(self) -> str:
        kind = f"{self.dtype}{_sh.format_shape(self.shape)}"
        return f"{self.describe()} ({'an' if kind[0] in 'aeiou' else 'a'} {kind} graph tensor)"

    __hash__ = object.__hash__

    def __bool__(self):
        raise SymbolicBoolError(
            f"the truth value of {self._typed()} is only known when the graph runs; "
            "Python `if`/`while`/`and`/`or`/`not` cannot decide on it. Decorate the function with "
            "@transpile.function to convert such control flow, or build it with graph.cond / graph.while_loop")

    def __iter__(self):
        # as numpy iterates an array: its rows, where the graph knows how many (`x, y = t` of a float64[2])
        if self.shape is not None and self.shape and self.shape[0] is not None:
            return (self[i] for i in range(self.shape[0]))
        raise SymbolicBoolError(
            f"cannot iterate over {self._typed()} in Python (unpacking, list(), a comprehension, ...): "
            "how many elements it has is only known when the graph runs. Write a `for` statement in a @transpile.function "
            "(a `for` over a tensor becomes a graph loop; comprehensions and unpacking are not converted), index "
            "it (t[0], t[1]) or use graph.unstack, or build the loop with graph.while_loop / graph.map_fn")

    def __contains__(self, item):
        raise SymbolicBoolError(
            f"`x in t` on {self._typed()} would need its values while the graph is built; "
            "use graph.reduce_any(graph.equal(t, x))")

    def __len__(self):
        if self.shape is not None and self.shape and self.shape[0] is not None:
            return self.shape[0]
        raise SymbolicIndexError(
            f"len() of {self._typed()} is not known when "
            "the graph is built. Use graph.shape(t)[0], or decorate the function with @transpile.function "
            "so that len() is converted")

    def __index__(self):
        raise SymbolicIndexError(
            f"{self._typed()} cannot be used as a Python index or size (a list index, a repeat count, a "
            "shape): its value is only known when the graph runs. Index a tensor instead (np.stack(a_list)[i], "
            "graph.gather), use graph ops (graph.reshape with a tensor shape), or make it a Python value (a "
            "Python number, or an argument named in transpile.function's static_argnames)")

    def __float__(self):
        raise SymbolicValueError(f"float() of {self._typed()}: its value is only known when the graph runs. "
                                 "Use graph.cast(t, np.float64). Python's math functions (math.exp(t), math.sqrt(t), "
                                 "...) call float() on their argument: use numpy's (np.exp(t)), which build graph "
                                 "ops; in a @transpile.function, math.exp(t) itself works")

    def __int__(self):
        raise SymbolicValueError(f"int() of {self._typed()}: its value is only known when the graph runs. "
                                 "Use graph.cast(t, np.int64)")


class Node:
    """One operation in a graph.

    A node is changed after it was built only through its graph, which records the
    change in `Graph.version` (so plans and the graph index are derived again): a
    loop's Merge gets its NextIteration back edge after the body is built
    (`update_input`), effect ordering adds control inputs (`add_control_input`), and
    `Graph.update_node` serves the rewrites that add to a node (a gradient saving one
    more value in a stack slot: its push's inputs, its pop's outputs; a TensorArray
    learning its element dtype). Nothing else changes a node once built.
    """

    __slots__ = ("graph", "id", "name", "op", "inputs", "control_inputs", "attrs", "device",
                 "source", "context", "outputs", "__weakref__")

    def __init__(self, graph, id_: int, name: str, op: str, inputs: list[Tensor], control_inputs: list["Node"],
                 attrs: dict, device: str, source: SourceLocation | None, context: ControlFlowContext | None):
        self.graph = graph
        self.id = id_
        self.name = name
        self.op = op
        self.inputs: list[Tensor] = inputs
        self.control_inputs: list[Node] = control_inputs
        self.attrs: dict[str, Any] = attrs
        self.device: str = device
        self.source: SourceLocation | None = source
        self.context = context  # where the node's outputs live: a cond branch, a loop body, or None (root)
        self.outputs: tuple[Tensor, ...] = ()

    @property
    def output(self) -> Tensor:
        if len(self.outputs) != 1:
            raise ValueError(f"node {self.name} ({self.op}) has {len(self.outputs)} outputs")
        return self.outputs[0]

    @property
    def frame(self) -> LoopFrame | None:
        """The loop whose frame this node's outputs live in (None: root)."""
        return self.context.frame if self.context is not None else None

    def update_input(self, index: int, tensor: Tensor) -> None:
        """Replaces input `index` (a Merge's back edge once the loop body is built, a gated output)."""
        inputs = list(self.inputs)
        inputs[index] = tensor
        self.graph.update_node(self, inputs=inputs)

    def add_control_input(self, node: "Node") -> None:
        """Makes this node also wait for `node` (effect ordering, pivots); a no-op if it already does."""
        if node not in self.control_inputs:
            self.graph.update_node(self, control_inputs=[*self.control_inputs, node])

    def __repr__(self) -> str:
        return f"<Node {self.name} {self.op}>"


# --------------------------------------------------------------------------- control-flow contexts

@dataclass(frozen=True, slots=True)
class DotCluster:
    """How `Graph.to_dot()` draws one control-flow context.

    The two branches of a cond are one construct, drawn as one box (collapsed) or
    one cluster holding a sub-cluster per branch (`part`); a loop is one construct
    with no parts.
    """

    construct: object                 # shared by the contexts of one loop or cond
    kind: str                         # "while", "gradients/while_grad", "cond": the construct's name
    location: SourceLocation | None   # the user's line that built the construct
    color: str
    part: str = ""                    # this context's sub-cluster inside the construct ("true", "false")
    part_color: str = ""


class ControlFlowContext(Protocol):
    """A cond branch or a while loop body: where nodes are built (`Graph.context`) and live (`Node.context`).

    `Graph.create_node` calls back into the context it builds in: inputs from
    enclosing contexts come in through `capture` / `capture_control`, each new
    node goes to `on_node_created` (which may gate it on a pivot), and the first
    ordered effect in the context waits for `effect_entry_controls()`.
    Implemented by CondContext and WhileContext (graph/control_flow/contexts.py).
    """

    outer: ControlFlowContext | None  # the enclosing context; None: the top level
    has_effects: bool  # an ordered effect was built in it or in a context nested in it

    @property
    def frame(self) -> LoopFrame | None:
        """The loop whose frame this context's nodes run in (None: the root frame)."""
        ...

    def capture(self, t: Tensor) -> Tensor:
        """`t`, a tensor of the enclosing context, as seen inside this one (through a Switch or an Enter)."""
        ...

    def capture_control(self, node: Node) -> Node:
        """A node in this context's frame that runs after `node`, a node of an enclosing frame."""
        ...

    def on_node_created(self, node: Node) -> None:
        """Called once for each node built in this context, after its outputs are inferred."""
        ...

    def effect_entry_controls(self) -> list[Node]:
        """What the first ordered effect built in this context must wait for."""
        ...

    def rollback(self, first_removed_id: int) -> None:
        """Forgets its records of nodes with id >= first_removed_id (see Graph.rollback)."""
        ...

    def hoisted_read(self, variable: Any) -> Tensor | None:
        """The read of `variable` made before the outermost enclosing loop that never assigns it, or None:
        inside such a loop every read of the variable is that one value."""
        ...

    def describe(self) -> str:
        """Where this is, in the user's terms ("the true branch of the cond at f.py:3")."""
        ...

    def name_of(self, t: Tensor) -> str | None:
        """`t`, a value of this context's own plumbing, as the user named it (`loop variable 'i' of the
        loop at f.py:3`), or None: see `Tensor.describe`."""
        ...

    def dot_cluster(self) -> DotCluster:
        """How `Graph.to_dot()` draws this context: the construct it belongs to, its label and colour."""
        ...


class LoopFrame(ControlFlowContext, Protocol):
    """A while loop's context, which is also the frame of the nodes in its body and condition."""

    frame_name: str
    parallel_iterations: int
