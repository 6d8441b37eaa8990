"""`gradients(ys, xs)`: reverse mode that adds the backward computation to the graph."""
from __future__ import annotations

import logging
import time

from grad.accumulate import add_n, conform
from grad.aliases import check_aliases
from grad.analysis import ForwardIndex, Target, ancestors, differentiable_dtype, variable_of
from grad.carried import check_carried
from grad.enclosing import Walk, backprop_outwards
from grad.mirrors import GradState
from grad.non_differentiable import MODES as NON_DIFFERENTIABLE_MODES
from grad.non_differentiable import blocking_ops, report
from graph import dtypes as _dt
from graph import nest
from graph.core import Tensor
from graph.errors import GraphError, user_location
from graph.logs import get_logger
from graph.op_names import LOOP_COND
from graph.ops.conversion import convert
from graph.ops.creation import ones_like, zeros

logger = get_logger(__name__)


def gradients(ys, xs, grad_ys=None, unconnected: str = "zero", non_differentiable: str = "warn",
              name: str = "gradients"):
    """The gradients of `sum(ys)` with respect to each of `xs`, as graph tensors.

    `ys`: a tensor or a structure of tensors; `grad_ys`: the gradients flowing
    into them (same structure; default: ones). `xs`: tensors and/or Variables,
    in any structure; the result has the same structure. A Variable's gradient
    sums over all its reads in the graph, including reads inside loop bodies
    (accumulated across iterations).

    What has no gradient: integer and bool xs get None; integer and bool ys (a
    loop counter among a loop's outputs) contribute nothing. `stop_gradient` stops
    the flow on purpose. An x that the ys do not depend on gets zeros, or None
    with `unconnected="none"`. An x that the ys depend on only through ops
    without a gradient (`argmax`, comparisons, and so the predicates of conds and
    loops, casts to integers, integer arithmetic, `round`) gets the same, and
    `non_differentiable` says what else happens: "warn" (a
    `NonDifferentiableWarning` naming those ops and the lines that built them),
    "error" (a GraphError saying the same) or "ignore".

    Called inside a cond branch or a loop body, `gradients` differentiates what
    the Python code means there, including values computed before the branch or
    in the enclosing loop body; a gradient taken inside a loop body covers the
    current iteration, and where the ys read a loop variable that an x shaped in
    an earlier iteration (a loss carried over from the previous iteration) it
    raises a GraphError naming the variable and the loop rather than return
    part of the gradient (grad.carried). Likewise for an x given out by a cond
    or loop that, in Python, may be the value it had before (a branch or the
    loop left it unchanged) when the ys depend on that older value too
    (grad.aliases).

    The backward computation is graph nodes run by the same executor: the
    gradient of a cond is a cond on the same predicate, the gradient of a
    while_loop is a while_loop over the forward iterations in reverse, reading
    the forward values it needs from stacks the forward loop fills.
    """
    if unconnected not in ("zero", "none"):
        raise ValueError(f"unconnected must be 'zero' or 'none', got {unconnected!r}")
    if non_differentiable not in NON_DIFFERENTIABLE_MODES:
        raise ValueError(f"non_differentiable must be one of {', '.join(map(repr, NON_DIFFERENTIABLE_MODES))}, "
                         f"got {non_differentiable!r}")
    y_list = [convert(y) for y in nest.flatten(ys)]
    if not y_list:
        raise GraphError("gradients needs at least one y")
    graph = y_list[0].graph
    start, nodes_before = time.perf_counter(), len(graph.nodes)
    top = graph.context
    _check_ys(y_list, graph, top)
    seeds = _seeds(y_list, grad_ys)
    # integer and bool ys (a loop counter among the outputs) have no gradient to give, as in TensorFlow
    all_ys = y_list
    seeds = [g for y, g in zip(y_list, seeds, strict=True) if differentiable_dtype(y)]
    y_list = [y for y in y_list if differentiable_dtype(y)]
    index = ForwardIndex(graph)
    targets = [_target(x, top, index) for x in nest.flatten(xs)]
    where = user_location()
    check_carried(index, top, y_list, targets, where)
    check_aliases(index, y_list, targets, where)
    fwd = index.forward_reach([t for target in targets for t in target.sources])
    active = fwd & index.backward_reach(y_list, fwd)
    state = GradState(graph, top, index, active)
    with graph.name_scope(name), graph.control_dependencies(None):
        seed_grads: dict[Tensor, list] = {}
        for y, g in zip(y_list, seeds, strict=True):
            seed_grads.setdefault(y, []).append(g if g is not None else _ones_like(y))
        walk = backprop_outwards(state, top, {y: add_n(gs) for y, gs in seed_grads.items()})
        out = []
        for target in targets:
            g = _gradient(target, walk, state) if _has_gradient_dtype(target) else None
            if g is None and _has_gradient_dtype(target):
                report(non_differentiable, target, blocking_ops(index, target, all_ys), unconnected, where)
                if unconnected == "zero":
                    g = _zeros(target, state)
            out.append(g)
    _log_built(graph, nodes_before, start, len(y_list), targets)
    return nest.pack_as(xs, out)


def _log_built(graph, nodes_before: int, start: float, num_ys: int, targets) -> None:
    if not logger.isEnabledFor(logging.DEBUG):
        return
    added = graph.nodes[nodes_before:]
    loops = sum(n.op == LOOP_COND for n in added)
    logger.debug("gradients of %d ys with respect to %d xs: %d nodes added (%d gradient loops) in %.1f ms", num_ys,
                 len(targets), len(added), loops, (time.perf_counter() - start) * 1e3)


def _check_ys(y_list: list[Tensor], graph, top) -> None:
    for y in y_list:
        if y.graph is not graph:
            raise GraphError(f"gradients: {y.name} belongs to a different graph than {y_list[0].name}")
        check_visible_from(y, top, "y")
        if not differentiable_dtype(y) and y.dtype.kind not in "biu":
            raise GraphError(f"gradients: cannot differentiate {y.dtype} tensor {y.name}; only floating-point "
                             "values have gradients (cast it to a float dtype first)")


def check_visible_from(t: Tensor, top, what: str) -> None:
    ctx = t.node.context
    if not (ctx is None or any(c is ctx for c in ancestors(top))):
        raise GraphError(f"gradients: {what} {t.name} was built inside {ctx.describe()}, which is not where "
                         "gradients() is called; call gradients() inside that branch/loop body, or "
                         "differentiate a value that leaves it (a cond output or loop variable)")


def _seeds(y_list, grad_ys) -> list:
    if grad_ys is None:
        return [None] * len(y_list)
    g_list = nest.flatten(grad_ys)
    if len(g_list) != len(y_list):
        raise GraphError(f"gradients: grad_ys has {len(g_list)} entries for {len(y_list)} ys")
    out = []
    for y, g in zip(y_list, g_list, strict=True):
        if g is None:
            out.append(None)
            continue
        g = convert(g, like=y)
        if g.dtype != y.dtype:
            raise GraphError(f"gradients: grad_ys for {y.name} has dtype {g.dtype}, expected {y.dtype}")
        out.append(conform(g, y, "grad_ys"))
    return out


def _ones_like(y: Tensor) -> Tensor:
    return ones_like(y)


def _target(x, top, index: ForwardIndex) -> Target:
    """x and the tensors its gradient sums over: a tensor itself, or every read of a Variable (the
    walk reaches those it depends on, wherever they are)."""
    if getattr(x, "is_variable", False):
        return Target(x, tuple(r.outputs[0] for r in index.variable_reads if variable_of(r) is x))
    if hasattr(type(x), "_as_graph_tensor"):  # a value that reads as a tensor (an array in converted code)
        x = convert(x)
    if not isinstance(x, Tensor):
        raise TypeError(f"gradients: xs must be graph tensors or Variables, got {type(x).__name__}")
    check_visible_from(x, top, "x")
    return Target(x, (x,))


def _gradient(target: Target, walk: Walk, state: GradState):
    """x's gradient, or None when no differentiable path links it to the ys."""
    if target.is_variable:
        parts = walk.var_grads.get(target.x, [])
        if not parts:
            return None
        g = add_n(parts)
        return conform(g, target.sources[0], "a variable") if target.sources else g
    g = walk.total(state, target.x)
    return conform(g, target.x, "gradients") if g is not None else None


def _zeros(target: Target, state: GradState):
    if target.is_variable:
        value = target.x.value
        return zeros(tuple(value.shape), value.dtype)
    return state.zeros_like(target.x)


def _has_gradient_dtype(target: Target) -> bool:
    x = target.x
    return target.is_variable or (x.dtype is not _dt.variant and differentiable_dtype(x))
