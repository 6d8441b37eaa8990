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
            # the device only where it says something: a node that placement or the user put on one
            device = f" on device {node.device}" if getattr(node, "device", "") else ""
            lines.append(f"  in node {node.name} ({node.op}){device}{built}")
        if where:
            lines.append(f"  {where}")
        super().__init__("\n".join(lines))


class NoProgressError(RuntimeError):
    """The run stopped with work pending that can never become ready."""


class IterationLimitExceeded(RuntimeError):
    """Raised by a loop's iteration check: its condition still held after its `iteration_limit`
    iterations (graph.while_loop; `maximum_iterations` in transpile). Reported as a RunError."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a run. Says where the run was: the loop (the user's file:line) and its
    iteration. It is a KeyboardInterrupt, so it stops a program as Ctrl-C does; no kernel runs
    after it is raised, and each Variable holds the value of the last write that ran. `where` is
    that place alone ("" outside loops): a run on several devices names each device's."""

    def __init__(self, message: str = "", where: str = ""):
        super().__init__(message)
        self.where = where


def run_interrupted(where: str) -> RunInterrupted:
    """The RunInterrupted of a run that was `where` ("" if in no loop) when Ctrl-C stopped it."""
    return RunInterrupted(interrupted_message(where), where)


def interrupted_message(where: str) -> str:
    """RunInterrupted's message; `where` names the loops and iterations the run was in ("" if none)."""
    return (f"the run was interrupted (Ctrl-C){' ' + where if where else ''}; no kernel of it runs after this, "
            "and each Variable holds the value of the last write that ran")
