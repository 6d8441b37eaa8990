"""Gradients of control flow: a conditional's is a conditional, a loop's is a loop that runs backwards.

Each construct is differentiated as a whole, with the graph's own `cond` and
`while_loop` builders: `cond_grad` and `while_grad` are registered for CondState
and WhileContext (grad.registry), and the walk over a region (grad.backprop)
calls them for each cond or loop it meets. Per primitive, the rules of the
paper (section 5) are:

- Merge's gradient is a Switch: the output gradient enters the gradient cond
  through a Switch on the same predicate, so it reaches the taken branch only.
- Switch's gradient is a Merge: the gradient of a value a branch captured is
  the Merge of the two branches' gradients (zeros from the branch that did not
  use it). The untaken branch computes nothing, so it contributes exactly
  nothing: no NaN or inf from it can leak in (unlike differentiating `where`).
- Exit's gradient is an Enter: a loop output's gradient enters the gradient loop
  as the initial value of a loop variable.
- NextIteration's gradient is a NextIteration: the gradient of a loop variable
  at iteration n becomes the gradient-loop variable of the next backward
  iteration, which undoes iteration n - 1.
- Enter's gradient is an Exit: a loop variable's initial value gets the exit
  value of its gradient-loop variable. A loop constant's Enter (a captured
  tensor, a weight) gets an Exit too, of a gradient-loop variable that
  accumulates the constant's gradient over all iterations; the same holds for
  Variables read inside the loop.
- LoopCond has no gradient (a predicate is not differentiable). The gradient
  loop's own predicate counts the forward trip count down.

Forward values the gradient needs come from stacks the forward loop filled
(see grad.mirrors); a cond inside a loop pops its predicate to steer its
gradient cond, and loops nested in loops apply all this recursively.
"""
from __future__ import annotations

import numpy as np

from grad import loop_sums
from grad import saved as _saved
from grad.accumulate import add_n, conform
from grad.analysis import ancestors, cond_outer, is_within, variable_of
from grad.backprop import backprop_region
from grad.recompute import Recompute, check_differentiable
from grad.registry import register_construct_gradient, register_gradient
from graph import dtypes as _dt
from graph.control_flow.contexts import CondContext, CondState, WhileContext
from graph.control_flow.while_loop import while_loop
from graph.core import Tensor
from graph.errors import GraphError, user_location
from graph.op_names import ENTER, EXIT, IDENTITY, MERGE, NEXT_ITERATION, SWITCH
from graph.ops.conversion import constant
from graph.ops.math import greater_equal, sub


def _group_reads(state, reads) -> list[tuple[object, list]]:
    """Active ReadVariable nodes grouped by Variable, in graph order."""
    groups: dict[int, tuple[object, list]] = {}
    for r in reads:
        if state.is_active(r.outputs[0]):
            var = variable_of(r)
            groups.setdefault(id(var), (var, []))[1].append(r)
    return list(groups.values())


def _sum(parts):
    return add_n(parts) if parts else None


@register_construct_gradient(CondState)
def cond_grad(state, s: CondState, grads, var_grads: dict) -> None:
    """The gradient of a whole cond: a cond on the same predicate (popped, inside a loop)."""
    graph = state.graph
    branches = {ctx.branch: ctx for ctx in s.branches}
    seeds = {b: {} for b in branches}

    def seed(b, t, g):
        seeds[b][t] = add_n([seeds[b][t], g]) if t in seeds[b] else g

    for m in state.index.merges_of(s):
        g = grads.total(m.outputs[0]) if state.is_active(m.outputs[0]) else None
        if g is not None:
            for b in branches:
                seed(b, m.inputs[b], g)
    # gradients that gradient conds already sent to values inside the branches (see grad.mirrors)
    for t in grads.keys():
        for b, ctx in branches.items():
            if is_within(state.value_context(t), ctx):
                seed(b, t, grads.total(t))
                grads.consumed.add(t)
    if not any(seeds.values()) and not any(state.has_inner_sources(b) for b in s.branches):
        return
    captured = [(t, sw) for t, sw in s.switches.items()
                if t is not s.pred and (state.is_active(sw.outputs[0]) or state.is_active(sw.outputs[1]))]
    reads = _group_reads(state, [r for b in s.branches for r in state.index.reads_within(b)])

    def branch_grad(fwd):
        state.mirror[fwd] = graph.context
        bgrads, bvars = backprop_region(state, fwd, seeds[fwd.branch])
        out = {}
        for t, sw in captured:
            g = bgrads.total(sw.outputs[fwd.branch])
            if g is not None:
                out[t] = g
        for var, _ in reads:
            g = _sum(bvars.get(var, []))
            if g is not None:
                out[var] = g
        for t in bgrads.keys():  # values of other conds' branches: handed outwards
            if t not in out and not is_within(state.value_context(t), fwd):
                out[t] = bgrads.total(t)
        return out

    def zeros(key):
        if isinstance(key, Tensor):
            return state.zeros_like(key) if _encloses(state.value_context(key), s) else _placeholder_zero(key)
        return state.zeros_like(next(rs for var, rs in reads if var is key)[0].outputs[0])

    res = _gradient_cond(state, state.resolve(s.pred), branches, branch_grad, zeros)
    for key, g in res.items():
        if isinstance(key, Tensor):
            grads.add(key, conform(g, key, "a cond"))
        else:
            var_grads.setdefault(key, []).append(g)


def _encloses(ctx, s: CondState) -> bool:
    """Whether values of context `ctx` are live whichever branch of `s` runs (they are captured by
    it, or read from its enclosing contexts), rather than only in a branch of another cond."""
    return ctx is None or any(c is ctx for c in ancestors(cond_outer(s)))


def _placeholder_zero(t: Tensor) -> Tensor:
    """A zero standing for the gradient of a value that lives only in a branch of another cond on
    the same predicate (a forward value a gradient cond read). It only reaches code that runs when
    that branch is not taken, so only its dtype matters."""
    return constant(np.zeros((), t.dtype)) if t.dtype is not _dt.variant else None


def _gradient_cond(grad_state, pred, branches, branch_grad, zeros) -> dict:
    """Like graph.cond, but each branch returns {key: gradient} and a key missing from one
    branch gets `zeros(key)` there, found after both branches are built."""
    graph = grad_state.graph
    outer = graph.context
    state = CondState(pred, user_location())
    built = {}
    with graph.name_scope("cond_grad"):
        for b in (1, 0):
            ctx = CondContext(state, b, outer)
            state.branches.append(ctx)
            grad_state.deferred[ctx] = []
            with graph.in_context(ctx):
                built[b] = (ctx, branch_grad(branches[b]))
        keys = list(built[1][1]) + [k for k in built[0][1] if k not in built[1][1]]
        merged = {}
        for key in keys:
            ins = []
            for b in (0, 1):
                ctx, out = built[b]
                with graph.in_context(ctx):
                    v = out.get(key)
                    v = zeros(key) if v is None else v
                    if v.node.context is not ctx:  # through the branch, so it is dead when not taken
                        v = graph.create_node(IDENTITY, [v], name="Identity").outputs[0]
                ins.append(v)
            m = graph.create_node(MERGE, ins, name="Merge", context=outer)
            state.merges.append(m)
            merged[key] = m.outputs[0]
        state.outputs = list(merged.values())
    for ctx, _ in built.values():
        grad_state.built(ctx)
    return merged


@register_construct_gradient(WhileContext)
def while_grad(state, loop: WhileContext, grads, var_grads: dict) -> None:
    """The gradient of a whole while loop: a loop over the forward iterations in reverse."""
    graph = state.graph
    exits = [e.outputs[0] for e in loop.exits]
    ks = [k for k, m in enumerate(loop.merges) if state.is_active(m.outputs[0])]
    seeds = {k: grads.total(exits[k]) if state.is_active(exits[k]) else None for k in ks}
    if all(g is None for g in seeds.values()) and not state.has_inner_sources(loop):
        return
    check_differentiable(loop)
    consts = [(c, e) for c, e in loop.constant_enters.items() if state.is_active(e)]
    counter = _saved.counter_for(loop)
    replay = Recompute(state, loop, counter) if loop.memory_policy == "recompute" else None
    # summed after the gradient loop, not in it (not under "recompute": it saves rows of every iteration)
    after = loop_sums.plan(state, loop, consts) if replay is None else {}
    deferred = [(c, after[e]) for c, e in consts if e in after]
    consts = [(c, e) for c, e in consts if e not in after]
    reads = _group_reads(state, state.index.reads_within(loop))
    last = sub(state.resolve(counter.exit), np.int64(1))
    init = [seeds[k] if seeds[k] is not None else state.zeros_like(exits[k]) for k in ks]
    init += [state.zeros_like(c) for c, _ in consts]
    init += [state.zeros_like(rs[0].outputs[0]) for _, rs in reads]
    extra = replay.loop_vars() if replay is not None else []
    init += extra
    built = []

    def body(index, *acc):
        # `index` is the forward iteration this backward iteration undoes: N-1, N-2, ..., 0
        built.append(graph.context)
        if len(built) > 1:
            raise GraphError("gradients: internal error: a gradient loop was traced twice "
                             "(its loop variables changed shape)")
        acc, ours = acc[:len(acc) - len(extra)], list(acc[len(acc) - len(extra):])
        with state.reversing(loop, graph.context, counter, index, replay) as rec:
            if replay is not None:
                replay.start(rec, ours)
            state.row_sums.update(after)
            gx, rest = acc[:len(ks)], acc[len(ks):]
            body_seeds = {}
            for k, g in zip(ks, gx, strict=True):
                y = loop.next_iterations[k].inputs[0]
                body_seeds[y] = add_n([body_seeds[y], g]) if y in body_seeds else g
            bgrads, bvars = backprop_region(state, loop, body_seeds)
            new = []
            for k in ks:
                m = loop.merges[k].outputs[0]
                g = bgrads.total(loop.switches[k].outputs[1], m)
                new.append(conform(g, m, "a loop variable") if g is not None else state.zeros_like(m))
            for (c, e), a in zip(consts, rest, strict=False):
                g = bgrads.total(e)
                new.append(a if g is None else add_n([a, g]))
            for (var, _), a in zip(reads, rest[len(consts):], strict=True):
                g = _sum(bvars.get(var, []))
                new.append(a if g is None else add_n([a, g]))
            for e in after:
                del state.row_sums[e]
            if replay is not None:
                new += replay.finish()
        return (sub(index, np.int64(1)), *new)

    res = while_loop(lambda index, *acc: greater_equal(index, np.int64(0)), body, (last, *init),
                     parallel_iterations=loop.parallel_iterations,
                     memory_policy="swap" if loop.swap_memory else "keep", name="while_grad")
    state.built(built[0])
    res = res[1:len(res) - len(extra)]
    for k, g in zip(ks, res, strict=False):
        t = loop.enters[k].inputs[0]
        grads.add(t, conform(g, t, "a loop variable"))
    res = res[len(ks):]
    for (c, _), g in zip(consts, res, strict=False):
        grads.add(c, conform(g, c, "a loop constant"))
    for (var, _), g in zip(reads, res[len(consts):], strict=True):
        var_grads.setdefault(var, []).append(g)
    for c, rows in deferred:
        g = rows.total()
        if g is not None:
            grads.add(c, conform(g, c, "a loop constant"))


def _structural(op_name: str, rule: str):
    def reached(op, *grads):
        raise GraphError(f"gradients: {op_name} node {op.name} is not part of a cond or while_loop built by "
                         f"graph.cond / graph.while_loop, so its gradient ({rule}) cannot be built; build the "
                         "control flow with those builders")
    reached.__doc__ = f"{op_name}'s gradient is {rule}: built for the whole construct by cond_grad/while_grad."
    return reached


for _op, _rule in ((SWITCH, "a Merge"), (MERGE, "a Switch"), (ENTER, "an Exit"), (EXIT, "an Enter"),
                   (NEXT_ITERATION, "a NextIteration")):
    register_gradient(_op)(_structural(_op, _rule))
