"""Gradients taken inside a cond branch or a loop body, through values computed around it.

`gradients` called in a region `top` (a branch, a loop body) may be asked for the
gradient of a value computed outside it (`loss = f(w)` before an `if`, differentiated
inside the branch), or with respect to an x from outside it. The walk over `top`
leaves gradients on the values that enter it (a branch's captures, a loop body's
constants, outer values read as they are); the walk goes on over the enclosing
region with those, then the one around it, while gradients are left on values on a
path from an x. Every gradient node is built where `gradients` was called: the
forward values it reads are visible there. The unit of the enclosing region that
holds the region just walked (the cond or loop being built) is skipped: nothing it
computes is visible yet.

The stacks of a loop in an enclosing region are created in that region
(GradState.walking), which runs whenever the loop and its gradient do. Past an
enclosing loop body that is no longer so: a cond or loop outside it would be
differentiated in every iteration from values it saved once, so that is refused
with an error. Leaving a loop body through its loop variables (values of earlier
iterations) is grad.carried's business: those paths are checked there.
"""
from __future__ import annotations

from dataclasses import dataclass

from grad.accumulate import Grads, add_n
from grad.analysis import is_within
from grad.backprop import backprop_region
from grad.mirrors import GradState
from graph.control_flow.contexts import CondContext, WhileContext
from graph.core import Tensor
from graph.op_names import SWITCH


@dataclass(frozen=True, slots=True)
class Walk:
    """The gradients one `gradients` call built: per region walked, from `top` outwards, and per Variable."""
    levels: tuple[tuple[object, Grads], ...]
    var_grads: dict

    def total(self, state: GradState, t: Tensor) -> Tensor | None:
        """The gradient of `t`, summed where `t` is computed; None if the walk did not get there."""
        ctx = state.value_context(t)
        for region, grads in self.levels:
            if region is ctx:
                return grads.total(t)
        return None


def backprop_outwards(state: GradState, top, seeds: dict[Tensor, Tensor]) -> Walk:
    """Propagates `seeds` back through `top`, then through the regions around it (module docstring)."""
    grads, var_grads = backprop_region(state, top, seeds)
    levels = [(top, grads)]
    by_var = {v: list(gs) for v, gs in var_grads.items()}
    inner, loop_between = top, None
    while inner is not None:
        seeds = _leaving(state, inner, grads)
        if not seeds:
            break
        if isinstance(inner, WhileContext) and loop_between is None:
            loop_between = inner
        region = inner.outer
        skip = inner.state if isinstance(inner, CondContext) else inner
        if loop_between is None:
            with state.walking(region):
                grads, var_grads = backprop_region(state, region, seeds, skip=skip)
        else:
            grads, var_grads = backprop_region(state, region, seeds, skip=skip, loop_between=loop_between)
        levels.append((region, grads))
        for v, gs in var_grads.items():
            by_var.setdefault(v, []).extend(gs)
        inner = region
    return Walk(tuple(levels), by_var)


def _leaving(state: GradState, inner, grads: Grads) -> dict[Tensor, Tensor]:
    """The gradients the walk over `inner` left for values of the regions around it, keyed by those
    values (a capture or loop constant by the outer value it stands for)."""
    out: dict[Tensor, list[Tensor]] = {}
    for t in grads.keys():
        ctx = state.value_context(t)
        if ctx is inner:
            outer = _entered_from(inner, t)
        elif not is_within(ctx, inner):
            outer = t
        else:
            continue  # a value of a nested unit: its construct's rule took it
        if outer is None or not state.is_active(outer):
            continue
        g = grads.total(t)
        if g is not None:
            out.setdefault(outer, []).append(g)
    return {t: add_n(gs) for t, gs in out.items()}


def _entered_from(region, t: Tensor) -> Tensor | None:
    """The outer value that `t` (a value of `region`) stands for, when it is a branch's capture or a
    loop body's constant; None for values computed in `region` and for loop variables."""
    n = t.node
    if isinstance(region, CondContext):
        if n.op == SWITCH and t.index == region.branch and region.state.switches.get(n.inputs[0]) is n:
            return n.inputs[0]
        return None
    if isinstance(region, WhileContext) and region.is_invariant(t):
        return n.inputs[0]
    return None
