"""Text made from graph values: f-strings, `str()`, `repr()`, `format()`, `'%.2f' % x`, `'{}'.format(x)`
and `', '.join(...)`, as Python makes it when the graph runs.

With Python values these are Python's own. With a graph value in them they build a StringFormat node
(graph/ops/strings.py) whose value, when the graph runs, is the text Python would make of the values
then: format specs and conversions included, and a value that stands for a Python number in the
traced program formatted as that number (`3.0`, not numpy's `np.float64(3.0)`).
"""
from __future__ import annotations

import re
import string

import graph
from graph.ops.strings import Field, string_format
from transpile.operators.data_structures import TensorList
from transpile.operators.leaves import has_graph_values, is_tensor, weak_type
from transpile.operators.values import MaybeDefined

_FORMATTER = string.Formatter()


class _Piece:
    """A value of an f-string with its spec and conversion (`{value!r:.3f}`), as `fmt` gives it."""

    __slots__ = ("value", "spec", "conversion")

    def __init__(self, value, spec: str, conversion: str):
        self.value, self.spec, self.conversion = value, spec, conversion


def _is_graph_value(value) -> bool:
    return is_tensor(value) or isinstance(value, (MaybeDefined, TensorList)) or has_graph_values(value)


def fmt(value, spec="", conversion=-1):
    """`f"{value!conversion:spec}"`."""
    conv = "" if conversion in (-1, None) else chr(conversion)
    if _is_graph_value(value):
        return _Piece(value, spec, conv)
    value = {"": lambda v: v, "r": repr, "s": str, "a": ascii}[conv](value)
    return format(value, spec)


def fstr(*parts):
    """`f"..."`: the joined text (a graph string when a graph value is in it)."""
    if not any(isinstance(p, _Piece) or _is_graph_value(p) for p in parts):
        return "".join(p if isinstance(p, str) else format(p, "") for p in parts)
    pieces: list = []
    for p in parts:
        if isinstance(p, _Piece):
            _append(pieces, p.value, p.spec, p.conversion)
        elif isinstance(p, str):
            pieces.append(p)
        else:
            _append(pieces, p, "", "")
    return _text(pieces)


def str_(*args, **kwargs):
    """`str(x)`."""
    if len(args) == 1 and not kwargs and _is_graph_value(args[0]):
        pieces: list = []
        _append(pieces, args[0], "", "s")
        return _text(pieces)
    return str(*args, **kwargs)


def repr_(value):
    """`repr(x)`."""
    if not _is_graph_value(value):
        return repr(value)
    pieces: list = []
    _append(pieces, value, "", "r")
    return _text(pieces)


def format_(value, spec=""):
    """`format(x, spec)`."""
    if not _is_graph_value(value):
        return format(value, spec)
    pieces: list = []
    _append(pieces, value, spec, "")
    return _text(pieces)


def percent(template: str, values):
    """`template % values` for a str `template` (printf-style formatting)."""
    if not _is_graph_value(values) or not isinstance(template, str):
        return template % values
    items = values if isinstance(values, tuple) else (values,)
    pieces: list = []
    for literal, spec in _percent_parts(template, len(items)):
        pieces.append(literal)
        if spec is not None:
            k, format_spec, conversion, as_int = spec
            value = items[k]
            if as_int:
                value = graph.cast(graph.convert(value), "int64") if is_tensor(value) else int(value)
            _append(pieces, value, format_spec, conversion)
    return _text(pieces)


def format_method(template: str, *args, **kwargs):
    """`template.format(*args, **kwargs)`."""
    if not _is_graph_value((args, kwargs)):
        return template.format(*args, **kwargs)
    pieces: list = []
    auto = 0
    for literal, field, spec, conversion in _FORMATTER.parse(template):
        pieces.append(literal)
        if field is None:
            continue
        if field == "":
            field, auto = str(auto), auto + 1
        value, _ = _FORMATTER.get_field(field, args, kwargs)
        _append(pieces, value, spec or "", conversion or "")
    return _text(pieces)


def join(separator: str, items):
    """`separator.join(items)`."""
    items = list(items)
    if not any(_is_graph_value(v) for v in items):
        return separator.join(items)
    pieces: list = []
    for k, v in enumerate(items):
        if k:
            pieces.append(separator)
        if isinstance(v, str):
            pieces.append(v)
        else:
            _append(pieces, v, "", "")
    return _text(pieces)


def _append(pieces: list, value, spec: str, conversion: str) -> None:
    """The pieces of the text Python makes of `format(conversion(value), spec)`."""
    if isinstance(value, MaybeDefined):
        value = value.read()
    if isinstance(value, TensorList):
        value = value.stack()
    if is_tensor(value):
        pieces.append((value, Field(spec, conversion, _python_type(value))))
    elif isinstance(value, (list, tuple, dict)) and has_graph_values(value) and not spec and conversion != "a":
        _append_container(pieces, value)   # str() of a container is the repr() of its items
    elif _is_graph_value(value):
        raise TypeError(f"cannot format {type(value).__name__} holding graph values with spec {spec!r}")
    else:
        text = {"": lambda v: v, "r": repr, "s": str, "a": ascii}[conversion](value)
        pieces.append(format(text, spec))


def _append_container(pieces: list, value) -> None:
    if isinstance(value, dict):
        pieces.append("{")
        for k, (key, v) in enumerate(value.items()):
            pieces.append((", " if k else "") + repr(key) + ": ")
            _append(pieces, v, "", "r")
        pieces.append("}")
        return
    opening, closing = ("[", "]") if isinstance(value, list) else ("(", ")")
    pieces.append(opening)
    for k, v in enumerate(value):
        if k:
            pieces.append(", ")
        _append(pieces, v, "", "r")
    if isinstance(value, tuple) and len(value) == 1:
        pieces.append(",")
    pieces.append(closing)


def _python_type(value) -> str:
    kind = weak_type(graph.convert(value)) if is_tensor(value) else None
    return kind.__name__ if kind is not None else ""


def _text(pieces: list):
    """The text of literal strings and (value, Field) pairs: a str, or a graph string."""
    merged: list = []
    for p in pieces:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        elif p != "":
            merged.append(p)
    if all(isinstance(p, str) for p in merged):
        return "".join(merged)
    return string_format(merged)


# printf-style conversion specifiers: %[(name)][flags][width][.precision][length]type
_PERCENT = re.compile(r"%(?:\((?P<key>[^)]*)\))?(?P<flags>[-#0 +]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?"
                      r"[hlL]?(?P<type>[diouxXeEfFgGcrsa%])")


def _percent_parts(template: str, n_values: int) -> list:
    """(literal text, spec) pairs of a printf-style template: spec None after the last literal, else
    (value index, format spec, conversion, whether the value is taken as an int)."""
    out, pos, k = [], 0, 0
    for m in _PERCENT.finditer(template):
        literal = template[pos:m.start()]
        pos = m.end()
        if m["type"] == "%":
            out.append((literal + "%", None))
            continue
        if m["key"] is not None or m["width"] == "*" or m["prec"] == "*":
            raise TypeError(f"printf-style formatting of graph values supports positional specifiers only: "
                            f"{m.group(0)!r}")
        kind = m["type"]
        flags = m["flags"]
        align = "<" if "-" in flags else ""
        fill = "0" if "0" in flags and not align else ""
        sign = "+" if "+" in flags else " " if " " in flags else ""
        alt = "#" if "#" in flags else ""
        width = m["width"] or ""
        precision = f".{m['prec']}" if m["prec"] is not None else ""
        conversion, as_int, type_char = "", False, kind
        if kind in "diu":
            as_int, type_char = True, "d"
        elif kind in "rsa":
            conversion, type_char = kind, ""
        spec = f"{align}{sign}{alt}{fill}{width}{precision if kind not in 'diuxXoc' else ''}{type_char}"
        out.append((literal, (k, spec, conversion, as_int)))
        k += 1
    if k != n_values:
        raise TypeError(f"not all arguments converted during string formatting ({k} specifiers, {n_values} "
                        "values)")
    out.append((template[pos:], None))
    return out
