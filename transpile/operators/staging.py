"""What building graph control flow from converted code shares: its errors, rebuilding a
cond or loop until what it learns settles, graph conditions, effect order and warnings."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Rebuild:
    """What an attempt at building a cond or loop learned must change before it is built again."""

    changes: dict


def request_weak_numbers_first() -> bool:
    """Before a dtype conflict met in a graph loop body is reported: asks the innermost graph loop being
    traced whose Python-number variables' dtypes are not learned yet to be built again with them traced
    as numbers (carried at their default dtype, `s = 0` is an int64 where Python's 0 would take a
    float's dtype). Whether one was asked: the conflict may go away then, and is not reported now."""
    for frame in reversed(trace_state().loops):
        if frame.weak_probes:
            frame.request(dict(frame.weak_probes))
            return True
    return False


def build_until_settled(attempt: Callable[[], T], adjust: Callable[[dict], None], failure: str) -> T:
    """`attempt()` to build a cond or loop into the default graph, again while it asks to.

    Tracing a branch or a loop body can show that the construct was started
    with the wrong inputs (a placeholder, a dtype, a list that must be a
    TensorArray): the attempt then returns a `Rebuild` of what must change.
    The graph is rolled back to before the attempt, `adjust(changes)` records
    what was learned, and the construct is built again. `failure` is the
    error's message when it does not settle within MAX_ATTEMPTS.
    """
    g = graph.get_default_graph()
    for _ in range(MAX_ATTEMPTS):
        checkpoint = g.checkpoint()
        outcome = attempt()
        if not isinstance(outcome, Rebuild):
            return outcome
        g.rollback(checkpoint)
        adjust(outcome.changes)
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
    while building code that is thrown away (`trace_state.trial_build`, or a loop that will be built
    again)."""
    state = trace_state()
    if state.trial_builds or state.rebuild_pending():
        return
    loc = user_location()
    if loc is None:
        warnings.warn(message, stacklevel=2)
    else:
        warnings.warn_explicit(message, UserWarning, loc.filename, loc.lineno, registry=_warning_registry)
