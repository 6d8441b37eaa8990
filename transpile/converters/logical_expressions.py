"""Turns `and`, `or`, `not` and chained comparisons into short-circuiting `ag` calls."""
from __future__ import annotations

import gast

from transpile import anno
from transpile import ast_util as A
from transpile.converters.base import Context, Converter

_SIMPLE = (gast.Name, gast.Constant, gast.Attribute)

TRUTH_TEST = "truth_test"  # on a BoolOp: only its truth value is used (an `if` or `while` test, ...)


def mark_truth_test(expr) -> None:
    """Marks the `and`/`or` expressions whose value is used only as a truth value: `expr` itself and
    those among its operands (`not` and `and`/`or` pass the question on to their operands)."""
    if isinstance(expr, gast.BoolOp):
        anno.set_anno(expr, TRUTH_TEST, True)
        for v in expr.values:
            mark_truth_test(v)
    elif isinstance(expr, gast.UnaryOp) and isinstance(expr.op, gast.Not):
        mark_truth_test(expr.operand)


def mark_truth_tests(fn_node) -> None:
    """Marks the tests of `if`, `while`, `assert` and conditional expressions (see mark_truth_test)."""
    for n in gast.walk(fn_node):
        if isinstance(n, (gast.If, gast.While, gast.IfExp, gast.Assert)):
            mark_truth_test(n.test)


def _is_bool(expr) -> bool:
    """Whether an operand is a truth value already (a comparison, `not`, a marked `and`/`or`, True)."""
    return isinstance(expr, gast.Compare) or (isinstance(expr, gast.UnaryOp) and isinstance(expr.op, gast.Not)) \
        or (isinstance(expr, gast.BoolOp) and anno.get_anno(expr, TRUTH_TEST, False)) \
        or (isinstance(expr, gast.Constant) and isinstance(expr.value, bool))


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

    Where only the truth value is used (a test, see `mark_truth_tests`), each
    operand that is not a truth value already is replaced by its truth value,
    which `bool(a and b) == (bool(a) and bool(b))` allows: a graph cond cannot
    give an int tensor on one side and a bool on the other::

        if m and x > 0:     ->     if ag.and_(ag.bool(m), lambda: x > 0):
    """

    def visit_BoolOp(self, node):
        truth_test = anno.get_anno(node, TRUTH_TEST, False)
        wrap = [truth_test and not _is_bool(v) for v in node.values]
        node = self.generic_visit(node)
        node.values = [A.locate(self.ctx.ag_call("bool", [v]), v) if w else v
                       for v, w in zip(node.values, wrap, strict=True)]
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
