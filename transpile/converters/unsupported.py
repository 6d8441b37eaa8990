"""Rejects constructs that cannot be converted, with the line and a way out."""
from __future__ import annotations

import gast

from transpile.converters.base import Context, walk_same_scope


class Unsupported:
    """Fails the conversion, instead of silently running code unconverted. Rejected::

        def f(x):
            yield x            # generators: use a loop that collects values in a list
        async def f(x): ...    # coroutines
        match x: ...           # structural pattern matching on values that may be tensors
        while (v := f()) > 0:  # an assignment in a loop condition

    Nested generator functions are left as plain Python (they are not converted).
    """

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def check(self, fn_node) -> None:
        if isinstance(fn_node, gast.AsyncFunctionDef):
            raise self.ctx.error(f"cannot convert async function {fn_node.name!r}: coroutines are not "
                                 "supported; make it a regular function", fn_node)
        body = fn_node.body if isinstance(fn_node.body, list) else [fn_node.body]
        for stmt in body:
            for n in walk_same_scope(stmt):
                if isinstance(n, (gast.Yield, gast.YieldFrom)):
                    raise self.ctx.error(
                        f"cannot convert generator function {getattr(fn_node, 'name', '<lambda>')!r}: `yield` "
                        "is not supported in converted code. Collect the values in a list (`out.append(v)`) "
                        "and return it, or mark the function with @transpile.do_not_convert", n)
                if isinstance(n, gast.Await):
                    raise self.ctx.error("`await` is not supported in converted code", n)
                if isinstance(n, gast.While) and any(isinstance(m, gast.NamedExpr) for m in gast.walk(n.test)):
                    raise self.ctx.error("an assignment expression (`:=`) in a `while` condition is not supported "
                                         "in converted code; assign the value before the loop and at the end of "
                                         "its body", n)
                if type(n).__name__ == "Match":
                    raise self.ctx.error("`match` statements are not supported in converted code; "
                                         "use if/elif", n)


def check(fn_node, ctx: Context) -> None:
    Unsupported(ctx).check(fn_node)
