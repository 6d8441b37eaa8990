"""Removes assignments to converter-made flags whose value is never read."""
from __future__ import annotations

import gast

from transpile import anno, liveness
from transpile import ast_util as A
from transpile.converters.base import Context


class DeadFlags:
    """Lowering exits sets flags that nothing may read afterwards. Before::

        if not do_return:
            do_return = True
            retval = t
        return retval

    After::

        if not do_return:
            retval = t
        return retval
    """

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def _clean(self, stmts, flags):
        out = []
        for s in stmts:
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name) \
                    and s.targets[0].id in flags and isinstance(s.value, gast.Constant):
                live = {q.name for q in anno.get_anno(s, anno.LIVE_OUT, frozenset())}
                if s.targets[0].id not in live and anno.has_anno(s, anno.LIVE_OUT):
                    continue
            if not isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                for block in ("body", "orelse", "finalbody"):
                    sub = getattr(s, block, None)
                    if isinstance(sub, list) and sub and isinstance(sub[0], gast.stmt):
                        cleaned = self._clean(sub, flags)
                        setattr(s, block, cleaned or ([] if block != "body" else [A.pass_(s)]))
                for h in getattr(s, "handlers", None) or []:
                    h.body = self._clean(h.body, flags) or [A.pass_(h)]
            out.append(s)
        return out

    def transform(self, fn_node):
        flags = self.ctx.generated - self.ctx.return_vars
        if not flags or not isinstance(fn_node, (gast.FunctionDef, gast.AsyncFunctionDef)):
            return fn_node
        liveness.analyze(fn_node)
        fn_node.body = self._clean(fn_node.body, flags) or [A.pass_(fn_node)]
        return fn_node


def transform(fn_node, ctx: Context):
    return DeadFlags(ctx).transform(fn_node)
