"""`transpile.loop_options`: options a loop's body gives the graph loop it becomes."""
from __future__ import annotations

import graph
from transpile.operators.trace_state import trace_state


def loop_options(maximum_iterations: int | None = None) -> None:
    """Options for the loop whose body calls this, like AutoGraph's `set_loop_options`::

        while not converged(x):
            transpile.loop_options(maximum_iterations=10_000)
            x = step(x)

    When the loop becomes a graph loop, a run in which its condition still holds
    after `maximum_iterations` iterations fails with an error that names the loop
    (its file:line) and the limit, instead of running on: a guard against a loop
    that never ends. It overrides `transpile.function(maximum_iterations=...)` for
    this loop and applies to it alone, not to loops nested in it. A loop that runs
    in Python (its condition is a Python value), and the function run as plain
    Python, ignore it.
    """
    if maximum_iterations is not None and (isinstance(maximum_iterations, bool) or maximum_iterations < 0
                                           or int(maximum_iterations) != maximum_iterations):
        raise ValueError(f"maximum_iterations must be an int >= 0, got {maximum_iterations!r}")
    frame = trace_state().innermost_loop()
    if maximum_iterations is not None and frame is not None and frame.staged:
        graph.set_iteration_limit(maximum_iterations)
