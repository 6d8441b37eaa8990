"""Reaching definitions: which names are defined on every (or some) path to each statement."""
from __future__ import annotations

import gast

from transpile import anno
from transpile.liveness import cfg as cfg_mod
from transpile.liveness.activity import node_effects_of
from transpile.liveness.dataflow import solve
from transpile.liveness.name_sets import NameIndex


def analyze(fn_node, graph: cfg_mod.Cfg, params, effects: dict | None = None) -> None:
    """Annotates each statement with DEFINED_IN (all paths) and MAYBE_DEFINED_IN (some path).

    Only simple names are tracked; composite names count as defined when their
    root is. The sets are bit masks while the problem is solved (name_sets.py) and
    NameSets in the annotations.
    """
    effects = effects if effects is not None else node_effects_of(graph)
    index = NameIndex()
    entry = index.mask(params)
    defs = {id(n): index.mask(q for q in effects[id(n)][1] if not q.is_composite) for n in graph.nodes}
    every = -1  # the top of the must-lattice, every name: what a node not yet reached has

    def must_join(values):
        out = every
        for v in values:
            out &= v
        return out

    def may_join(values):
        out = 0
        for v in values:
            out |= v
        return out

    def transfer(n, incoming):
        return incoming | defs[id(n)]

    must_in, must_out = solve(graph, True, every, entry, transfer, must_join)
    may_in, may_out = solve(graph, True, 0, entry, transfer, may_join)

    def must_set(mask):
        return index.set(0 if mask == every else mask)

    for n in graph.nodes:
        if n.ast_node is None:
            continue
        anno.set_anno(n.ast_node, anno.DEFINED_IN, must_set(must_in.get(id(n), every)))
        anno.set_anno(n.ast_node, anno.MAYBE_DEFINED_IN, index.set(may_in.get(id(n), 0)))
    for stmt_id, inside in graph.stmt_nodes.items():
        stmt = inside[0].ast_node
        # what may be defined when control first reaches a compound statement (loops: no back edges)
        header = inside[0]
        may_before = 0
        for p in header.prev:
            if p not in inside:
                may_before |= may_out[id(p)] if p is not graph.entry else entry | may_out[id(p)]
        anno.set_anno(stmt, anno.MAYBE_DEFINED_BEFORE, index.set(may_before))
        # what is defined on every path out of a compound statement
        outs = [must_out[id(p)] for p in inside if any(m not in inside for m in p.next)]
        anno.set_anno(stmt, "defined_out", must_set(must_join(outs)))


def dump(fn_node) -> str:
    lines = []
    for node in gast.walk(fn_node):
        if anno.has_anno(node, anno.DEFINED_IN):
            d = anno.get_anno(node, anno.DEFINED_IN)
            lines.append((node.lineno, type(node).__name__, "{" + ", ".join(sorted(map(str, d))) + "}"))
    lines.sort(key=lambda x: x[0])
    return "\n".join(f"{ln}: {kind} defined={text}" for ln, kind, text in lines)
