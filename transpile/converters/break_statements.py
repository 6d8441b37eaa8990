"""Lowers `break` to a flag that the loop condition checks, with the code after it guarded."""
from __future__ import annotations

import gast

from transpile import anno
from transpile import ast_util as A
from transpile.converters.base import Context, Converter, walk_same_loop
from transpile.converters.logical_expressions import mark_truth_test
from transpile.converters.return_statements import RETURN_FLAG

EXTRA_TEST = "extra_test"  # on a For node: an expression that must stay true to keep iterating


def _breaks(body) -> bool:
    return any(isinstance(s, gast.Break) for s in walk_same_loop(body))


class BreakStatements(Converter):
    """Each loop with a `break` gets a flag; `for/while ... else` becomes a guarded `if`.

    Before::

        while i < n:
            if x[i] < 0:
                break
            i += 1
        else:
            found = False

    After::

        break_ = False
        while not break_ and i < n:
            if x[i] < 0:
                break_ = True
            else:
                i += 1
        if not break_:
            found = False

    A `for` loop gets the flag as an extra test (annotation `extra_test`), which
    the loop converter turns into the loop's condition.
    """

    statements_only = True

    def _lower(self, stmts, flag):
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, gast.Break):
                if anno.get_anno(s, RETURN_FLAG) != flag:  # a return's break: its flag is set already
                    out.append(A.locate(A.assign(A.name(flag, gast.Store()), A.const(True)), s))
                return out
            sets = isinstance(s, (gast.If, gast.With, gast.Try)) and _breaks([s])
            if sets:
                for block in ("body", "orelse", "finalbody"):
                    sub = getattr(s, block, None)
                    if isinstance(sub, list) and sub:
                        setattr(s, block, self._lower(sub, flag) or [A.pass_(s)])
                for h in getattr(s, "handlers", None) or []:
                    h.body = self._lower(h.body, flag) or [A.pass_(h)]
            if not (sets and isinstance(s, gast.If) and not s.orelse
                    and all(isinstance(b, gast.Pass) for b in s.body)):
                out.append(s)  # (`if do_return: break` lowers to nothing when do_return is the flag)
            rest = stmts[i + 1:]
            if sets and rest:
                guarded = self._lower(rest, flag)
                if guarded:
                    out.append(A.locate(A.if_(A.not_(A.name(flag)), guarded), rest[0]))
                return out
        return out

    def _loop(self, node):
        node = self.generic_visit(node)  # inner loops first: their breaks are theirs
        orelse, node.orelse = node.orelse, []
        if not _breaks(node.body):
            return [node] + orelse
        breaks = [s for s in walk_same_loop(node.body) if isinstance(s, gast.Break)]
        return_flags = {anno.get_anno(b, RETURN_FLAG) for b in breaks}
        shared = len(return_flags) == 1 and None not in return_flags
        # a loop left only by returns uses the return flag as its own
        flag = return_flags.pop() if shared else self.ctx.namer.new("break_")
        self.ctx.generated.add(flag)
        node.body = self._lower(node.body, flag) or [A.pass_(node)]
        init = None if shared else A.locate(A.assign(A.name(flag, gast.Store()), A.const(False)), node)
        not_broken = A.locate(A.not_(A.name(flag)), node)
        if isinstance(node, gast.While):
            if isinstance(node.test, gast.Constant) and node.test.value is True:
                node.test = not_broken
            else:
                node.test = A.locate(gast.BoolOp(op=gast.And(), values=[not_broken, node.test]), node.test)
                mark_truth_test(node.test)
        else:
            old = anno.get_anno(node, EXTRA_TEST)
            test = not_broken if old is None else gast.BoolOp(op=gast.And(), values=[not_broken, old])
            mark_truth_test(test)
            anno.set_anno(node, EXTRA_TEST, A.locate(test, node))
        out = [init, node] if init is not None else [node]
        if orelse:
            out.append(A.locate(A.if_(A.not_(A.name(flag)), orelse), orelse[0]))
        return out

    visit_While = visit_For = _loop

    def visit_FunctionDef(self, node):
        return self.generic_visit(node)


def transform(fn_node, ctx: Context):
    return BreakStatements(ctx).visit(fn_node)
