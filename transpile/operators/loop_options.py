"""`transpile.loop_options`: options a loop's body gives the graph loop it becomes."""
from __future__ import annotations

import graph
from graph.control_flow.memory_policy import check_policy
from graph.errors import user_location
from transpile.errors import swap_without_device
from transpile.operators.trace_state import trace_state


def loop_options(maximum_iterations: int | None = None, memory_policy: str | None = None,
                 checkpoint_every: int | None = None) -> None:
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

    `memory_policy` ("keep", "swap" or "recompute", with `checkpoint_every` k for
    "recompute") says what the loop's gradient keeps of its iterations (see
    graph.while_loop): "recompute" saves only the loop's variables every k-th
    iteration and computes the rest again in the gradient loop. It overrides
    `transpile.function(memory_policy=...)` for this loop alone. "swap" moves the
    saved values off a device: traced for a function without a `device=`, it is a
    ValueError naming the line (as the decorator's option is).
    """
    if maximum_iterations is not None and (isinstance(maximum_iterations, bool) or maximum_iterations < 0
                                           or int(maximum_iterations) != maximum_iterations):
        raise ValueError(f"maximum_iterations must be an int >= 0, got {maximum_iterations!r}")
    policy = None
    if memory_policy is not None or checkpoint_every is not None:
        policy = memory_policy_options(memory_policy, checkpoint_every)
    if policy is not None and policy[0] == "swap":
        _check_swap_has_a_device()
    frame = trace_state().innermost_loop()
    if frame is None or not frame.staged:
        return
    if policy is not None:
        graph.set_memory_policy(*policy)
    if maximum_iterations is not None:
        graph.set_iteration_limit(maximum_iterations)


def _check_swap_has_a_device() -> None:
    """While a trace is built (in Python the option does nothing), "swap" needs the function's device:
    without one the loop would keep its values on the host, silently not swapping."""
    state = trace_state()
    if state.tracing and state.device is None:
        where = user_location()
        raise ValueError(swap_without_device(state.function_name or "f", str(where) if where else "loop_options",
                                             asked_by="transpile.loop_options(memory_policy='swap')"))


def memory_policy_options(memory_policy, checkpoint_every) -> tuple[str, int | None]:
    """(memory_policy, checkpoint_every) checked as graph.while_loop checks them (a ValueError if they are bad),
    in the form graph's policy functions take: checkpoint_every only for "recompute", the policy that has it."""
    try:
        policy, every = check_policy(memory_policy, checkpoint_every)
    except graph.GraphError as e:
        raise ValueError(e.bare_message) from None
    return policy, every if policy == "recompute" else None
