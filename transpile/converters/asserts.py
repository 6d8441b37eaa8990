"""Turns `assert` statements into `ag.assert_stmt` calls (a graph Assert for tensor tests)."""
from __future__ import annotations

import ast

import gast

from transpile import ast_util as A
from transpile.converters.base import Context, Converter


class Asserts(Converter):
    """The message is evaluated only if the assertion fails, as in Python. Before::

        assert x > 0, "x must be positive"
        assert n < 10

    After::

        ag.assert_stmt(x > 0, 'x must be positive')
        ag.assert_stmt(n < 10, 'n < 10')

    A message that is not a constant is passed as a lambda.
    """

    statements_only = True

    def visit_Assert(self, node):
        if node.msg is None:
            msg = A.const(_source(node.test))
        elif isinstance(node.msg, gast.Constant):
            msg = node.msg
        else:
            msg = A.lambda_(node.msg)
        return A.locate(A.expr_stmt(self.ctx.ag_call("assert_stmt", [node.test, msg])), node)


def _source(expr) -> str:
    """The test's code as the message of an assertion without one (`ast.unparse` adds no parentheses
    around the whole expression, so none need stripping: the message ends as the test does)."""
    return ast.unparse(gast.gast_to_ast(expr))


def transform(fn_node, ctx: Context):
    return Asserts(ctx).visit(fn_node)
