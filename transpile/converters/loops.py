"""Turns `while` and `for` loops into `ag.while_stmt` / `ag.for_stmt` calls with explicit state."""
from __future__ import annotations

import gast

from transpile import anno
from transpile import ast_util as A
from transpile.converters import carried
from transpile.converters.base import Context, Converter
from transpile.converters.break_statements import EXTRA_TEST

# list methods that change a list's length other than by appending: a graph loop carries such a list as
# a GraphList (transpile/operators/graph_lists.py)
_RESIZING = frozenset({"extend", "insert", "pop", "remove", "clear", "sort"})


def _resized(stmts, ctx) -> list[str]:
    """Names the loop body resizes other than by appending (`x.pop()`, also as `ag.call(x.pop)`, and
    `del x[k]`, at any depth)."""
    out = set()
    for s in stmts:
        for n in gast.walk(s):
            if not isinstance(n, gast.Call):
                if isinstance(n, gast.Delete):
                    out.update(t.value.id for t in n.targets
                               if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name))
                continue
            method = n.func
            if isinstance(method, gast.Attribute) and method.attr == "call" and isinstance(method.value, gast.Name) \
                    and method.value.id == ctx.ag and n.args:
                method = n.args[0]
            if isinstance(method, gast.Attribute) and method.attr in _RESIZING and isinstance(method.value, gast.Name):
                out.add(method.value.id)
    return sorted(out)


def _appended(stmts, ctx) -> list[str]:
    """Names the loop body appends to (`x = ag.list_append(x, v)`, at any depth)."""
    out = set()
    for s in stmts:
        for n in gast.walk(s):
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and n.func.attr == "list_append" \
                    and isinstance(n.func.value, gast.Name) and n.func.value.id == ctx.ag \
                    and n.args and isinstance(n.args[0], gast.Name):
                out.add(n.args[0].id)
    return sorted(out)


class Loops(Converter):
    """A loop's test and body become functions of the loop variables.

    Loop variables are `modified ∩ (live-in ∪ live-out)`; body temporaries are
    not carried. Before::

        while i < n:
            t = x[i] * 2
            s = s + t
            i = i + 1

    After::

        def loop_test(i, s):
            return i < n
        def loop_body(i, s):
            t = x[i] * 2
            s = s + t
            i = i + 1
            return i, s
        i, s = ag.while_stmt(loop_test, loop_body, (i, s), ('i', 's'), facts=ag.LoopFacts(line=1, body_line=2))

    A `for` loop's body takes the item first; a `break` flag becomes its
    `loop_test`::

        for v in xs:                 def loop_body(v, s):
            s = s + v        ->          s = s + v
                                         return s
                                     s = ag.for_stmt(xs, loop_body, (s,), ('s',), facts=...)
    """

    statements_only = True

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.scopes: list[carried.ScopeInfo] = []

    def visit_FunctionDef(self, node):
        if anno.get_anno(node, carried.GENERATED_FN):
            return self.generic_visit(node)
        self.scopes.append(carried.ScopeInfo(node))
        node = self.generic_visit(node)
        self.scopes.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        return node

    def _state(self, node, extra_modified=frozenset()):
        body_scope = anno.get_anno(node, anno.BODY_SCOPE)
        live_in = anno.get_anno(node, anno.LIVE_IN, frozenset())
        live_out = anno.get_anno(node, anno.LIVE_OUT, frozenset())
        scope = self.scopes[-1]
        state = carried.state_vars(body_scope.modified | extra_modified, live_in, live_out, scope)
        return carried.make_vars(state, scope, self.ctx)

    def _finish(self, node, call, vs):
        stmt = A.assign(carried.targets_expr(vs), call) if vs else A.expr_stmt(call)
        A.locate(stmt, node)
        stmt.end_lineno = node.lineno
        return stmt

    def _facts(self, node, body_line: int):
        """`ag.LoopFacts(...)` for the loop `node` (its body converted; `body_line` its first statement's)."""
        return carried.facts(self.ctx, "LoopFacts", {"appends": (), "resizes": (), "return_vars": ()},
                             line=node.lineno, body_line=body_line,
                             appends=tuple(_appended(node.body, self.ctx)),
                             resizes=tuple(_resized(node.body, self.ctx)), return_vars=carried.return_vars(self.ctx))

    def visit_While(self, node):
        vs_before = self._state(node, carried.test_effects(node))
        test_name, body_name = self.ctx.namer.new("loop_test"), self.ctx.namer.new("loop_body")
        body_line = min(s.lineno for s in node.body)  # (an `if` in it is converted already: its defs come first)
        node = self.generic_visit(node)
        vs = vs_before
        params = [v.param for v in vs]
        test_fn = carried.function(self.ctx, test_name, params, vs, [], node.test, node)
        body_fn = carried.function(self.ctx, body_name, params, vs, node.body,
                                   carried.values_expr(vs) if vs else None, node.body[0])
        args = [A.name(test_fn.name), A.name(body_fn.name), carried.state_tuple(vs), carried.names_tuple(vs)]
        call = self.ctx.ag_call("while_stmt", args, [A.keyword("facts", self._facts(node, body_line))])
        stmt = self._finish(node, call, vs)
        return carried.undefined_inits(vs, node, self.ctx) + [test_fn, body_fn, stmt]

    def visit_For(self, node):
        vs = self._state(node)
        extra_test = anno.get_anno(node, EXTRA_TEST)
        test_name = self.ctx.namer.new("loop_test") if extra_test is not None else None
        body_name = self.ctx.namer.new("loop_body")
        body_line = min(s.lineno for s in node.body)  # (an `if` in it is converted already: its defs come first)
        node = self.generic_visit(node)
        if extra_test is not None:
            extra_test = self.visit(extra_test)
        params = [v.param for v in vs]
        target = node.target
        body = list(node.body)
        state_names = {v.text for v in vs}
        if isinstance(target, gast.Name) and target.id not in state_names and target.id not in params:
            item = target.id
        else:
            item = self.ctx.namer.new("itr")
            body.insert(0, A.locate(A.assign(A.with_ctx(target, gast.Store()), A.name(item)), target))
        fns = []
        body_fn = carried.function(self.ctx, body_name, [item] + params, vs, body,
                                   carried.values_expr(vs) if vs else None, node.body[0])
        args = [node.iter, A.name(body_fn.name), carried.state_tuple(vs), carried.names_tuple(vs)]
        if extra_test is not None:
            test_fn = carried.function(self.ctx, test_name, params, vs, [], extra_test, node)
            fns.append(test_fn)
            args.append(A.name(test_fn.name))
        fns.append(body_fn)
        call = self.ctx.ag_call("for_stmt", args, [A.keyword("facts", self._facts(node, body_line))])
        stmt = self._finish(node, call, vs)
        return carried.undefined_inits(vs, node, self.ctx) + fns + [stmt]


def transform(fn_node, ctx: Context):
    return Loops(ctx).visit(fn_node)
