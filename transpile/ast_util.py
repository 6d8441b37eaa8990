"""Small builders for gast nodes, and copying the user's source positions onto generated code."""
from __future__ import annotations

import copy

import gast

_POS = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def name(id_: str, ctx=None) -> gast.Name:
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def param(id_: str) -> gast.Name:
    return name(id_, gast.Param())


def const(value) -> gast.Constant:
    return gast.Constant(value=value, kind=None)


def literal(value):
    """The expression that builds `value`: a number, str, bool or None, or tuples and dicts of them."""
    if isinstance(value, tuple):
        return tuple_([literal(v) for v in value])
    if isinstance(value, dict):
        return gast.Dict(keys=[literal(k) for k in value], values=[literal(v) for v in value.values()])
    if value is None or isinstance(value, (int, float, str)):
        return const(value)
    raise TypeError(f"no literal for {type(value).__name__}")


def attr(base, attr_name: str, ctx=None) -> gast.Attribute:
    if isinstance(base, str):
        base = name(base)
    return gast.Attribute(value=base, attr=attr_name, ctx=ctx or gast.Load())


def call(func, args=(), keywords=()) -> gast.Call:
    if isinstance(func, str):
        func = name(func)
    return gast.Call(func=func, args=list(args), keywords=list(keywords))


def keyword(arg: str, value) -> gast.keyword:
    return gast.keyword(arg=arg, value=value)


def tuple_(elts, ctx=None) -> gast.Tuple:
    return gast.Tuple(elts=list(elts), ctx=ctx or gast.Load())


def assign(target, value) -> gast.Assign:
    return gast.Assign(targets=[target], value=value, type_comment=None)


def expr_stmt(value) -> gast.Expr:
    return gast.Expr(value=value)


def ret(value) -> gast.Return:
    return gast.Return(value=value)


def pass_(origin) -> gast.Pass:
    return locate(gast.Pass(), origin)


def not_(operand) -> gast.UnaryOp:
    return gast.UnaryOp(op=gast.Not(), operand=operand)


def if_(test, body, orelse=()) -> gast.If:
    return gast.If(test=test, body=list(body), orelse=list(orelse))


def lambda_(body, params=()) -> gast.Lambda:
    return gast.Lambda(args=arguments([param(p) for p in params]), body=body)


def arguments(args) -> gast.arguments:
    return gast.arguments(args=list(args), posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                          kwarg=None, defaults=[])


def function_def(fn_name: str, params, body) -> gast.FunctionDef:
    return gast.FunctionDef(name=fn_name, args=arguments([param(p) for p in params]), body=list(body),
                            decorator_list=[], returns=None, type_comment=None, type_params=[])


def with_ctx(node, ctx):
    """A copy-free retarget of an expression to Load/Store context (recursively for tuples)."""
    if isinstance(node, (gast.Name, gast.Attribute, gast.Subscript, gast.Starred)):
        node.ctx = ctx
    if isinstance(node, (gast.Tuple, gast.List)):
        node.ctx = ctx
        for e in node.elts:
            with_ctx(e, ctx)
    if isinstance(node, gast.Starred):
        with_ctx(node.value, ctx)
    return node


def expr_from_qn_text(text: str, ctx=None):
    """The expression for a (possibly composite) name such as `self.x` or `a[0]`."""
    node = gast.parse(text, mode="eval").body
    for n in gast.walk(node):
        for k in _POS:
            if hasattr(n, k):
                setattr(n, k, None)
    return with_ctx(node, ctx or gast.Load())


def copy_node(node):
    return copy.deepcopy(node)


def locate(tree, origin):
    """Gives every node in `tree` that has no position the position of `origin`.

    Generated code is compiled with the user's filename, so this is what makes
    tracebacks and graph node locations point at the user's line.
    """
    if origin is None or getattr(origin, "lineno", None) is None:
        return tree
    pos = dict(zip(_POS, header_span(origin), strict=True))
    nodes = tree if isinstance(tree, list) else [tree]
    for root in nodes:
        for n in gast.walk(root):
            if isinstance(n, (gast.expr, gast.stmt, gast.excepthandler)) and getattr(n, "lineno", None) is None:
                for k, v in pos.items():
                    setattr(n, k, v)
    return tree


def header_span(node) -> tuple:
    """(lineno, col, end_lineno, end_col) of the line that introduces `node`.

    Generated code stands on one line: a span over several lines would make
    Python report the last one for calls (it locates a call at its callee).
    """
    if isinstance(node, (gast.If, gast.While)):
        end = node.test
    elif isinstance(node, (gast.For, gast.AsyncFor)):
        end = node.iter
    else:
        end = node
    line, col = node.lineno, node.col_offset or 0
    end_line, end_col = getattr(end, "end_lineno", None), getattr(end, "end_col_offset", None)
    if end_line != line or end_col is None:
        return line, col, line, col
    return line, col, end_line, end_col


def fill_positions(root) -> None:
    """Gives nodes still without a position their parent's (like ast.fix_missing_locations)."""
    def visit(node, parent_pos):
        if isinstance(node, (gast.expr, gast.stmt, gast.excepthandler)):
            if getattr(node, "lineno", None) is None:
                for k, v in zip(_POS, parent_pos, strict=True):
                    setattr(node, k, v)
            if getattr(node, "end_lineno", None) is None:
                node.end_lineno, node.end_col_offset = node.lineno, node.col_offset
            parent_pos = tuple(getattr(node, k) for k in _POS)
        for child in gast.iter_child_nodes(node):
            visit(child, parent_pos)
    visit(root, (1, 0, 1, 0))


def is_docstring(stmt) -> bool:
    return isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Constant) and isinstance(stmt.value.value, str)
