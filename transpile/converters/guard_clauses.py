"""Moves the code that follows an `if` whose branch always exits into the other branch."""
from __future__ import annotations

import gast

from transpile import ast_util as A
from transpile.converters.base import FUNCTIONS, Context, move_rest_into_branches

EXITS = (gast.Return, gast.Raise, gast.Break, gast.Continue)


class GuardClauses:
    """Guard clauses become if/else, so every exit sits at the end of a branch.

    Before::

        if x > 0:
            return 1
        elif x < 0:
            return -1
        return 0

    After::

        if x > 0:
            return 1
        elif x < 0:
            return -1
        else:
            return 0

    Statements after an unconditional `return`/`raise`/`break`/`continue` are
    dead and dropped. Later converters then lower exits without flags where
    they can.
    """

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def _recurse(self, s):
        if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef)):
            s.body = move_rest_into_branches(s.body, EXITS, self._recurse)
            return
        if isinstance(s, gast.ClassDef):
            return
        for block in ("body", "orelse", "finalbody"):
            stmts = getattr(s, block, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], gast.stmt):
                setattr(s, block, move_rest_into_branches(stmts, EXITS, self._recurse))
        for h in getattr(s, "handlers", None) or []:
            h.body = move_rest_into_branches(h.body, EXITS, self._recurse)

    def transform(self, fn_node):
        if isinstance(fn_node, FUNCTIONS[:2]):
            fn_node.body = move_rest_into_branches(fn_node.body, EXITS, self._recurse)
            for n in gast.walk(fn_node):
                if isinstance(n, (gast.If,)):
                    if not n.body:
                        n.body = [A.pass_(n)]
        return fn_node


def transform(fn_node, ctx: Context):
    return GuardClauses(ctx).transform(fn_node)
