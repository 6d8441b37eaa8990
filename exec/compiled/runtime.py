"""What generated programs call besides kernels: the dead marker and the error reports.

A kernel that fails inside a compiled program is reported as the dataflow executor reports
it (exec/errors.py): a RunError naming the node, its op, the user line that built it and,
inside loops, the iteration of each enclosing loop, with the kernel's exception as its
cause. Nothing of that costs anything while the program runs: the failing line is looked
up in the program's line table, and the loop counters are read from the failing frame.
"""
from __future__ import annotations

from exec.errors import AssertionFailed, RunError, RunInterrupted, run_interrupted
from graph.frames import parent_frame
from graph.node import Tensor


class _Dead:
    """The value of a fetch whose branch was not taken (it must not be returned)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEAD"


DEAD = _Dead()


def dead(t: Tensor) -> RunError:
    """The error for fetching `t` when it was not computed (its branch was not taken)."""
    return RunError(f"fetched {t.describe()} is dead: it comes from a branch that was not taken", t.node)


def failed(error: Exception, lines: dict) -> Exception:
    """`error`, raised by the program's line that called a kernel, as a RunError naming that node
    and the loop iterations it ran in (`lines`: line number -> (node, loop counters innermost
    first, as (counter variable, frame name)); any other error as it is."""
    tb = error.__traceback__
    found = lines.get(tb.tb_lineno) if tb is not None else None
    if found is None:
        return error
    node, counters = found
    local = tb.tb_frame.f_locals
    where = describe_iterations(node, [(int(local[c]), frame) for c, frame in counters])
    if isinstance(error, AssertionFailed):
        message = f"assertion failed: {error}"
    else:
        message = str(error) if isinstance(error, RunError) else f"{type(error).__name__}: {error}"
    run_error = RunError(message, node, where, error)
    run_error.__cause__ = error
    return run_error


def interrupted(interrupt: KeyboardInterrupt, loops: list) -> RunInterrupted:
    """Ctrl-C in a compiled program, as a RunInterrupted naming the loops the program was in and their
    iterations (`loops`: (first line, last line, counter variable, loop context) of each loop it writes;
    the counters are read from the interrupted frame)."""
    tb = interrupt.__traceback__
    if tb is None:
        return run_interrupted("")
    line, local = tb.tb_lineno, tb.tb_frame.f_locals
    around = sorted((loop for loop in loops if loop[0] <= line <= loop[1]), key=lambda loop: -loop[0])
    where = ", ".join(f"in iteration {int(local[counter])} of {ctx.describe() if ctx is not None else 'a loop'}"
                      for _, _, counter, ctx in around if counter in local)
    return run_interrupted(where)


def describe_iterations(node, iterations: list[tuple[int, str]]) -> str:
    """'in iteration 3 of the while loop at f.py:10 (frame while), in iteration 0 of ...': the
    iterations of the loops around `node` ((iteration, frame name), innermost first), worded as
    the dataflow executor words them."""
    parts = []
    ctx = node.frame
    for n, frame in iterations:
        desc = ctx.describe() if ctx is not None else f"frame {frame}"
        parts.append(f"in iteration {n} of {desc}")
        ctx = parent_frame(ctx)
    return ", ".join(parts)
