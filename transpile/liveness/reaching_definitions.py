"""Reaching definitions: which names are defined on every (or some) path to each statement."""
from __future__ import annotations

import gast

from transpile import anno
from transpile.liveness import cfg as cfg_mod
from transpile.liveness.activity import node_effects
from transpile.liveness.dataflow import solve

_ALL = None  # the "top" of the must-lattice: every name


def _must_join(values):
    out = _ALL
    for v in values:
        if v is _ALL:
            continue
        out = v if out is _ALL else out & v
    return out


def _may_join(values):
    out = frozenset()
    for v in values:
        if v is not _ALL:
            out |= v
    return out


def _defs(node) -> frozenset:
    if node.ast_node is None:
        return frozenset()
    _, modified = node_effects(node.ast_node)
    return frozenset(q for q in modified if not q.is_composite)


def analyze(fn_node, graph: cfg_mod.Graph, params) -> None:
    """Annotates each statement with DEFINED_IN (all paths) and MAYBE_DEFINED_IN (some path).

    Only simple names are tracked; composite names count as defined when their
    root is.
    """
    entry = frozenset(params)
    defs = {id(n): _defs(n) for n in graph.nodes}

    def transfer(n, incoming):
        if incoming is _ALL:
            return _ALL
        return incoming | defs[id(n)]

    must_in, must_out = solve(graph, True, _ALL, entry, transfer, _must_join)
    may_in, may_out = solve(graph, True, frozenset(), entry,
                      lambda n, i: i | defs[id(n)], _may_join)
    for n in graph.nodes:
        if n.ast_node is None:
            continue
        d = must_in.get(id(n), _ALL)
        anno.set_anno(n.ast_node, anno.DEFINED_IN, frozenset() if d is _ALL else d)
        anno.set_anno(n.ast_node, anno.MAYBE_DEFINED_IN, may_in.get(id(n), frozenset()))
    for stmt_id, inside in graph.stmt_nodes.items():
        stmt = inside[0].ast_node
        # what may be defined when control first reaches a compound statement (loops: no back edges)
        header = inside[0]
        entering = [p for p in header.prev if p not in inside]
        may_before = frozenset()
        for p in entering:
            may_before |= may_out[id(p)] if p is not graph.entry else entry | may_out[id(p)]
        anno.set_anno(stmt, anno.MAYBE_DEFINED_BEFORE, may_before)
        # what is defined on every path out of a compound statement
        outs = [must_out[id(p)] for p in inside if any(m not in inside for m in p.next)]
        d = _must_join(outs) if outs else _ALL
        anno.set_anno(stmt, "defined_out", frozenset() if d is _ALL else d)


def dump(fn_node) -> str:
    lines = []
    for node in gast.walk(fn_node):
        if anno.has_anno(node, anno.DEFINED_IN):
            d = anno.get_anno(node, anno.DEFINED_IN)
            lines.append((node.lineno, type(node).__name__, "{" + ", ".join(sorted(map(str, d))) + "}"))
    lines.sort(key=lambda x: x[0])
    return "\n".join(f"{ln}: {kind} defined={text}" for ln, kind, text in lines)
