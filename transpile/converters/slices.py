"""Turns item assignment `x[i] = v` into `x = ag.set_item(x, i, v)`."""
from __future__ import annotations

import gast

from transpile import ast_util as A
from transpile.converters.base import BoundNamesScope, Context, Converter


def _container(node):
    """`x` or `self.x` (a name or attribute chain) that an item assignment changes, else None."""
    base = node
    while isinstance(base, gast.Attribute):
        base = base.value
    return node if isinstance(base, gast.Name) else None


class Slices(BoundNamesScope, Converter):
    """Graph tensors are immutable, so writing an item makes a new tensor. Before::

        x[i] = v
        y[0] += 1
        self.w[i] = v

    After::

        x = ag.set_item(x, i, v)
        y = ag.set_item(y, 0, y[0] + 1)
        ag.set_attribute_item(self, 'w', i, v)

    `set_item` writes Python lists and numpy arrays in place (and returns them),
    as before; for a tensor it returns the updated copy; for a Variable it
    assigns the item (`v.assign_at(i, value)`). An attribute gets the new value only where
    `set_item` made one (a tensor's), so that `a.T[i] = v` writes through the view. A name the function does not
    bind (a global, a closure variable) is only read, as in Python: its item
    assignment becomes `ag.set_item(buffer, i, v, in_place='buffer')`.
    """

    statements_only = True

    def _rewrite(self, target, value, node):
        container = _container(target.value)
        if container is None:
            return None
        read = A.with_ctx(A.copy_node(container), gast.Load())
        if isinstance(container, gast.Attribute):
            owner = A.with_ctx(A.copy_node(container.value), gast.Load())
            call = self.ctx.ag_call("set_attribute_item", [owner, A.const(container.attr), target.slice, value])
            return A.locate(A.expr_stmt(call), node)
        if isinstance(container, gast.Name) and not self.binds_locally(container.id):
            call = self.ctx.ag_call("set_item", [read, target.slice, value],
                                    [A.keyword("in_place", A.const(container.id))])
            return A.locate(A.expr_stmt(call), node)
        new = A.assign(A.with_ctx(A.copy_node(container), gast.Store()),
                       self.ctx.ag_call("set_item", [read, target.slice, value]))
        return A.locate(new, node)

    def visit_Assign(self, node):
        node = self.generic_visit(node)
        if len(node.targets) != 1:
            return node
        target = node.targets[0]
        if isinstance(target, gast.Subscript):
            return self._rewrite(target, node.value, node) or node
        if isinstance(target, (gast.Tuple, gast.List)) and any(isinstance(e, gast.Subscript) for e in target.elts) \
                and not any(isinstance(e, gast.Starred) for e in target.elts):
            return self._unpack(target, node)
        return node

    def _unpack(self, target, node):
        """`a[0], b = v` becomes `items = v` and one assignment per target, left to right."""
        items = self.ctx.namer.new("items")
        out = [A.locate(A.assign(A.name(items, gast.Store()), node.value), node)]
        for i, elt in enumerate(target.elts):
            value = gast.Subscript(value=A.name(items), slice=A.const(i), ctx=gast.Load())
            if isinstance(elt, gast.Subscript):
                new = self._rewrite(elt, value, node)
                if new is None:
                    new = A.locate(A.assign(elt, value), node)
            else:
                new = A.locate(A.assign(A.with_ctx(elt, gast.Store()), value), node)
            out.append(new)
        return out

    def visit_AugAssign(self, node):
        node = self.generic_visit(node)
        if isinstance(node.target, gast.Subscript) and _container(node.target.value) is not None:
            target = node.target
            read = gast.Subscript(value=A.with_ctx(A.copy_node(target.value), gast.Load()),
                                  slice=A.copy_node(target.slice), ctx=gast.Load())
            value = A.locate(gast.BinOp(left=read, op=node.op, right=node.value), node)
            return self._rewrite(target, value, node) or node
        return node

    def visit_ClassDef(self, node):
        return node


def transform(fn_node, ctx: Context):
    return Slices(ctx).visit(fn_node)
