"""Per-loop memory policies: what a loop's gradient keeps of the forward iterations.

A differentiated loop saves forward values for its gradient loop. Its policy says how:

- "keep": every value the gradient reads is saved in every iteration (on stacks, in
  device memory);
- "swap": the same values, which the memory manager may move to host memory while
  the forward loop runs and bring back before the gradient loop pops them
  (`swap_memory=True` is this policy);
- "recompute": only the loop state (its loop variables) is saved, every
  `checkpoint_every`-th iteration; the gradient loop computes the values it needs
  again from the nearest saved state (grad/recompute.py). Less memory, more work.

The policy is an option of `while_loop`; a `loop_memory_policy` block gives it to the
loops built inside that set none, and `set_memory_policy` called while a body is
traced sets it for that loop (transpile's `loop_options`).
"""
from __future__ import annotations

import contextlib
import weakref

from graph.core import get_default_graph
from graph.errors import GraphError

POLICIES = ("keep", "swap", "recompute")

# graph -> stack of (policy, checkpoint_every) of the open `loop_memory_policy` blocks
_DEFAULTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def check_policy(memory_policy, checkpoint_every, swap_memory: bool = False, source=None) -> tuple[str, int]:
    """The (policy, checkpoint_every) a loop gets from its options; a bad combination is a GraphError
    at the user's line `source`. No policy: "swap" when `swap_memory`, else "keep"."""
    if memory_policy is None:
        memory_policy = "swap" if swap_memory else "keep"
    if memory_policy not in POLICIES:
        raise GraphError(f"memory_policy must be one of {', '.join(map(repr, POLICIES))}, got {memory_policy!r}",
                         source)
    if swap_memory and memory_policy != "swap":
        raise GraphError(f"swap_memory=True asks for memory_policy='swap', but memory_policy={memory_policy!r} "
                         "was given too; pass one of them", source)
    if checkpoint_every is None:
        return memory_policy, 1
    if memory_policy != "recompute":
        raise GraphError(f"checkpoint_every is an option of memory_policy='recompute' (how many iterations lie "
                         f"between saved loop states), not of {memory_policy!r}; drop it or use 'recompute'",
                         source)
    if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 1:
        raise GraphError(f"checkpoint_every must be a Python int >= 1, got {checkpoint_every!r}", source)
    return memory_policy, int(checkpoint_every)


@contextlib.contextmanager
def loop_memory_policy(memory_policy: str, checkpoint_every: int | None = None):
    """While loops built inside (in the default graph) that give no `memory_policy` of their own get
    this one (see `while_loop`)."""
    policy = check_policy(memory_policy, checkpoint_every)
    graph = get_default_graph()
    stack = _DEFAULTS.setdefault(graph, [])
    stack.append(policy)
    try:
        yield
    finally:
        stack.pop()


def default_policy(graph) -> tuple[str, int] | None:
    """The policy of the innermost open `loop_memory_policy` block of `graph`, or None."""
    stack = _DEFAULTS.get(graph)
    return stack[-1] if stack else None


def set_memory_policy(memory_policy: str, checkpoint_every: int | None = None) -> None:
    """Gives the innermost while loop being built a memory policy (see `while_loop`): for code that
    runs while a loop body is traced, like transpile's `loop_options`. It replaces the policy the
    loop was built with."""
    ctx = get_default_graph().context
    loop = ctx.frame if ctx is not None else None
    if loop is None:
        raise GraphError("set_memory_policy is for the body of a while loop being built; no loop is being "
                         "built here")
    policy, k = check_policy(memory_policy, checkpoint_every, source=loop.source)
    loop.set_memory_policy(policy, k)
