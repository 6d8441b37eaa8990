"""Which fields of the control-flow records a saved graph keeps, and how a loaded one rebuilds them.

Contexts are rebuilt with their constructors (so that fields only building
needs start empty) and then get the saved fields. Fields not listed here are
building state: a loop's `structure` (the Python values of its loop variables)
and what a traced function's conversion keeps on the side.
"""
from __future__ import annotations

from graph.control_flow.contexts import CondContext, CondState, WhileContext

WHILE_FIELDS = ("frame_name", "parallel_iterations", "outer", "source", "names", "swap_memory",
                "maximum_iterations", "has_effects", "phase", "constant_enters", "enters", "merges", "switches",
                "exits", "next_iterations", "loop_cond", "_body_pivot")
# kept when the context has them (fields that newer loops have and older saved ones lack)
OPTIONAL_WHILE_FIELDS = ("iteration_limit", "memory_policy", "checkpoint_every", "back_prop")
COND_FIELDS = ("state", "branch", "outer", "has_effects", "_pivot", "captured")
COND_STATE_FIELDS = ("pred", "source", "switches", "pred_switch", "branches", "merges")
# fields the constructors take; the others are set once every node exists
_WHILE_ARGS = ("frame_name", "parallel_iterations", "outer", "source")
_COND_ARGS = ("state", "branch", "outer")

CONTEXT_KINDS = {WhileContext: "while", CondContext: "cond"}


def context_fields(ctx) -> dict:
    fields = WHILE_FIELDS if isinstance(ctx, WhileContext) else COND_FIELDS
    out = {f: getattr(ctx, f) for f in fields}
    if isinstance(ctx, WhileContext):
        out.update((f, getattr(ctx, f)) for f in OPTIONAL_WHILE_FIELDS if hasattr(ctx, f))
        # keyed by id(Variable) in memory: saved as (Variable, read) pairs
        out["hoisted_reads"] = [(v, t) for v, t in _hoisted_pairs(ctx)]
    return out


def _hoisted_pairs(ctx: WhileContext):
    graph = ctx.loop_cond.graph if ctx.loop_cond is not None else None
    variables = {id(v): v for v in graph.variables.values()} if graph is not None else {}
    for key, t in ctx.hoisted_reads.items():
        if key in variables:
            yield variables[key], t


def cond_state_fields(state: CondState) -> dict:
    return {f: getattr(state, f) for f in COND_STATE_FIELDS}


def new_context(kind: str, fields: dict):
    """A context with the fields its constructor takes; `fill_context` sets the rest."""
    if kind == "while":
        return WhileContext(*(fields[f] for f in _WHILE_ARGS), names=fields.get("names"),
                            swap_memory=bool(fields.get("swap_memory", False)))
    if kind == "cond":
        return CondContext(*(fields[f] for f in _COND_ARGS))
    raise ValueError(f"unknown context kind {kind!r}")


def fill_context(ctx, fields: dict) -> None:
    names = WHILE_FIELDS + OPTIONAL_WHILE_FIELDS if isinstance(ctx, WhileContext) else COND_FIELDS
    for f in names:
        if f in fields:
            setattr(ctx, f, fields[f])
    if isinstance(ctx, WhileContext):
        ctx.hoisted_reads = {id(v): t for v, t in fields.get("hoisted_reads", [])}


def new_cond_state(fields: dict) -> CondState:
    return CondState(None, fields.get("source"))


def fill_cond_state(state: CondState, fields: dict) -> None:
    for f in COND_STATE_FIELDS:
        if f in fields:
            setattr(state, f, fields[f])
