"""graph.index: consumers of tensors and nodes, cached by graph version, and the upstream walk."""
import numpy as np

import graph
from graph.index import GraphIndex, is_back_edge, producers, reachable, upstream


def _loop_graph():
    g = graph.Graph()
    with g.as_default():
        x = graph.placeholder(np.float64, (), name="x")
        y = x * 2.0
        z = y + y
        _, s = graph.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + x), (graph.constant(0), z))
    return g, x, y, z, s


def test_uses_list_each_input_that_reads_a_tensor():
    g, x, y, z, _ = _loop_graph()
    uses = g.index().uses(y)
    assert [(u.node, u.index) for u in uses] == [(z.node, 0), (z.node, 1)]
    assert list(g.index().data_consumers(y.node)) == [z.node]


def test_the_index_is_cached_until_the_graph_changes():
    g, x, *_ = _loop_graph()
    first = g.index()
    assert g.index() is first
    with g.as_default():
        w = x + 1.0
    second = g.index()
    assert second is not first and second.version == g.version
    assert w.node in second.data_consumers(x.node) and w.node not in first.data_consumers(x.node)


def test_control_consumers_and_back_edges():
    g, *_ = _loop_graph()
    index = g.index()
    nexts = [n for n in g.nodes if n.op == "NextIteration"]
    assert nexts
    for n in nexts:
        (merge,) = index.consumers(n)
        assert merge.op == "Merge" and is_back_edge(n, merge)
        assert index.forward_consumers(n) == []
    for n in g.nodes:
        for c in n.control_inputs:
            assert n in index.control_consumers(c) and n in index.consumers(c)


def test_a_subset_index_counts_edges_inside_it_and_not_the_inputs_of_cut_nodes():
    g, x, y, z, _ = _loop_graph()
    index = GraphIndex([x.node, y.node, z.node], cut={y.node})
    assert list(index.data_consumers(x.node)) == []  # y is cut: its input is not an edge
    assert list(index.data_consumers(y.node)) == [z.node]
    assert x.node in index and z.node in index and g.nodes[-1] not in index


def test_upstream_stops_at_cut_nodes_and_follows_control_inputs():
    g, x, y, z, s = _loop_graph()
    two = y.node.inputs[1].node
    assert upstream([z.node]) == {x.node, two, y.node, z.node}
    assert upstream([z.node], cut={y.node}) == {y.node, z.node}
    everything = upstream([s.node])
    assert {x.node, y.node, z.node} <= everything
    assert graph.in_graph_order(everything) == [n for n in g.nodes if n in everything]


def test_reachable_walks_either_way():
    g, x, y, z, _ = _loop_graph()
    index = g.index()
    down = reachable([x.node], index.forward_consumers)
    assert {y.node, z.node} <= down
    assert reachable([z.node], producers) == upstream([z.node])
