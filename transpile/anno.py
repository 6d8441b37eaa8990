"""Annotations attached to AST nodes by analyses and read by converters."""
from __future__ import annotations

from typing import Any

_KEY = "_transpile_anno"


def set_anno(node, key: str, value: Any) -> None:
    annos = getattr(node, _KEY, None)
    if annos is None:
        annos = {}
        setattr(node, _KEY, annos)
    annos[key] = value


def get_anno(node, key: str, default: Any = None) -> Any:
    return getattr(node, _KEY, {}).get(key, default)


def has_anno(node, key: str) -> bool:
    return key in getattr(node, _KEY, {})


def del_anno(node, key: str) -> None:
    getattr(node, _KEY, {}).pop(key, None)


def copy_annos(src, dst) -> None:
    for k, v in getattr(src, _KEY, {}).items():
        set_anno(dst, k, v)


# Keys shared between analyses and converters.
SCOPE = "scope"                  # activity.Scope of a statement (or an expression with its own scope)
BODY_SCOPE = "body_scope"        # activity.Scope of a compound statement's body
ORELSE_SCOPE = "orelse_scope"    # ... of its else block
ARGS_SCOPE = "args_scope"        # ... of a function's parameters
LIVE_IN = "live_in"              # frozenset of QN live before a statement
LIVE_OUT = "live_out"            # frozenset of QN live after a statement
DEFINED_IN = "defined_in"        # frozenset of QN defined on every path to a statement
MAYBE_DEFINED_IN = "maybe_defined_in"
MAYBE_DEFINED_BEFORE = "maybe_defined_before"  # on compound statements: may be defined on entering it
MAYBE_UNDEFINED = "maybe_undefined"  # on a Name load: it may run before the name is assigned
ORIGIN = "origin"                # the user's (line, col) a generated node stands for
CLASS_BODY = "class_body"        # on a ClassDef: its body, which converters see as `pass` (conversion.py)
GENERATED = "generated"          # names created by converters (flags, return values)
