"""Lowers `continue` to a per-iteration flag with the rest of the iteration guarded."""
from __future__ import annotations

import gast

from transpile import ast_util as A
from transpile.converters.base import Context, Converter, walk_same_loop


def _continues(stmts) -> bool:
    return any(isinstance(s, gast.Continue) for s in walk_same_loop(stmts))


def _drop_tail_continues(stmts):
    """A `continue` that is the last thing an iteration runs does nothing."""
    if not stmts:
        return stmts
    last = stmts[-1]
    if isinstance(last, gast.Continue):
        return stmts[:-1]
    if isinstance(last, gast.If):
        last.body = _drop_tail_continues(last.body) or [A.pass_(last)]
        last.orelse = _drop_tail_continues(last.orelse)
    return stmts


class ContinueStatements(Converter):
    """Loops keep `continue` semantics without the statement.

    Guard-clause normalisation already turned `if c: continue` + rest into
    `if c: continue` / `else: rest`, so a trailing `continue` is simply dropped::

        for v in xs:                      for v in xs:
            if v < 0:                         if v < 0:
                continue          ->              pass
            else:                             else:
                s += v                            s += v

    Elsewhere (inside a `with`, or followed by code) a flag, reset at the start
    of every iteration, guards the rest of the iteration::

        while i < n:                      while i < n:
            i += 1                            continue_ = False
            with ctx:                         i += 1
                if x[i]:          ->          with ctx:
                    continue                      if x[i]:
                s += x[i]                             continue_ = True
                                                  if not continue_:
                                                      s += x[i]
    """

    statements_only = True

    def _lower(self, stmts, flag):
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, gast.Continue):
                out.append(A.locate(A.assign(A.name(flag, gast.Store()), A.const(True)), s))
                return out
            sets = isinstance(s, (gast.If, gast.With, gast.Try)) and _continues([s])
            if sets:
                for block in ("body", "orelse", "finalbody"):
                    sub = getattr(s, block, None)
                    if isinstance(sub, list) and sub:
                        setattr(s, block, self._lower(sub, flag) or [A.pass_(s)])
                for h in getattr(s, "handlers", None) or []:
                    h.body = self._lower(h.body, flag) or [A.pass_(h)]
            out.append(s)
            rest = stmts[i + 1:]
            if sets and rest:
                guarded = self._lower(rest, flag)
                if guarded:
                    out.append(A.locate(A.if_(A.not_(A.name(flag)), guarded), rest[0]))
                return out
        return out

    def _loop(self, node):
        node = self.generic_visit(node)
        node.body = _drop_tail_continues(node.body) or [A.pass_(node)]
        if not _continues(node.body):
            return node
        flag = self.ctx.namer.new("continue_")
        self.ctx.generated.add(flag)
        reset = A.locate(A.assign(A.name(flag, gast.Store()), A.const(False)), node.body[0])
        node.body = [reset] + self._lower(node.body, flag)
        return node

    visit_While = visit_For = _loop


def transform(fn_node, ctx: Context):
    return ContinueStatements(ctx).visit(fn_node)
