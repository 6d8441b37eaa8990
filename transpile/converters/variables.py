"""Checks reads of names that may be unassigned (`ag.ld`) and writes of globals (`ag.to_global`)."""
from __future__ import annotations

import gast

from transpile import anno
from transpile import ast_util as A
from transpile.converters.base import Context, Converter
from transpile.liveness.activity import FUNCTION_SCOPE
from transpile.liveness.qual_names import QN

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
_COMPS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def _own_expressions(stmt):
    """The expressions a statement evaluates itself (not those of nested statements)."""
    if isinstance(stmt, (gast.If, gast.While)):
        return [stmt.test]
    if isinstance(stmt, gast.For):
        return [stmt.iter]
    if isinstance(stmt, gast.With):
        return list(stmt.items)
    if isinstance(stmt, gast.Try):
        return []
    if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef)):
        return list(stmt.decorator_list) + list(stmt.args.defaults) + [d for d in stmt.args.kw_defaults if d]
    if isinstance(stmt, gast.ClassDef):
        return list(stmt.bases) + list(stmt.decorator_list)
    return [c for c in gast.iter_child_nodes(stmt) if not isinstance(c, gast.stmt)]


def _loads(expr, bound=frozenset()):
    """Name loads in `expr` evaluated now: not inside lambdas, not comprehension-local names."""
    if isinstance(expr, gast.Name):
        if isinstance(expr.ctx, gast.Load) and expr.id not in bound:
            yield expr
        return
    if isinstance(expr, gast.Lambda):
        return
    if isinstance(expr, _COMPS):
        inner = set(bound)
        for g in expr.generators:
            inner |= {n.id for n in gast.walk(g.target) if isinstance(n, gast.Name)}
        for i, g in enumerate(expr.generators):
            yield from _loads(g.iter, bound if i == 0 else frozenset(inner))
            for c in g.ifs:
                yield from _loads(c, frozenset(inner))
        elts = [expr.key, expr.value] if isinstance(expr, gast.DictComp) else [expr.elt]
        for e in elts:
            yield from _loads(e, frozenset(inner))
        return
    for c in gast.iter_child_nodes(expr):
        yield from _loads(c, bound)


def mark_maybe_undefined(fn_node, ctx: Context) -> None:
    """Marks Name loads that may run before their name is assigned (after `analyze`)."""
    for fn in gast.walk(fn_node):
        if not isinstance(fn, (gast.FunctionDef, gast.AsyncFunctionDef)):
            continue
        scope = anno.get_anno(fn, FUNCTION_SCOPE)
        local = scope.local_names() - ctx.generated
        for stmt in _statements(fn.body):
            defined = anno.get_anno(stmt, anno.DEFINED_IN, frozenset())  # simple names only: QN(name)
            exprs = _own_expressions(stmt)
            if isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Name):
                if stmt.target.id in local and QN(stmt.target.id) not in defined:
                    anno.set_anno(stmt, anno.MAYBE_UNDEFINED, True)
            for e in exprs:
                for name in _loads(e):
                    if name.id in local and QN(name.id) not in defined:
                        anno.set_anno(name, anno.MAYBE_UNDEFINED, True)


def _statements(stmts):
    for s in stmts:
        yield s
        if isinstance(s, _SCOPES):
            continue
        for block in ("body", "orelse", "finalbody"):
            sub = getattr(s, block, None)
            if isinstance(sub, list):
                yield from _statements(sub)
        for h in getattr(s, "handlers", None) or []:
            yield from _statements(h.body)


class Variables(Converter):
    """Reads that may see an unassigned name are checked; tensors may not leak into globals.

    Before (`y` is assigned only inside the loop)::

        for i in range(n):
            y = x[i]
        return y

    After (plus the loop conversion)::

        ...
        return ag.ld(y)

    `ag.ld` raises the NameError Python would (or, for a value from a graph loop
    that may have run zero times, checks that when the graph runs). Assigning a
    global declared with `global g` becomes `g = ag.to_global('g', value)`, which
    refuses graph tensors.
    """

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.globals: list[set] = []

    def visit_FunctionDef(self, node):
        scope = anno.get_anno(node, FUNCTION_SCOPE)
        generated = anno.get_anno(node, "generated_function")
        outer = self.globals[-1] if self.globals else set()
        self.globals.append(outer if generated or scope is None else set(scope.globals))
        node = self.generic_visit(node)
        self.globals.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        return node

    def visit_Name(self, node):
        if anno.get_anno(node, anno.MAYBE_UNDEFINED) and isinstance(node.ctx, gast.Load):
            return A.locate(self.ctx.ag_call("ld", [node]), node)
        return node

    def visit_AugAssign(self, node):
        target = node.target
        if anno.get_anno(node, anno.MAYBE_UNDEFINED) and isinstance(target, gast.Name):
            value = gast.BinOp(left=self.ctx.ag_call("ld", [A.name(target.id)]), op=node.op,
                               right=self.visit(node.value))
            node = A.assign(A.name(target.id, gast.Store()), A.locate(value, node))
            A.locate(node, target)
            return self._check_global(node)
        return self._check_global(self.generic_visit(node))

    def visit_Assign(self, node):
        return self._check_global(self.generic_visit(node))

    def _check_global(self, node):
        gl = self.globals[-1] if self.globals else set()
        if not gl or not isinstance(node, (gast.Assign, gast.AugAssign)):
            return node
        targets = node.targets if isinstance(node, gast.Assign) else [node.target]
        names = sorted({n.id for t in targets for n in gast.walk(t)
                        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and n.id in gl})
        if not names:
            return node
        label = A.const(", ".join(names))
        if isinstance(node, gast.AugAssign):
            value = gast.BinOp(left=A.name(node.target.id), op=node.op, right=node.value)
            new = A.assign(A.name(node.target.id, gast.Store()), self.ctx.ag_call("to_global", [label, value]))
            return A.locate(new, node)
        node.value = A.locate(self.ctx.ag_call("to_global", [label, node.value]), node.value)
        return node


def transform(fn_node, ctx: Context):
    return Variables(ctx).visit(fn_node)
