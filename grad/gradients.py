"""`gradients(ys, xs)`: reverse mode that adds the backward computation to the graph."""
from __future__ import annotations

from graph import dtypes as _dt
from graph import nest
from graph.control_flow.contexts import CondContext
from graph.core import Tensor
from graph.errors import GraphError
from graph.ops.conversion import convert
from graph.ops.creation import ones_like, zeros
from grad.accumulate import add_n, conform
from grad.analysis import GraphIndex, ancestors, differentiable_dtype, is_within, variable_of
from grad.backprop import backprop_region
from grad.build_state import GradState


def gradients(ys, xs, grad_ys=None, unconnected: str = "zero", name: str = "gradients"):
    """The gradients of `sum(ys)` with respect to each of `xs`, as graph tensors.

    `ys`: a tensor or a structure of tensors; `grad_ys`: the gradients flowing
    into them (same structure; default: ones). `xs`: tensors and/or Variables,
    in any structure; the result has the same structure. A Variable's gradient
    sums over all its reads in the graph, including reads inside loop bodies
    (accumulated across iterations). Integer and bool tensors are not
    differentiated (their gradient is None) and `stop_gradient` stops the flow.
    An x that `ys` do not depend on gets zeros, or None with `unconnected="none"`.

    The backward computation is graph nodes run by the same executor: the
    gradient of a cond is a cond on the same predicate, the gradient of a
    while_loop is a while_loop over the forward iterations in reverse, reading
    the forward values it needs from stacks the forward loop fills.
    """
    if unconnected not in ("zero", "none"):
        raise ValueError(f"unconnected must be 'zero' or 'none', got {unconnected!r}")
    y_list = [convert(y) for y in nest.flatten(ys)]
    if not y_list:
        raise GraphError("gradients needs at least one y")
    graph = y_list[0].graph
    top = graph.context
    for y in y_list:
        if y.graph is not graph:
            raise GraphError(f"gradients: {y.name} belongs to a different graph than {y_list[0].name}")
        check_visible_from(y, top, "y")
        if not differentiable_dtype(y):
            raise GraphError(f"gradients: cannot differentiate {y.dtype} tensor {y.name}; only floating-point "
                             "values have gradients (cast it to a float dtype first)")
    seeds = _seeds(y_list, grad_ys)
    x_list = nest.flatten(xs)
    index = GraphIndex(graph)
    targets = [_targets(x, top, index) for x in x_list]
    sources = [t for ts in targets for t in ts[0] + ts[1]]
    fwd = index.forward_reach(sources)
    active = fwd & index.backward_reach(y_list, fwd)
    state = GradState(graph, top, index, active)
    with graph.name_scope(name), graph.control_dependencies(None):
        seed_grads: dict[Tensor, list] = {}
        for y, g in zip(y_list, seeds, strict=True):
            seed_grads.setdefault(y, []).append(g if g is not None else _ones_like(y))
        grads, var_grads = backprop_region(state, top, {y: add_n(gs) for y, gs in seed_grads.items()})
        out = [_result(x, inner, outer, grads, var_grads, state, unconnected)
               for x, (inner, outer) in zip(x_list, targets, strict=True)]
    return nest.pack_as(xs, out)


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


def _is_variable(x) -> bool:
    return getattr(x, "is_variable", False)


def _targets(x, top, index: GraphIndex) -> tuple[list[Tensor], list[Tensor]]:
    """(read/tensor handles inside the region of `top`, their outer ones' representatives in it)."""
    if _is_variable(x):
        inner, outer = [], []
        for r in index.variable_reads:
            if variable_of(r) is not x:
                continue
            t = r.outputs[0]
            if is_within(r.context, top):
                inner.append(t)
            elif any(c is r.context for c in ancestors(top)):
                rep = _representative(t, top)
                if rep is not None:
                    outer.append(rep)
        return inner, outer
    if not isinstance(x, Tensor):
        raise TypeError(f"gradients: xs must be graph tensors or Variables, got {type(x).__name__}")
    check_visible_from(x, top, "x")
    rep = _representative(x, top)
    return [], ([rep] if rep is not None else [])


def _representative(t: Tensor, top) -> Tensor | None:
    """The value by which `t` (from an enclosing context) is seen inside `top`, if it is used there."""
    chain = []
    for c in ancestors(top):
        if c is t.node.context:
            break
        chain.append(c)
    for c in reversed(chain):
        t = c.captured.get(t) if isinstance(c, CondContext) else c.constant_enters.get(t)
        if t is None:
            return None
    return t


def _result(x, inner, outer, grads, var_grads, state, unconnected):
    if _is_variable(x):
        parts = list(var_grads.get(x, []))
        parts += [g for g in (grads.total(t) for t in outer) if g is not None]
        like = (inner + outer)[0] if inner or outer else None
        if parts:
            return conform(add_n(parts), like, "a variable") if like is not None else add_n(parts)
        if unconnected == "none":
            return None
        value = x.value
        return zeros(tuple(value.shape), value.dtype)
    if x.dtype is _dt.variant or not differentiable_dtype(x):
        return None
    g = grads.total(outer[0]) if outer else None
    if g is not None:
        return conform(g, x, "gradients")
    if unconnected == "none":
        return None
    return state.zeros_like(x)
