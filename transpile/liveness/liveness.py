"""Liveness: the names whose current value may still be read, before and after each statement."""
from __future__ import annotations

import gast

from transpile import anno
from transpile.liveness import cfg as cfg_mod
from transpile.liveness.activity import node_effects_of
from transpile.liveness.dataflow import solve


def _kills(name, killed) -> bool:
    """Writing `a` ends the life of `a`, `a.b` and `x[a]` (a composite whose support changed)."""
    return any(name.has_prefix(k) or k in name.support for k in killed)


def analyze(fn_node, graph: cfg_mod.Cfg, effects: dict | None = None) -> None:
    """Annotates every statement with LIVE_IN and LIVE_OUT (frozensets of QN).

    For a compound statement LIVE_IN is what is live before its header runs and
    LIVE_OUT what is live once control leaves it (for loops: after the loop).
    """
    effects = effects if effects is not None else node_effects_of(graph)

    def transfer(n, live_out):
        reads, writes = effects[id(n)]
        return reads | frozenset(q for q in live_out if not _kills(q, writes))

    def join(values):
        out = frozenset()
        for v in values:
            out |= v
        return out

    outs, ins = solve(graph, False, frozenset(), frozenset(), transfer, join)
    for n in graph.nodes:
        if n.ast_node is None:
            continue
        anno.set_anno(n.ast_node, anno.LIVE_IN, ins[id(n)])
        anno.set_anno(n.ast_node, anno.LIVE_OUT, outs.get(id(n), frozenset()))
    for inside in graph.stmt_nodes.values():
        stmt = inside[0].ast_node
        after = frozenset()
        for m in graph.outflow(stmt):
            after |= ins[id(m)]
        anno.set_anno(stmt, anno.LIVE_OUT, after)


def dump(fn_node) -> str:
    lines = []
    for node in gast.walk(fn_node):
        if isinstance(node, (gast.stmt, gast.ExceptHandler)) and anno.has_anno(node, anno.LIVE_IN):
            li = "{" + ", ".join(sorted(map(str, anno.get_anno(node, anno.LIVE_IN)))) + "}"
            lo = "{" + ", ".join(sorted(map(str, anno.get_anno(node, anno.LIVE_OUT)))) + "}"
            lines.append((node.lineno, type(node).__name__, f"in={li} out={lo}"))
    lines.sort(key=lambda x: x[0])
    return "\n".join(f"{ln}: {kind} {text}" for ln, kind, text in lines)
