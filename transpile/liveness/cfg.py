"""Control-flow graph over the statements of one function (nested functions excluded).

A CFG node is a simple statement or the header of a compound one (an `if`'s
test, a loop's test or iteration step, a `with` entry, an `except` clause).
`stmt_nodes[stmt]` lists every CFG node inside a compound statement, so that
analyses can ask what flows out of it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import gast

_LOOPS = (gast.While, gast.For, gast.AsyncFor)
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)


@dataclass(eq=False)
class CfgNode:
    ast_node: object            # None for the synthetic entry and exit
    next: list = field(default_factory=list)
    prev: list = field(default_factory=list)
    label: str = ""

    def __repr__(self) -> str:
        if self.ast_node is None:
            return f"<{self.label}>"
        return f"<{type(self.ast_node).__name__}@{getattr(self.ast_node, 'lineno', '?')}>"


@dataclass(eq=False)
class Cfg:
    """A function's control-flow graph: its statements as nodes, the ways control passes between them."""

    entry: CfgNode
    exit: CfgNode
    nodes: list
    by_ast: dict                # id(ast node) -> CfgNode
    stmt_nodes: dict            # id(compound stmt) -> list of CfgNodes inside it (header first)

    def node_of(self, ast_node) -> CfgNode:
        return self.by_ast[id(ast_node)]

    def outflow(self, stmt) -> list:
        """CFG nodes that control reaches right after leaving `stmt`."""
        inside = self.stmt_nodes.get(id(stmt))
        if inside is None:
            return list(self.node_of(stmt).next)
        members = set(map(id, inside))
        out, seen = [], set()
        for n in inside:
            for m in n.next:
                if id(m) not in members and id(m) not in seen:
                    seen.add(id(m))
                    out.append(m)
        return out


class _Builder:
    def __init__(self):
        self.nodes: list[CfgNode] = []
        self.by_ast: dict = {}
        self.stmt_nodes: dict = {}
        self.loops: list[tuple[CfgNode, list]] = []  # (header, break nodes)
        self.handlers: list[list] = []             # per enclosing try: nodes that may raise
        self.returns: list[CfgNode] = []
        self.raises: list[CfgNode] = []

    def new(self, ast_node, label="") -> CfgNode:
        n = CfgNode(ast_node, label=label)
        self.nodes.append(n)
        if ast_node is not None:
            self.by_ast[id(ast_node)] = n
        for h in self.handlers:
            h.append(n)
        return n

    @staticmethod
    def connect(frontier, node: CfgNode) -> None:
        for p in frontier:
            if node not in p.next:
                p.next.append(node)
                node.prev.append(p)

    def block(self, stmts, frontier: list) -> list:
        for s in stmts:
            frontier = self.statement(s, frontier)
        return frontier

    def statement(self, s, frontier: list) -> list:
        start = len(self.nodes)
        method = getattr(self, "_" + type(s).__name__, None)
        if method is None:
            n = self.new(s)
            self.connect(frontier, n)
            out = [n]
        else:
            out = method(s, frontier)
        if method is not None:
            self.stmt_nodes[id(s)] = self.nodes[start:]
        return out

    def _Return(self, s, frontier):
        n = self.new(s)
        self.connect(frontier, n)
        self.returns.append(n)
        return []

    def _Raise(self, s, frontier):
        n = self.new(s)
        self.connect(frontier, n)
        if not self.handlers:
            self.raises.append(n)
        return []

    def _Break(self, s, frontier):
        n = self.new(s)
        self.connect(frontier, n)
        if self.loops:
            self.loops[-1][1].append(n)
        return []

    def _Continue(self, s, frontier):
        n = self.new(s)
        self.connect(frontier, n)
        if self.loops:
            self.connect([n], self.loops[-1][0])
        return []

    def _If(self, s, frontier):
        n = self.new(s)
        self.connect(frontier, n)
        body = self.block(s.body, [n])
        orelse = self.block(s.orelse, [n]) if s.orelse else [n]
        return body + [x for x in orelse if x not in body]

    def _loop(self, s, frontier):
        n = self.new(s)
        self.connect(frontier, n)
        breaks: list = []
        self.loops.append((n, breaks))
        entry = [n]
        if isinstance(s, (gast.For, gast.AsyncFor)):
            # the target is assigned only when an item is taken: leaving the loop skips it
            t = self.new(s.target, "target")
            self.connect([n], t)
            entry = [t]
        body = self.block(s.body, entry)
        self.connect(body, n)
        self.loops.pop()
        after = self.block(s.orelse, [n]) if s.orelse else [n]
        return after + breaks

    _While = _For = _AsyncFor = _loop

    def _With(self, s, frontier):
        n = self.new(s)
        self.connect(frontier, n)
        return self.block(s.body, [n])

    _AsyncWith = _With

    def _Try(self, s, frontier):
        n = self.new(s)
        self.connect(frontier, n)
        raisers: list = [n]
        self.handlers.append(raisers)
        body = self.block(s.body, [n])
        self.handlers.pop()
        ends = self.block(s.orelse, body) if s.orelse else body
        for h in s.handlers:
            hn = self.new(h)
            self.connect(raisers, hn)
            ends = ends + self.block(h.body, [hn])
        if s.finalbody:
            if not s.handlers:  # an exception in the body still runs the finally block
                ends = ends + raisers
            ends = self.block(s.finalbody, ends)
        return ends

    _TryStar = _Try


def build(fn_node) -> Cfg:
    """The CFG of a function's body (a FunctionDef, or a list of statements)."""
    b = _Builder()
    entry = b.new(None, "entry")
    body = fn_node.body if hasattr(fn_node, "body") and not isinstance(fn_node, list) else fn_node
    if isinstance(fn_node, gast.Lambda):
        body = []
    end = b.block(body, [entry])
    exit_ = b.new(None, "exit")
    b.connect(end + b.returns + b.raises, exit_)
    return Cfg(entry, exit_, b.nodes, b.by_ast, b.stmt_nodes)


def dump(graph: Cfg) -> str:
    lines = []
    for n in graph.nodes:
        succ = ", ".join(repr(m) for m in n.next)
        lines.append(f"{n!r} -> {succ}")
    return "\n".join(lines)
