"""Lowers `return` inside control flow to a return-value variable (and a flag when code follows)."""
from __future__ import annotations

import gast

from transpile import anno
from transpile import ast_util as A
from transpile.converters.base import LOOPS, Context, block_exits, move_rest_into_branches, walk_same_scope
from transpile.converters.guard_clauses import EXITS

_TERMINAL = (gast.Return, gast.Raise)


def _has_nested_return(fn_node) -> bool:
    for s in fn_node.body:
        for n in walk_same_scope(s):
            if isinstance(n, gast.Return) and n is not s:
                return True
    return False


def _returns_in_loops(stmts, in_loop=False) -> bool:
    for s in stmts:
        if isinstance(s, gast.Return) and in_loop:
            return True
        if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        inner = in_loop or isinstance(s, LOOPS)
        for block in ("body", "orelse", "finalbody"):
            sub = getattr(s, block, None)
            if isinstance(sub, list) and sub and isinstance(sub[0], gast.stmt) and _returns_in_loops(sub, inner):
                return True
        for h in getattr(s, "handlers", None) or []:
            if _returns_in_loops(h.body, inner):
                return True
    return False


def _all_tail(stmts) -> bool:
    """Whether every `return` in `stmts` is the last thing its path runs."""
    for i, s in enumerate(stmts):
        last = i == len(stmts) - 1
        if isinstance(s, gast.Return) and not last:
            return False
        if isinstance(s, (gast.If, gast.With, gast.Try)):
            blocks = [s.body, getattr(s, "orelse", []) or []] + [h.body for h in getattr(s, "handlers", [])]
            has = any(isinstance(n, gast.Return) for b in blocks for st in b for n in walk_same_scope(st))
            if has and not last:
                return False
            if has and not all(_all_tail(b) for b in blocks if b):
                return False
    return True


RETURN_FLAG = "return_flag"  # on a Break: it leaves the loop because of a return (the flag is set)


def _return_break(flag: str, origin):
    brk = A.locate(gast.Break(), origin)
    anno.set_anno(brk, RETURN_FLAG, flag)
    return brk


class ReturnStatements:
    """A `return` nested in an `if` (or a loop) assigns `retval`; the function ends in `return retval`.

    When every return is already the last statement on its path (the usual
    shape after guard-clause normalisation)::

        if x > 0:                      if x > 0:
            return x          ->           retval = x
        else:                          else:
            return -x                      retval = -x
                                       return retval

    When code can follow a return (a return inside a loop), a `do_return` flag
    guards that code and breaks out of the enclosing loops::

        for v in xs:                   do_return = False
            if v > t:                  retval = ag.undefined_return()
                return v      ->       for v in xs:
        return t                           if v > t:
                                               retval = v
                                               do_return = True
                                               break
                                           if do_return:  # (only in outer loops)
                                               break
                                       if not do_return:
                                           retval = t
                                           do_return = True
                                       return retval
    """

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def transform(self, fn_node):
        for n in list(gast.walk(fn_node)):
            if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef)) and n is not fn_node:
                self._function(n)
        if isinstance(fn_node, (gast.FunctionDef, gast.AsyncFunctionDef)):
            self._function(fn_node)
        return fn_node

    def _function(self, fn):
        if not _has_nested_return(fn):
            return
        if not block_exits(fn.body, _TERMINAL):
            end = A.ret(None)
            A.locate(end, fn.body[-1])
            end.lineno = end.end_lineno = fn.body[-1].end_lineno
            fn.body.append(end)
            fn.body = move_rest_into_branches(fn.body, EXITS, lambda s: None)
        retval = self.ctx.namer.new("retval")
        self.ctx.generated.add(retval)
        self.ctx.return_vars.add(retval)
        first = fn.body[0]
        if _all_tail(fn.body) and not _returns_in_loops(fn.body):
            fn.body = self._tail_block(fn.body, retval)
            final = A.ret(A.name(retval))
            A.locate(final, fn.body[-1])
            fn.body.append(final)
            return
        flag = self.ctx.namer.new("do_return")
        self.ctx.generated.add(flag)
        init = [A.assign(A.name(flag, gast.Store()), A.const(False)),
                A.assign(A.name(retval, gast.Store()), self.ctx.ag_call("undefined_return"))]
        A.locate(init, first)
        body = self._flag_block(fn.body, retval, flag, in_loop=False)
        final = A.ret(A.name(retval))
        A.locate(final, fn.body[-1])
        fn.body = init + body + [final]

    # -- every return at the end of its path ---------------------------------------------------------
    def _tail_block(self, stmts, retval):
        out = []
        for s in stmts:
            if isinstance(s, gast.Return):
                out.append(self._assign_retval(s, retval))
                continue
            for block in ("body", "orelse", "finalbody"):
                sub = getattr(s, block, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], gast.stmt) \
                        and not isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                    setattr(s, block, self._tail_block(sub, retval))
            for h in getattr(s, "handlers", None) or []:
                h.body = self._tail_block(h.body, retval)
            out.append(s)
        return out

    def _assign_retval(self, ret_node, retval):
        value = ret_node.value if ret_node.value is not None else A.const(None)
        node = A.assign(A.name(retval, gast.Store()), value)
        return A.locate(node, ret_node)

    # -- returns followed by code ---------------------------------------------------------------------
    def _may_return(self, s) -> bool:
        return any(isinstance(n, gast.Return) for n in walk_same_scope(s))

    def _flag_block(self, stmts, retval, flag, in_loop):
        """Inside a loop, a return also breaks (the break converter guards what follows);
        at function level, what follows a statement that may return is guarded by the flag."""
        out = []
        for i, s in enumerate(stmts):
            if isinstance(s, gast.Return):
                # the value first: a return whose value raises (caught by an `except` around it) has not returned
                setter = A.locate(A.assign(A.name(flag, gast.Store()), A.const(True)), s)
                out.extend([self._assign_retval(s, retval), setter])
                if in_loop:
                    out.append(_return_break(flag, s))
                return out
            may = self._may_return(s)
            if may:
                self._lower_children(s, retval, flag, in_loop)
            out.append(s)
            if not may:
                continue
            if in_loop:
                if isinstance(s, LOOPS):
                    out.append(A.locate(A.if_(A.name(flag), [_return_break(flag, s)]), s))
                continue
            rest = self._flag_block(stmts[i + 1:], retval, flag, in_loop)
            if rest:
                out.append(A.locate(A.if_(A.not_(A.name(flag)), rest), stmts[i + 1]))
            return out
        return out

    def _lower_children(self, s, retval, flag, in_loop):
        inner_loop = in_loop or isinstance(s, LOOPS)
        for block in ("body", "orelse", "finalbody"):
            sub = getattr(s, block, None)
            if isinstance(sub, list) and sub and isinstance(sub[0], gast.stmt):
                # a loop's else block runs after the loop, outside it
                loop_level = in_loop if (isinstance(s, LOOPS) and block == "orelse") else inner_loop
                lowered = self._flag_block(sub, retval, flag, loop_level)
                setattr(s, block, lowered or [A.pass_(s)])
        for h in getattr(s, "handlers", None) or []:
            h.body = self._flag_block(h.body, retval, flag, inner_loop) or [A.pass_(h)]


def transform(fn_node, ctx: Context):
    return ReturnStatements(ctx).transform(fn_node)
