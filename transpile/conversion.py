"""The conversion pipeline: parse, analyse, run the converters, compile with the user's positions."""
from __future__ import annotations

import ast
import contextlib
import copy
import functools
import gc
import inspect
import types
from dataclasses import dataclass

import astor
import gast

from transpile import anno, ast_util, liveness, parsing
from transpile.code_cache import CodeMap
from transpile.converters import (
    asserts,
    break_statements,
    call_trees,
    conditional_expressions,
    conditionals,
    continue_statements,
    dead_flags,
    guard_clauses,
    lists,
    logical_expressions,
    loops,
    return_statements,
    slices,
    unsupported,
    variables,
)
from transpile.converters.base import Context, walk_same_scope
from transpile.converters.carried import GENERATED_FN
from transpile.liveness.activity import FUNCTION_SCOPE
from transpile.naming import Namer

FACTORY = "transpiled_factory"

# code objects of converted user functions (and everything nested in them), by identity and held
# weakly (code_cache.py)
CONVERTED_CODE: CodeMap[bool] = CodeMap()
# code object of a converted function -> the except clauses of the `try` statements in its own body
EXCEPT_CLAUSES: CodeMap[list] = CodeMap()


@dataclass(frozen=True, slots=True)
class ExceptClause:
    """An `except` clause of converted code: the lines of its `try` body, its own line and the source of
    the exception types it names (None for a bare `except:`)."""

    try_lines: tuple[int, int]
    line: int
    types: str | None


def except_clauses_around(frame) -> list[ExceptClause]:
    """The except clauses whose `try` body the converted code running in `frame` is in."""
    clauses = EXCEPT_CLAUSES.get(frame.f_code, ())
    return [c for c in clauses if c.try_lines[0] <= frame.f_lineno <= c.try_lines[1]]


def is_converted_code(code) -> bool:
    return code in CONVERTED_CODE


def _register(code, except_clauses: dict) -> None:
    todo = [code]
    while todo:
        c = todo.pop()
        CONVERTED_CODE[c] = True
        clauses = except_clauses.get((c.co_name, c.co_firstlineno))
        if clauses:
            EXCEPT_CLAUSES[c] = clauses
        # a class body stays as the user wrote it (its methods are converted when called)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType) and k.co_flags & inspect.CO_OPTIMIZED)


@dataclass
class Converted:
    """The result of converting one function's source."""

    node: object                # the converted gast FunctionDef / Lambda
    code: types.CodeType        # the converted function's code object
    ag_name: str                # the runtime module's name in the code
    freevars: tuple             # free variables of `code`, in order
    filename: str

    @functools.cached_property
    def source(self) -> str:
        """The converted function's source, made when first asked for (it is for reading: what runs
        is `code`, compiled from `node`)."""
        return to_source(self.node)

    def instantiate(self, fn, ag_module) -> types.FunctionType:
        """A function running the converted code with `fn`'s globals, defaults and closure cells."""
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True))
        closure = []
        for name in self.code.co_freevars:
            if name == self.ag_name:
                closure.append(types.CellType(ag_module))
            elif name in cells:
                closure.append(cells[name])
            elif name == "__class__":
                closure.append(types.CellType(None))
            else:
                raise RuntimeError(f"converted code needs free variable {name!r} that {fn.__qualname__} lacks")
        new = types.FunctionType(self.code, fn.__globals__, fn.__name__, fn.__defaults__, tuple(closure) or None)
        new.__kwdefaults__ = copy.copy(fn.__kwdefaults__)
        new.__qualname__ = fn.__qualname__
        new.__module__ = fn.__module__
        new.__doc__ = fn.__doc__
        new.__dict__.update(fn.__dict__)
        new.__wrapped_original__ = fn
        return new


def _nested_generators(fn_node):
    out = []
    for n in gast.walk(fn_node):
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef)) and n is not fn_node:
            if any(isinstance(m, (gast.Yield, gast.YieldFrom)) for s in n.body for m in walk_same_scope(s)):
                out.append(n)
    return out




def _hide_class_bodies(fn_node) -> None:
    """Classes defined in a converted function are left as written (their methods are converted when
    called, like any user function): the analyses and converters see each class body as `pass`."""
    todo = [fn_node]
    while todo:
        n = todo.pop()
        if isinstance(n, gast.ClassDef):
            anno.set_anno(n, anno.CLASS_BODY, n.body)  # classes nested in it stay inside the hidden body
            n.body = [ast_util.locate(gast.Pass(), n)]
        else:
            todo.extend(gast.iter_child_nodes(n))


def _restore_class_bodies(fn_node) -> None:
    for n in [n for n in gast.walk(fn_node) if isinstance(n, gast.ClassDef) and anno.has_anno(n, anno.CLASS_BODY)]:
        n.body = anno.get_anno(n, anno.CLASS_BODY)
        anno.del_anno(n, anno.CLASS_BODY)


def _closure_values(fn) -> dict:
    out = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            pass
    return out


def convert_node(node, ctx: Context):
    """Runs the converters on a gast FunctionDef (or Lambda) in place; returns the new node."""
    unsupported.check(node, ctx)
    is_lambda = isinstance(node, gast.Lambda)
    if is_lambda:
        # a lambda is converted as a one-line function and turned back into a lambda at the end
        fn = ast_util.function_def("lambda_", [], [ast_util.ret(node.body)])
        fn.args = node.args
        ast_util.locate(fn, node)
        node = fn
    generators = {id(g): copy.deepcopy(g.body) for g in _nested_generators(node)}
    _hoist_declarations(node)
    _hide_class_bodies(node)
    logical_expressions.mark_truth_tests(node)
    for step in (guard_clauses, return_statements, break_statements, continue_statements, dead_flags, asserts,
                 lists, slices):
        node = step.transform(node, ctx)
    liveness.analyze(node)
    node = call_trees.transform(node, ctx)
    variables.mark_maybe_undefined(node, ctx)
    for step in (conditionals, loops):
        node = step.transform(node, ctx)
    _declare_outer_names(node)
    for step in (conditional_expressions, logical_expressions, variables):
        node = step.transform(node, ctx)
    for g in gast.walk(node):
        if id(g) in generators:
            g.body = generators[id(g)]
    _restore_class_bodies(node)
    if is_lambda:
        lam = gast.Lambda(args=node.args, body=node.body[0].value)
        ast_util.locate(lam, node)
        return lam
    return node


def _hoist_declarations(fn_node) -> None:
    """Moves the function's `global` and `nonlocal` statements to its start: each applies to the whole
    function wherever it is written, and the converters move the block it is in (an `if` branch, a loop
    body) into a function of its own."""
    found: dict[type, list[str]] = {gast.Global: [], gast.Nonlocal: []}

    def strip(stmts: list) -> list:
        kept = []
        for s in stmts:
            if isinstance(s, (gast.Global, gast.Nonlocal)):
                found[type(s)].extend(n for n in s.names if n not in found[type(s)])
                continue
            if not isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                for block in ("body", "orelse", "finalbody"):
                    inner = getattr(s, block, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                        setattr(s, block, strip(inner) or [ast_util.locate(gast.Pass(), s)])
                for h in getattr(s, "handlers", None) or []:
                    h.body = strip(h.body) or [ast_util.locate(gast.Pass(), h)]
            kept.append(s)
        return kept

    body = strip(fn_node.body)
    decls = [ast_util.locate(kind(names=names), fn_node) for kind, names in found.items() if names]
    fn_node.body = decls + (body or [ast_util.locate(gast.Pass(), fn_node)])


def _declare_outer_names(fn_node) -> None:
    """Generated functions that assign a captured, nonlocal or global name of their user function
    declare it (`nonlocal x` / `global x`), so closures keep seeing one variable."""
    def visit(fn, outer_cells, outer_globals):
        scope = anno.get_anno(fn, FUNCTION_SCOPE)
        generated = anno.get_anno(fn, GENERATED_FN)
        if generated:
            cells, globals_ = outer_cells, outer_globals
            declared = {n for s in fn.body if isinstance(s, (gast.Nonlocal, gast.Global)) for n in s.names}
            params = {a.id for a in fn.args.args}
            stored = set()
            for s in fn.body:
                for n in walk_same_scope(s):
                    if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
                        stored.add(n.id)
            need_nl = sorted((stored & cells) - declared - params)
            need_gl = sorted((stored & globals_) - declared - params)
            decls = []
            if need_nl:
                decls.append(gast.Nonlocal(names=need_nl))
            if need_gl:
                decls.append(gast.Global(names=need_gl))
            for d in decls:
                ast_util.locate(d, fn)
            fn.body = decls + fn.body
        else:
            cells = set(scope.cell_vars) | set(scope.nonlocals) if scope else set()
            globals_ = set(scope.globals) if scope else set()
        for s in fn.body:
            for n in walk_same_scope(s):
                if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef)) and n is not fn:
                    visit(n, cells, globals_)
    for s in fn_node.body:
        for n in walk_same_scope(s):
            if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef)):
                visit(n, *_cells_of(fn_node))


def _cells_of(fn):
    scope = anno.get_anno(fn, FUNCTION_SCOPE)
    if scope is None:
        return set(), set()
    return set(scope.cell_vars) | set(scope.nonlocals), set(scope.globals)


def _except_clauses(fn_node) -> dict:
    """(name, line) of each function in `fn_node` (itself included) -> the except clauses of the `try`
    statements in its own body."""
    out = {}
    for fn in gast.walk(fn_node):
        if not isinstance(fn, (gast.FunctionDef, gast.AsyncFunctionDef)):
            continue
        clauses = []
        for s in fn.body:
            for n in walk_same_scope(s):
                if isinstance(n, gast.Try) and n.handlers:
                    lines = (n.lineno, n.handlers[0].lineno - 1)
                    clauses += [ExceptClause(lines, h.lineno, None if h.type is None else to_source(h.type).strip())
                                for h in n.handlers]
        if clauses:
            out[(fn.name, fn.lineno)] = tuple(clauses)
    return out


def to_source(node) -> str:
    """The code of `node` as users read it: a statement on one line, as the user wrote it (astor's
    wrapping at 79 characters split the converters' calls in the middle of names like `ag.IfFacts`)."""
    return astor.to_source(gast.gast_to_ast(node), indent_with="    ", pretty_source="".join)


@contextlib.contextmanager
def collection_paused():
    """Python's cyclic garbage collector paused inside (where it runs, as the user set it): converting and
    tracing a function make many small objects (AST nodes, annotations, graph nodes) that live until they
    are done, and the collector's passes over them grew with the function, so a function of 4,000
    statements cost 1.8 times as much per statement as one of 100 (bench/conversion.py). The garbage they
    leave is collected on the collector's next pass after."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@collection_paused()
def convert_function(fn) -> Converted:
    """Converts a Python function (def or lambda) and compiles it with the user's filename and lines."""
    parsed = parsing.parse_function(fn)
    node = parsed.node
    node.decorator_list = [] if hasattr(node, "decorator_list") else None
    if hasattr(node, "decorator_list"):
        node.decorator_list = []
    namer = Namer.for_function(node, extra=fn.__code__.co_freevars)
    ag_name = namer.new("ag")
    ctx = Context(parsed.filename, namer, ag=ag_name, fn_globals=fn.__globals__, fn_closure=_closure_values(fn))
    node = convert_node(node, ctx)
    code = _compile(node, ctx, fn, parsed.filename)
    _register(code, _except_clauses(node))
    return Converted(node, code, ag_name, code.co_freevars, parsed.filename)


def _compile(node, ctx: Context, fn, filename) -> types.CodeType:
    freevars = [ctx.ag] + [v for v in fn.__code__.co_freevars if v != ctx.ag]
    if "__class__" not in freevars:
        freevars.append("__class__")
    is_lambda = isinstance(node, gast.Lambda)
    original_name = None if is_lambda else node.name
    if not is_lambda:
        # compiled under a name nothing refers to, so that a recursive call reads the global
        node.name = ctx.namer.new(f"{original_name}_converted")
    try:
        target = node
        if is_lambda:
            target = gast.Return(value=node)
            ast_util.locate(target, node)
        factory = ast_util.function_def(FACTORY, freevars, [target] if is_lambda
                                        else [node, ast_util.ret(ast_util.name(node.name))])
        ast_util.locate(factory, node)
        module = gast.Module(body=[factory], type_ignores=[])
        ast_util.fill_positions(module)
        tree = gast.gast_to_ast(module)
        ast.fix_missing_locations(tree)
        module_code = compile(tree, filename, "exec", dont_inherit=True)
    finally:
        if not is_lambda:
            compiled_name, node.name = node.name, original_name
    factory_code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
    want = "<lambda>" if is_lambda else compiled_name
    code = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == want)
    if not is_lambda:
        code = code.replace(co_name=original_name, co_qualname=fn.__qualname__)
    return code
