"""Turns `and`, `or`, `not` and chained comparisons into short-circuiting `ag` calls."""
from __future__ import annotations

import gast

from transpile import ast_util as A
from transpile.converters.base import Context, Converter

_SIMPLE = (gast.Name, gast.Constant, gast.Attribute)


class LogicalExpressions(Converter):
    """Later operands become lambdas, so they run only when needed. Before::

        if i < n and x[i] > 0 or not done:
            ...
        ok = 0 <= i < n

    After::

        if ag.or_(ag.and_(i < n, lambda: x[i] > 0), lambda: ag.not_(done)):
            ...
        ok = ag.and_(0 <= i, lambda: i < n)

    With tensor operands the unevaluated side is built inside a graph `cond`
    branch that does not run, so a guard like `i < n and x[i] > 0` never reads
    out of range.
    """

    def visit_BoolOp(self, node):
        node = self.generic_visit(node)
        fn = "and_" if isinstance(node.op, gast.And) else "or_"
        first, *rest = node.values
        call = self.ctx.ag_call(fn, [first] + [A.locate(A.lambda_(v), v) for v in rest])
        return A.locate(call, node)

    def visit_UnaryOp(self, node):
        node = self.generic_visit(node)
        if not isinstance(node.op, gast.Not):
            return node
        return A.locate(self.ctx.ag_call("not_", [node.operand]), node)

    def visit_Compare(self, node):
        node = self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        # a < b < c evaluates b once: name it when it is not a plain name or constant
        operands = [node.left] + list(node.comparators)
        parts = []
        for k, (op, right) in enumerate(zip(node.ops, node.comparators, strict=True)):
            left = operands[k]
            if k + 1 < len(node.comparators) and not isinstance(right, _SIMPLE):
                tmp = self.ctx.namer.new("cmp")
                self.ctx.generated.add(tmp)
                operands[k + 1] = A.name(tmp)
                right = gast.NamedExpr(target=A.name(tmp, gast.Store()), value=right)
            if k > 0 and not isinstance(left, gast.Name | gast.Constant) and not isinstance(left, gast.NamedExpr):
                left = A.copy_node(left)
            parts.append(A.locate(gast.Compare(left=left, ops=[op], comparators=[right]), node))
        first, *rest = parts
        call = self.ctx.ag_call("and_", [first] + [A.locate(A.lambda_(p), p) for p in rest])
        return A.locate(call, node)

    def visit_ClassDef(self, node):
        return node


def transform(fn_node, ctx: Context):
    return LogicalExpressions(ctx).visit(fn_node)
