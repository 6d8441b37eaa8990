"""Turns `lst.append(x)` statements into `lst = ag.list_append(lst, x)`."""
from __future__ import annotations

import gast

from transpile import ast_util as A
from transpile.converters.base import BoundNamesScope, Context, Converter


class Lists(BoundNamesScope, Converter):
    """Appending becomes an assignment, so liveness sees the list change. Before::

        for v in xs:
            out.append(v * 2)

    After::

        for v in xs:
            out = ag.list_append(out, v * 2)

    On a Python list `list_append` appends in place, exactly as before; in a
    graph loop the list becomes a TensorArray that is stacked after the loop.
    A list the function does not bind (a global, a closure variable) is only
    read, as in Python: its `append` stays a plain call.
    """

    def visit_Expr(self, node):
        call = node.value
        if (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and call.func.attr == "append" and isinstance(call.func.value, gast.Name)
                and len(call.args) == 1 and not call.keywords
                and not isinstance(call.args[0], gast.Starred)):
            target = call.func.value.id
            if not self.binds_locally(target):
                return self.generic_visit(node)
            new = A.assign(A.name(target, gast.Store()),
                           self.ctx.ag_call("list_append", [A.name(target), call.args[0]]))
            return A.locate(new, node)
        return self.generic_visit(node)

    def visit_ClassDef(self, node):
        return node


def transform(fn_node, ctx: Context):
    return Lists(ctx).visit(fn_node)
