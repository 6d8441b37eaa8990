"""The graph index: who reads each tensor and node, and what a set of nodes depends on.

A `Node` records its producers (`inputs`, `control_inputs`) but not its consumers, as in TensorFlow's
GraphDef: the graph is append-only while it is built, and most passes walk it backwards. The passes that
need the other direction (printing, validation, placement, gradients, the plan builder, the compiler)
share one `GraphIndex` instead of each inverting the edges by hand:

- `Graph.index()` is the index of the whole graph, cached by `Graph.version`: every change to a node
  bumps the version (`Graph.create_node`, `Node.update_input`, `Graph.update_node`, rollback), so a
  cached index is never stale.
- `GraphIndex(nodes, cut=fed)` indexes a subset, such as the nodes a plan runs: an edge counts only when
  both ends are in the subset, and the inputs of a `cut` node (a fed one) are not edges, since its value
  does not come from them.

`upstream(roots)` is the backward walk: what `roots` need, stopping at `cut` nodes. Data edges and
control edges are both dependencies; `follow` narrows the walk (a loop's condition seen from its
Merges, a Switch's data only). `reachable(roots, follow)` is the same walk in any direction
(`follow=index.forward_consumers`: what a node feeds within one iteration).
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from graph.node import Node, Tensor
from graph.op_names import MERGE, NEXT_ITERATION

_NONE: tuple = ()


@dataclass(frozen=True, slots=True)
class Use:
    """One data edge seen from the tensor it carries: `node` reads it as its input `index`."""

    node: Node
    index: int


class GraphIndex:
    """The consumers of every tensor and node among `nodes` (see the module doc); built in one pass."""

    __slots__ = ("nodes", "version", "_members", "_uses", "_data", "_control", "_all")

    def __init__(self, nodes: Iterable[Node], *, cut: Collection[Node] = (), version: int | None = None):
        self.nodes: list[Node] = list(nodes)
        self.version = version  # the Graph.version it was built at (None: a subset, not cached)
        self._uses: dict[Tensor, list[Use]] = {}
        self._data: dict[Node, list[Node]] = {}
        self._control: dict[Node, list[Node]] = {}
        self._all: dict[Node, list[Node]] = {}
        self._members = inside = set(self.nodes)
        for n in self.nodes:
            if n in cut:
                continue
            for i, t in enumerate(n.inputs):
                if t.node in inside:
                    self._uses.setdefault(t, []).append(Use(n, i))
                    _add_once(self._data, t.node, n)
                    _add_once(self._all, t.node, n)
            for c in n.control_inputs:
                if c in inside:
                    _add_once(self._control, c, n)
                    _add_once(self._all, c, n)

    def __contains__(self, n: Node) -> bool:
        return n in self._members

    def uses(self, t: Tensor) -> Sequence[Use]:
        """The inputs that read `t`, in node order (a node reading it twice: twice)."""
        return self._uses.get(t, _NONE)

    def data_consumers(self, n: Node) -> Sequence[Node]:
        """The nodes reading an output of `n`, each once, in node order."""
        return self._data.get(n, _NONE)

    def control_consumers(self, n: Node) -> Sequence[Node]:
        """The nodes with `n` among their control inputs, in node order."""
        return self._control.get(n, _NONE)

    def consumers(self, n: Node) -> Sequence[Node]:
        """The nodes that wait for `n` by a data or a control edge, each once, in node order."""
        return self._all.get(n, _NONE)

    def forward_consumers(self, n: Node) -> list[Node]:
        """`consumers(n)` but a loop's back edge (NextIteration -> Merge): the edges within one iteration."""
        return [c for c in self.consumers(n) if not is_back_edge(n, c)]


def _add_once(table: dict[Node, list[Node]], key: Node, n: Node) -> None:
    # a consumer's edges are added together, so a repeated one is the list's last entry
    lst = table.get(key)
    if lst is None:
        table[key] = [n]
    elif lst[-1] is not n:
        lst.append(n)


def is_back_edge(producer: Node, consumer: Node) -> bool:
    """Whether the edge producer -> consumer is a loop's back edge: the only cycles a graph has."""
    return producer.op == NEXT_ITERATION and consumer.op == MERGE


def producers(n: Node) -> list[Node]:
    """The nodes `n` waits for: the producers of its inputs, then its control inputs."""
    return [t.node for t in n.inputs] + list(n.control_inputs)


def reachable(roots: Iterable[Node], follow: Callable[[Node], Iterable[Node]], *,
              cut: Collection[Node] = ()) -> set[Node]:
    """The nodes reached from `roots`, roots included, going from each node reached to `follow(node)`;
    a node of `cut` is reached but not gone past."""
    seen: set[Node] = set()
    todo = list(roots)
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n not in cut:
            todo.extend(follow(n))
    return seen


def upstream(roots: Iterable[Node], *, cut: Collection[Node] = (),
             follow: Callable[[Node], Iterable[Node]] = producers) -> set[Node]:
    """The nodes `roots` depend on, roots included: `follow(n)` (by default `producers(n)`) of each node
    reached, except that a node of `cut` (a fed one) is reached but not followed."""
    return reachable(roots, follow, cut=cut)


def in_graph_order(nodes: Iterable[Node]) -> list[Node]:
    """`nodes` in the order their graph holds them (creation order: producers before consumers but for
    loop back edges)."""
    return sorted(nodes, key=_node_id)


def _node_id(n: Node) -> int:
    return n.id
