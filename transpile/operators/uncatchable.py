"""Exceptions that happen only when the graph runs, and the converted code's `except` clauses that would
catch them in Python but cannot in the graph.

While a `try` statement runs in Python during tracing, its `except` clauses
catch what its body raises in Python, as they would without conversion. An
exception of a graph cond's branch (a `raise`, or any error while tracing a
branch that the graph may not take), of a graph loop's body (which the graph
may run any number of times) or of a graph assert happens, or not, only when
the graph runs, where no `except` clause is: converting it then is an error
that names the `raise` and the `except`.
"""
from __future__ import annotations

import sys

from graph.errors import SourceLocation, user_location
from transpile import conversion
from transpile.errors import UncatchableError
from transpile.operators.staging import StagingError


def refuse_if_caught(exc: BaseException, when: str, raised_at: SourceLocation | None = None) -> None:
    """Raises (past the user's except clauses) when an `except` clause around the code being traced
    would catch `exc`, which happens only `when` (e.g. "when the graph takes that branch of ...")."""
    frame = sys._getframe(1)
    while frame is not None:
        for clause in conversion.except_clauses_around(frame):
            if _catches(clause, exc, frame):
                raise UncatchableError(StagingError(_message(exc, when, raised_at, clause, frame)))
        frame = frame.f_back


def _catches(clause, exc: BaseException, frame) -> bool:
    if clause.types is None:
        return True
    try:
        types = eval(clause.types, frame.f_globals, frame.f_locals)  # a name or a tuple of names, as Python does
        return isinstance(exc, types)
    except Exception:
        return True  # cannot tell: it may catch it


def _message(exc, when: str, raised_at, clause, frame) -> str:
    location = raised_at or _raise_location(exc) or user_location()
    at = f" at {location}" if location else ""
    named = f" {clause.types}" if clause.types else ""
    return (f"{type(exc).__name__}({str(exc)!r}){at} happens {when}, so the `except{named}` at "
            f"{frame.f_code.co_filename}:{clause.line} cannot catch it as it would in Python: the graph runs after "
            "the `try` has finished. Decide with a value instead of an exception (e.g. set `failed = True` "
            "where it would be raised and test `failed` after the `try`), or make the condition a Python value")


def _raise_location(exc: BaseException) -> SourceLocation | None:
    """Where converted code raised `exc` (its innermost converted frame)."""
    tb, found = exc.__traceback__, None
    while tb is not None:
        if conversion.is_converted_code(tb.tb_frame.f_code):
            found = SourceLocation(tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return found
