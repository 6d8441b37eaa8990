"""What every converter shares: the conversion context and a block-aware transformer base."""
from __future__ import annotations

from dataclasses import dataclass, field

import gast

from transpile import ast_util
from transpile.errors import ConversionError
from transpile.naming import Namer


@dataclass
class Context:
    """One conversion of one function: its file, namer and the facts converters share."""

    filename: str
    namer: Namer
    ag: str = "ag"                                 # the runtime module's name in generated code
    fn_globals: dict = field(default_factory=dict)
    fn_closure: dict = field(default_factory=dict)  # free variable -> value at conversion time
    generated: set = field(default_factory=set)     # variables converters introduce (flags, retval)
    return_vars: set = field(default_factory=set)   # ... of which these hold return values

    def error(self, message: str, node=None) -> ConversionError:
        return ConversionError(message, self.filename, getattr(node, "lineno", None))

    def ag_attr(self, attr: str):
        return ast_util.attr(ast_util.name(self.ag), attr)

    def ag_call(self, attr: str, args=(), keywords=()):
        return ast_util.call(self.ag_attr(attr), args, keywords)


class Converter(gast.NodeTransformer):
    """A NodeTransformer whose statement visitors may return lists of statements.

    A converter that rewrites statements only sets `statements_only`: its walk then does
    not enter expressions, which are most of a tree's nodes, so a pass over a function costs
    time in the number of its statements rather than of all its nodes.
    """

    statements_only = False

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def visit_block(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            if r is None:
                continue
            if isinstance(r, list):
                out.extend(r)
            else:
                out.append(r)
        return out

    def generic_visit(self, node):
        if self.statements_only and isinstance(node, gast.expr):
            return node
        for field_name, old in gast.iter_fields(node):
            if isinstance(old, list) and old and isinstance(old[0], gast.stmt):
                setattr(node, field_name, self.visit_block(old))
            elif isinstance(old, list):
                new = []
                for item in old:
                    if isinstance(item, gast.AST):
                        r = self.visit(item)
                        if r is None:
                            continue
                        new.extend(r) if isinstance(r, list) else new.append(r)
                    else:
                        new.append(item)
                setattr(node, field_name, new)
            elif isinstance(old, gast.AST):
                r = self.visit(old)
                setattr(node, field_name, r)
        return node


LOOPS = (gast.While, gast.For)
FUNCTIONS = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)


SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)


def walk_same_scope(node):
    """Like gast.walk, but stays in the scope `node` is in: a function, lambda or class (`node`
    itself included) is yielded but not entered.

    A `return`, `yield` or assignment inside a nested def belongs to that def, so a converter
    looking at the statements of a block (`for s in body: walk_same_scope(s)`) must not see it.
    To walk a function's own body, walk its statements.
    """
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, SCOPES):
            todo.extend(gast.iter_child_nodes(n))


def bound_names(fn) -> set:
    """Names that function `fn` binds itself (parameters, assignments, imports, defs, global, nonlocal)."""
    args = fn.args
    names = {a.id for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if isinstance(a, gast.Name)}
    names |= {a.id for a in (args.vararg, args.kwarg) if isinstance(a, gast.Name)}
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            names.add(n.name)
            continue
        if isinstance(n, gast.Lambda):
            continue
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            names.add(n.id)
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            names.update(n.names)
        elif isinstance(n, (gast.Import, gast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
        todo.extend(gast.iter_child_nodes(n))
    return names


def walk_same_loop(stmts):
    """Statements reachable without entering a nested loop or function (for break/continue)."""
    todo = list(reversed(stmts))
    while todo:
        s = todo.pop()
        yield s
        if isinstance(s, LOOPS) or isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            continue
        for block in ("body", "orelse", "finalbody"):
            todo.extend(reversed(getattr(s, block, []) or []))
        for h in getattr(s, "handlers", []) or []:
            todo.extend(reversed(h.body))


def block_exits(stmts, kinds) -> bool:
    """Whether every path through `stmts` ends in a statement of `kinds` (e.g. Return, Raise)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, kinds):
        return True
    if isinstance(last, gast.If):
        return block_exits(last.body, kinds) and block_exits(last.orelse, kinds)
    if isinstance(last, LOOPS):
        # without a break, a loop is left through its else block (or, for `while True`, not at all)
        if any(isinstance(s, gast.Break) for s in walk_same_loop(last.body)):
            return False
        endless = isinstance(last, gast.While) and isinstance(last.test, gast.Constant) and last.test.value is True
        return endless or block_exits(last.orelse, kinds)
    if isinstance(last, gast.With):
        return block_exits(last.body, kinds)
    if isinstance(last, gast.Try):
        if last.finalbody and block_exits(last.finalbody, kinds):
            return True
        main = block_exits(last.orelse, kinds) if last.orelse else block_exits(last.body, kinds)
        return main and all(block_exits(h.body, kinds) for h in last.handlers)
    return False


def move_rest_into_branches(stmts, kinds, recurse):
    """Guard-clause normalisation: `if c: <exits>` followed by S becomes `if c: <exits> else: S`.

    `recurse(block)` normalises nested blocks. Statements after an unconditional
    exit are dead and dropped.
    """
    out = []
    for i, s in enumerate(stmts):
        recurse(s)
        rest = stmts[i + 1:]
        if isinstance(s, gast.If) and rest:
            t, f = block_exits(s.body, kinds), block_exits(s.orelse, kinds)
            if t and f:
                out.append(s)
                return out
            if t or f:
                branch = "orelse" if t else "body"
                setattr(s, branch, move_rest_into_branches(getattr(s, branch) + rest, kinds, recurse))
                out.append(s)
                return out
        out.append(s)
        if isinstance(s, kinds):
            return out
    return out


class BoundNamesScope:
    """Mixin for converters that treat names the current function does not bind (globals,
    closure variables) differently: `binds_locally(name)` inside a visited function."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._bound: list[set] = []

    def visit_FunctionDef(self, node):
        self._bound.append(bound_names(node))
        try:
            return self.generic_visit(node)
        finally:
            self._bound.pop()

    def binds_locally(self, name: str) -> bool:
        return not self._bound or name in self._bound[-1]
