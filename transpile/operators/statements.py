"""`assert` and `print`: checked and printed when the graph runs, in program order, for tensors (an
f-string with graph values in it is a graph string, transpile/operators/formatting.py)."""
from __future__ import annotations

import builtins
import sys

import graph
from transpile.operators.data_structures import TensorList
from transpile.operators.leaves import has_graph_values, is_tensor
from transpile.operators.staging import StagingError, predicate
from transpile.operators.trace_state import is_tracing
from transpile.operators.uncatchable import refuse_if_caught
from transpile.operators.values import MaybeDefined


def assert_stmt(test, message):
    """`assert test, message` (a graph Assert, checked when the graph runs, for a tensor test)."""
    if not is_tensor(test):
        if not test:
            raise AssertionError(message() if callable(message) else message)
        return None
    text = message() if callable(message) else message
    refuse_if_caught(AssertionError(text), "only when the graph runs (the assert's test is a graph tensor)")
    return graph.assert_(predicate(test, "an assert"), str(text))


def _print_parts(value, out: list) -> None:
    """Appends what `print` shows for `value` to `out`: text, and tensors to print at run time."""
    if isinstance(value, MaybeDefined):
        value = value.read()
    if isinstance(value, TensorList):
        value = value.stack()
    if is_tensor(value):
        out.append(graph.convert(value))
    elif isinstance(value, (list, tuple)) and has_graph_values(value):
        out.append("[" if isinstance(value, list) else "(")
        for i, v in enumerate(value):
            if i:
                out.append(", ")
            _print_parts(v, out)
        if isinstance(value, tuple) and len(value) == 1:
            out.append(",")
        out.append("]" if isinstance(value, list) else ")")
    elif isinstance(value, dict) and has_graph_values(value):
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(", ")
            out.append(f"{k!r}: ")
            _print_parts(v, out)
        out.append("}")
    else:
        out.append(str(value))


def print_(*values, sep=" ", end="\n", file=None, flush=False):
    """`print(*values, sep=sep, end=end)`, when the graph runs, in program order.

    Outside a graph (no tensors, not tracing) it is Python's print.
    """
    if not (is_tracing() or any(has_graph_values(v) or isinstance(v, (MaybeDefined, TensorList))
                                for v in values)):
        return builtins.print(*values, sep=sep, end=end, file=file, flush=flush)
    if file not in (None, sys.stdout):
        if any(has_graph_values(v) for v in values):
            raise StagingError("print(..., file=...) of graph tensors is not supported; graph prints go to the "
                               "session's output")
        return builtins.print(*values, sep=sep, end=end, file=file, flush=flush)
    parts: list = []
    for i, v in enumerate(values):
        if i:
            parts.append(sep if sep is not None else " ")
        _print_parts(v, parts)
    merged: list = []
    for p in parts:  # adjacent literal text becomes one part
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        else:
            merged.append(p)
    graph.print_(*merged, sep="", end="\n" if end is None else end, summarize=None)
    return None
