"""What building graph control flow from converted code shares: its errors, rebuilding a
cond or loop until what it learns settles, graph conditions, effect order and warnings."""
from __future__ import annotations

import warnings
from typing import Callable, TypeVar

import numpy as np

import graph
from graph.errors import GraphError, user_location
from graph.node import Tensor
from transpile.operators.trace_state import trace_state

T = TypeVar("T")

# rebuilds of one cond/loop while learning dtypes, placeholders, accumulators
MAX_ATTEMPTS = 12


class StagingError(GraphError):
    """Converted code asked for something graph control flow cannot express."""


class Retry(BaseException):
    """Rebuild one cond or loop with adjusted inputs (never seen by user code).

    A BaseException, so that user code's `except Exception` in a branch or loop
    body being traced cannot swallow it.
    """

    def __init__(self, token, changes: dict):
        super().__init__("internal: rebuild a graph construct")
        self.token = token
        self.changes = changes


class Promote(BaseException):
    """Rebuild the innermost Python loop as a graph loop (never seen by user code)."""

    def __init__(self, token):
        super().__init__("internal: make a Python loop a graph loop")
        self.token = token


def learn_weak_numbers_first() -> None:
    """Before a dtype conflict met in a graph loop body is reported: raises Retry for the innermost
    graph loop being traced whose Python-number variables' dtypes are not learned yet, so that it is
    built again with them traced as numbers (carried at their default dtype, `s = 0` is an int64
    where Python's 0 would take a float's dtype). Returns when there is none."""
    for frame in reversed(trace_state().loops):
        if frame.weak_probes:
            raise Retry(frame.token, dict(frame.weak_probes))


def build_until_settled(build: Callable[[], T], adjust: Callable[[dict], None], token, failure: str) -> T:
    """`build()` a cond or loop into the default graph, rebuilding it while it asks to.

    Tracing a branch or a loop body can show that the construct was started
    with the wrong inputs (a placeholder, a dtype, a list that must be a
    TensorArray): the tracer raises `Retry(token, changes)`. The graph is then
    rolled back to before the attempt, `adjust(changes)` records what was
    learned, and the construct is built again. `failure` is the error's message
    when it does not settle within MAX_ATTEMPTS.
    """
    g = graph.get_default_graph()
    for _ in range(MAX_ATTEMPTS):
        checkpoint = g.checkpoint()
        try:
            return build()
        except Retry as r:
            if r.token is not token:
                raise
            g.rollback(checkpoint)
            adjust(r.changes)
    raise StagingError(failure)


def predicate(value, what: str) -> Tensor:
    """A scalar bool tensor for Python's truth value of a tensor."""
    t = graph.convert(value)
    if t.shape is not None and len(t.shape) > 0:
        if all(d == 1 for d in t.shape):
            t = graph.reshape(t, ())
        else:
            raise StagingError(
                f"the condition of {what} is a tensor of shape {graph.shapes.format_shape(t.shape)}; as with "
                "numpy arrays, the truth value of more than one element is ambiguous. Use np.any(...) or "
                "np.all(...)")
    if t.dtype != np.bool_:
        t = graph.not_equal(t, graph.constant(np.zeros((), t.dtype)))
    return t


def anchor_effects(g) -> None:
    """Ties the current cond branch or loop body to the effects before it, for what it will nest.

    graph.cond / while_loop order a new branch's or loop's effects after the
    last effect of the *immediately* enclosing context only; when that context
    has none yet (a branch whose only effects are in a nested cond), effects
    further out would be neither ordered before nor kept alive by the nested
    ones. An Identity in this context that waits for the nearest outer effect
    restores the chain.
    """
    ctx = g.context
    if ctx is None or g.last_effect(ctx) is not None:
        return
    outer = ctx.outer
    while True:
        effect = g.last_effect(outer)
        if effect is not None or outer is None:
            break
        outer = outer.outer
    if effect is None:
        return
    anchor = g.create_node("Identity", [graph.constant(np.int32(0))], name="after_outer_effects",
                           control_inputs=[effect])
    g.set_last_effect(ctx, anchor)


_warning_registry: dict = {}


def warn_at_user_line(message: str) -> None:
    """A UserWarning attributed to the user's line that is being traced (not to this package); none
    while building code that is thrown away (`trace_state.trial_build`)."""
    if trace_state().trial_builds:
        return
    loc = user_location()
    if loc is None:
        warnings.warn(message, stacklevel=2)
    else:
        warnings.warn_explicit(message, UserWarning, loc.filename, loc.lineno, registry=_warning_registry)
