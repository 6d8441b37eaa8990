"""Turns `lst.append(x)` into `lst = ag.list_append(lst, x)`, `lst[k].append(x)` into `ag.append_at`."""
from __future__ import annotations

import gast

from transpile import ast_util as A
from transpile.converters.base import BoundNamesScope, Context, Converter


class Lists(BoundNamesScope, Converter):
    """Appending becomes an assignment, so liveness sees the list change. Before::

        for v in xs:
            out.append(v * 2)
            groups[k].append(v)

    After::

        for v in xs:
            out = ag.list_append(out, v * 2)
            groups = ag.append_at(groups, k, v, 'groups')

    On a Python list `list_append` appends in place, exactly as before; in a
    graph loop the list becomes a TensorArray that is stacked after the loop.
    A list the function does not bind (a global, a closure variable) is only
    read, as in Python: its `append` stays a plain call.
    """

    statements_only = True

    def visit_Expr(self, node):
        call = node.value
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and call.func.attr == "append"
                and len(call.args) == 1 and not call.keywords and not isinstance(call.args[0], gast.Starred)):
            return self.generic_visit(node)
        owner = call.func.value
        if isinstance(owner, gast.Name) and self.binds_locally(owner.id):
            new = A.assign(A.name(owner.id, gast.Store()),
                           self.ctx.ag_call("list_append", [A.name(owner.id), call.args[0]]))
            return A.locate(new, node)
        if isinstance(owner, gast.Subscript) and isinstance(owner.value, gast.Name) \
                and self.binds_locally(owner.value.id) and not isinstance(owner.slice, gast.Slice):
            target = owner.value.id
            new = A.assign(A.name(target, gast.Store()),
                           self.ctx.ag_call("append_at", [A.name(target), owner.slice, call.args[0], A.const(target)]))
            return A.locate(new, node)
        return self.generic_visit(node)

    def visit_ClassDef(self, node):
        return node


def transform(fn_node, ctx: Context):
    return Lists(ctx).visit(fn_node)
