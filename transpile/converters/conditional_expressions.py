"""Turns `a if c else b` into `ag.if_exp(c, lambda: a, lambda: b)`."""
from __future__ import annotations

from transpile import ast_util as A
from transpile.converters.base import Context, Converter


class ConditionalExpressions(Converter):
    """Only the chosen side runs, also when the test is a tensor. Before::

        y = x if x > 0 else -x

    After::

        y = ag.if_exp(x > 0, lambda: x, lambda: -x)
    """

    def visit_IfExp(self, node):
        node = self.generic_visit(node)
        call = self.ctx.ag_call("if_exp", [node.test, A.lambda_(node.body), A.lambda_(node.orelse)])
        return A.locate(call, node)

    def visit_ClassDef(self, node):
        return node


def transform(fn_node, ctx: Context):
    return ConditionalExpressions(ctx).visit(fn_node)
