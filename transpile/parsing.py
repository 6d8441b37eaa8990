"""Finds a function's source and parses it, keeping the user's absolute line and column numbers."""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from dataclasses import dataclass

import gast

from transpile.errors import ConversionError

_module_cache: dict[tuple, ast.Module] = {}


@dataclass(frozen=True, slots=True)
class ParsedFunction:
    node: object          # gast.FunctionDef / gast.Lambda, positions as in the user's file
    filename: str
    source_lines: tuple   # the lines of the user's file


def _module_ast(filename: str, lines: list[str]) -> ast.Module | None:
    key = (filename, len(lines), hash(tuple(lines)))
    tree = _module_cache.get(key)
    if tree is None:
        try:
            tree = ast.parse("".join(lines), filename=filename)
        except SyntaxError:
            return None
        if len(_module_cache) > 256:
            _module_cache.clear()
        _module_cache[key] = tree
    return tree


def _first_line(node) -> int:
    decorators = getattr(node, "decorator_list", None)
    return min([node.lineno] + [d.lineno for d in decorators or ()])


def _find_function(tree, code) -> ast.AST | None:
    candidates = []
    for node in ast.walk(tree):
        if code.co_name == "<lambda>":
            if isinstance(node, ast.Lambda) and node.lineno <= code.co_firstlineno <= node.end_lineno:
                candidates.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            if _first_line(node) == code.co_firstlineno or node.lineno == code.co_firstlineno:
                candidates.append(node)
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    return _by_positions(candidates, code)


def _by_positions(candidates, code):
    """Picks the lambda whose body spans the positions recorded in the code object."""
    positions = [(ln, col) for ln, _, col, _ in code.co_positions() if ln is not None and col is not None]
    if not positions:
        return None
    args = [a for a in code.co_varnames[:code.co_argcount]]
    matches = []
    for node in candidates:
        if isinstance(node, ast.Lambda) and [a.arg for a in node.args.args] != args[:len(node.args.args)]:
            continue
        body = node.body
        start, end = (body.lineno, body.col_offset), (body.end_lineno, body.end_col_offset)
        if all(start <= p <= end for p in positions):
            matches.append(node)
    # the innermost match: lambdas nested in lambdas contain each other
    matches.sort(key=lambda n: (n.body.end_lineno - n.body.lineno, n.body.end_col_offset - n.body.col_offset))
    return matches[0] if matches else None


def parse_function(fn) -> ParsedFunction:
    """The gast tree of `fn` (a def or a lambda) with the positions it has in its file."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise ConversionError(f"cannot convert {fn!r}: it is not a Python function")
    filename = code.co_filename
    lines = linecache.getlines(filename, getattr(fn, "__globals__", {}))
    node = None
    if lines:
        tree = _module_ast(filename, lines)
        if tree is not None:
            node = _find_function(tree, code)
    if node is None:
        node = _parse_from_inspect(fn, filename)
        lines = lines or []
    return ParsedFunction(gast.ast_to_gast(node), filename, tuple(lines))


def _parse_from_inspect(fn, filename):
    try:
        source_lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise ConversionError(
            f"cannot convert function {fn.__qualname__!r}: its source code is unavailable ({e}). "
            "Define it in a file (not an interactive prompt or exec string), or register its "
            "source with linecache", filename, fn.__code__.co_firstlineno) from None
    text = "".join(source_lines)
    dedented = textwrap.dedent(text)
    indent = len(source_lines[0]) - len(source_lines[0].lstrip())
    try:
        tree = ast.parse(dedented)
    except SyntaxError:
        raise ConversionError(f"cannot convert function {fn.__qualname__!r}: its source could not be "
                              "parsed on its own (a lambda inside a larger expression?)",
                              filename, first) from None
    ast.increment_lineno(tree, first - 1)
    for n in ast.walk(tree):
        if hasattr(n, "col_offset") and n.col_offset is not None:
            n.col_offset += indent
            if getattr(n, "end_col_offset", None) is not None:
                n.end_col_offset += indent
    found = _find_function(tree, fn.__code__)
    if found is None:
        raise ConversionError(f"cannot convert function {fn.__qualname__!r}: its definition was not found "
                              "in its source", filename, first)
    return found
