"""Errors raised while building graphs, and the user source locations they point at."""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

import numpy as np

# Frames inside these package folders are the system's own; a node's source
# location is the first frame outside them (the user's code).
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_INTERNAL_DIRS = tuple(os.path.join(_ROOT, pkg) + os.sep for pkg in ("graph", "exec", "grad", "dist", "transpile"))
_extra_internal: list[str] = []
# numpy's own functions (np.sum calling back into a tensor): never where a user's value comes from
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep


@dataclass(frozen=True, slots=True)
class SourceLocation:
    filename: str
    lineno: int
    function: str = ""

    def __str__(self) -> str:
        cell = notebook_cell(self.filename)
        return f"{self.filename}:{self.lineno}" if cell is None else f"cell [{cell}], line {self.lineno}"

    @property
    def short(self) -> str:
        """`file.py:12`: the file's base name and the line, for listings and drawings."""
        cell = notebook_cell(self.filename)
        return f"{os.path.basename(self.filename)}:{self.lineno}" if cell is None else str(self)


# the name IPython's terminal shell compiles cell 3 under: "<ipython-input-3-0123456789ab>"
_IPYTHON_INPUT = re.compile(r"<ipython-input-(\d+)-[0-9a-f]+>")


def notebook_cell(filename: str) -> int | None:
    """The number of the IPython or Jupyter cell whose code was compiled under `filename`, or None.

    IPython compiles cell 3 as "<ipython-input-3-...>" and Jupyter's kernel as a temporary file
    ("/tmp/ipykernel_42/123.py"); the shell's compiler maps each name to its cell. Such a name means
    nothing to the user, who knows the cell as In [3]."""
    ipython = sys.modules.get("IPython")  # never imported here: a cell exists only where IPython runs
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    cells = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if isinstance(cells, dict) and cells.get(filename) is not None:
        return int(cells[filename])
    match = _IPYTHON_INPUT.fullmatch(filename) if filename.startswith("<") else None
    return int(match.group(1)) if match else None


def register_internal_file(filename: str) -> None:
    """Marks a file as internal so that locations skip it (e.g. generated helpers)."""
    _extra_internal.append(filename)


def is_internal(filename: str) -> bool:
    return filename.startswith(_INTERNAL_DIRS) or filename in _extra_internal or filename.startswith("<frozen")


def user_location(skip_internal: bool = True) -> SourceLocation | None:
    """The innermost stack frame that belongs to user code (a notebook cell's too, whose name starts with "<"
    like generated code's)."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not (skip_internal and (is_internal(fn) or fn.startswith(_NUMPY_DIR))) \
                and (not fn.startswith("<") or notebook_cell(fn) is not None):
            return SourceLocation(fn, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


class GraphError(Exception):
    """A graph could not be built as written; the message names the user's line."""

    def __init__(self, message: str, location: SourceLocation | None = None):
        self.location = location if location is not None else user_location()
        self.bare_message = message
        prefix = f"{self.location}: " if self.location else ""
        super().__init__(prefix + message)

    def __reduce__(self):
        # rebuilt from its parts: from `args` (the located message) it would prefix the location again
        return type(self), (self.bare_message, self.location), self.__dict__


class ShapeError(GraphError, ValueError):
    """Shapes that cannot work together (e.g. operands that do not broadcast)."""


class DTypeError(GraphError, TypeError):
    """Element types that cannot work together."""


class OpValueError(GraphError, ValueError):
    """An op refused its inputs or attributes (its inference raised a ValueError or an IndexError); the
    message names the op and its inputs' dtypes and shapes."""


class OpTypeError(GraphError, TypeError):
    """An op refused the types of its inputs or attributes (its inference raised a TypeError)."""


class UnsupportedError(GraphError, TypeError):
    """A numpy function, ufunc or argument that graph tensors do not support (the message names it)."""


class SymbolicValueError(GraphError, TypeError):
    """A graph tensor was used where Python needs its value while the graph is built (a number, a
    truth value, an index): the value only exists when the graph runs."""


class SymbolicBoolError(SymbolicValueError):
    """A graph tensor was used as a Python truth value, iterated over, or searched with `in`."""


class SymbolicIndexError(SymbolicValueError):
    """A graph tensor was used as a Python index or size (a list index, a repeat count, a shape)."""
