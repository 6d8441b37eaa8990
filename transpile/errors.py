"""Errors the transpiler raises, located at the user's file:line."""
from __future__ import annotations


class ConversionError(Exception):
    """A function cannot be converted as written (an unsupported construct, no source)."""

    def __init__(self, message: str, filename: str | None = None, lineno: int | None = None):
        self.bare_message = message
        self.filename = filename
        self.lineno = lineno
        where = f"{filename}:{lineno}: " if filename and lineno else (f"{filename}: " if filename else "")
        super().__init__(where + message)


class TranspileError(Exception):
    """A converted program did something graph control flow cannot express (raised while tracing)."""


class UncatchableError(BaseException):
    """Carries `error` past the converted code's own `except` clauses to the end of the trace, where it
    is raised: an error saying that an `except` clause cannot catch something must not be caught by it
    (a BaseException, so that `except Exception` lets it through)."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


def swap_without_device(name: str, where: str,
                        asked_by: str = "transpile.function({name}, memory_policy='swap')") -> str:
    """The message for `memory_policy="swap"` asked of a converted function without a device, by the
    decorator or by `transpile.loop_options` in a loop body (`asked_by`): swapping moves saved values from a
    device's memory to the host's, so without a device nothing would swap (as Session says)."""
    return (f"{where}: {asked_by.format(name=name)} needs a device whose memory it manages: pass "
            f"transpile.function({name}, device=SimulatedDevice(memory_limit=...)) (exec.device) or "
            "device=CupyDevice(), or use memory_policy='recompute', which saves less of each loop on the host "
            "without one")
