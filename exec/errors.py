"""Errors raised while a graph runs, worded in terms of the user's program."""
from __future__ import annotations


class AssertionFailed(Exception):
    """Raised by the Assert kernel; reported as a RunError naming the assert's line."""


class RunError(RuntimeError):
    """A kernel failed. Names the node, its op, the user line that built it and,
    inside loops, the frame and iteration. The original exception is `__cause__`."""

    def __init__(self, message: str, node=None, where: str = "", cause: BaseException | None = None):
        self.node = node
        self.where = where
        self.cause = cause
        self.bare_message = message
        lines = [message]
        if node is not None:
            built = f", built at {node.source}" if node.source else ""
            lines.append(f"  in node {node.name} ({node.op}){built}")
        if where:
            lines.append(f"  {where}")
        super().__init__("\n".join(lines))


class NoProgressError(RuntimeError):
    """The run stopped with work pending that can never become ready."""
