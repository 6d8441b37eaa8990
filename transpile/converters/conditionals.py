"""Turns `if` statements into `ag.if_stmt` calls with explicit branch functions."""
from __future__ import annotations

from transpile import anno
from transpile import ast_util as A
from transpile.converters import carried
from transpile.converters.base import Context, Converter


class Conditionals(Converter):
    """Each branch becomes a function of the state it reads and returns what it changes.

    The state is `modified ∩ (live-in ∪ live-out)`: temporaries used only
    inside a branch stay local to it. Before::

        if x > 0:
            y = x * 2
            z = y + 1
        else:
            z = -x

    After (`y` is not used after the `if`)::

        def if_true():
            y = x * 2
            z = y + 1
            return z
        def if_false():
            z = -x
            return z
        z = ag.if_stmt(x > 0, if_true, if_false, (), ('z',), facts=ag.IfFacts(line=1, ...))

    `if_stmt` runs one branch when the test is a Python value and builds a
    graph `cond` when it is a tensor.
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

    def _facts(self, node, lines: tuple[int, int], outs):
        """`ag.IfFacts(...)` for the `if` statement `node` (its branches converted; `lines`: where they
        start, the `if`'s own for a missing else; `outs`: the variables it assigns, whose first
        assignments an error may name)."""
        names = {v.text for v in outs}

        def branch(stmts, line):
            first = carried.first_assignments(stmts)
            return carried.facts(self.ctx, "BranchFacts", {"assigned": {}}, line=line,
                                 assigned={k: first[k] for k in sorted(first) if k in names})
        return carried.facts(self.ctx, "IfFacts", {"has_else": True, "return_vars": ()}, line=node.lineno,
                             true=branch(node.body, lines[0]), false=branch(node.orelse, lines[1]),
                             has_else=bool(node.orelse), return_vars=carried.return_vars(self.ctx))

    def visit_If(self, node):
        body_scope = anno.get_anno(node, anno.BODY_SCOPE)
        orelse_scope = anno.get_anno(node, anno.ORELSE_SCOPE)
        live_in = anno.get_anno(node, anno.LIVE_IN, frozenset())
        live_out = anno.get_anno(node, anno.LIVE_OUT, frozenset())
        t_name, f_name = self.ctx.namer.new("if_true"), self.ctx.namer.new("if_false")
        # where each branch starts (a nested `if`, converted already, puts its defs first)
        lines = (min(s.lineno for s in node.body), min(s.lineno for s in node.orelse) if node.orelse else node.lineno)
        node = self.generic_visit(node)
        scope = self.scopes[-1]
        assigned_by_test = carried.test_effects(node)  # a walrus in the test
        modified = body_scope.modified | orelse_scope.modified | assigned_by_test
        state = carried.state_vars(modified, live_in | assigned_by_test, live_out, scope)
        outs = carried.make_vars(state, scope, self.ctx)
        ins = [v for v in outs if v.qn in live_in or v.qn in assigned_by_test]
        returns = carried.values_expr(outs) if outs else None
        orelse_origin = node.orelse[0] if node.orelse else node
        t_fn = carried.function(self.ctx, t_name, [v.param for v in ins], ins, node.body, returns, node.body[0])
        f_fn = carried.function(self.ctx, f_name, [v.param for v in ins], ins, node.orelse,
                                carried.values_expr(outs) if outs else None, orelse_origin)
        args = [node.test, A.name(t_fn.name), A.name(f_fn.name), carried.state_tuple(ins), carried.names_tuple(outs)]
        call = self.ctx.ag_call("if_stmt", args, [A.keyword("facts", self._facts(node, lines, outs))])
        stmt = A.assign(carried.targets_expr(outs), call) if outs else A.expr_stmt(call)
        A.locate(stmt, node)
        stmt.end_lineno, stmt.end_col_offset = node.lineno, node.test.end_col_offset
        return carried.undefined_inits(ins, node, self.ctx) + [t_fn, f_fn, stmt]


def transform(fn_node, ctx: Context):
    return Conditionals(ctx).visit(fn_node)
