"""`while_loop(cond, body, loop_vars)`: a loop built from Enter/Merge/Switch/NextIteration/Exit.

Per loop variable (the paper's Figure 4):

    Enter -> Merge -> Switch(pred) -false-> Exit
               ^        |true
               |      body
               +-- NextIteration

Shape invariants are inferred: the body is traced with the entry shapes, and if a
loop variable comes back with a different shape, the loop is rebuilt with the
dims that changed relaxed to unknown, until the shapes are stable.
"""
from __future__ import annotations

import operator

import numpy as np

from graph import dtypes as _dt
from graph import nest
from graph import shapes as _sh
from graph.control_flow.contexts import WhileContext, effect_before
from graph.control_flow.memory_policy import check_policy, default_policy
from graph.core import get_default_graph
from graph.errors import GraphError, user_location
from graph.index import producers, upstream
from graph.node import Tensor
from graph.op_names import LOOP_COND, MERGE, NEXT_ITERATION, SWITCH
from graph.op_registry import register_op
from graph.ops.conversion import convert
from graph.ops.math import add, less, logical_and
from graph.ops.variables import variable_uses

_MAX_RELAXATIONS = 8

# A loop's predicate, checked: the run fails when it is true at iteration `limit` (0-based), that is
# when the loop would run one iteration more than its limit. Not ordered: it only reads its inputs.
register_op("CheckIterationLimit", lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)],
            differentiable=False)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations: int = 32, maximum_iterations=None,
               name: str | None = None, names=None, swap_memory: bool = False, back_prop: bool = True,
               iteration_limit: int | None = None, memory_policy: str | None = None,
               checkpoint_every: int | None = None):
    """`while cond(*vars): vars = body(*vars)`, with the loop running inside the graph.

    `loop_vars` is a tuple/list of loop variables (each may be a nested
    structure); `cond` and `body` take them as positional arguments and `body`
    returns new values with the same structure and dtypes. Tensors that `cond` or
    `body` close over become loop constants. `maximum_iterations` bounds the trip
    count (the loop stops after that many iterations, as TensorFlow's does).
    `iteration_limit` is a guard instead: a run in which the condition still holds
    after that many iterations fails with an error naming the loop
    (exec.IterationLimitExceeded). Without one, the loop takes the limit of the
    `Graph.iteration_limit` block it is built in, and `set_iteration_limit(n)`
    called while its body is built sets it. `names` (one per loop variable) makes
    error messages use the user's variable names. Returns the final values, with
    the structure of `loop_vars`. A Variable that the loop reads but never assigns
    is read once, before the loop.

    Shapes: a loop variable keeps its shape where the body keeps it; where the body changes a
    dimension (or the rank), the loop is built again with it unknown. `shape_invariants` (the
    structure of `loop_vars`, a shape per tensor: a tuple of ints and None, or None for any shape)
    states them instead, as TensorFlow's: each initial value and each body result must fit its
    invariant (a GraphError names the variable otherwise), and the variable has that shape in and
    after the loop. A TensorArray's invariant is not checked.

    `back_prop=False` makes the loop a wall for gradients, as in TensorFlow: no gradient flows through
    its outputs to anything before it or in it (`gradients` treats them as cut, as by `stop_gradient`),
    so nothing is saved for a backward pass. Gradients taken inside its body are not affected.

    `memory_policy` says what the loop's gradient keeps of its iterations (see
    graph.control_flow.memory_policy): "keep" (every value the gradient reads, the
    default), "swap" (the same, movable to host memory; `swap_memory=True`) or
    "recompute" (only the loop variables, every `checkpoint_every`-th iteration,
    default 1; the gradient loop computes the rest again). Without one the loop takes
    the policy of the `loop_memory_policy` block it is built in; `set_memory_policy`
    called while its body is built sets it.
    """
    if not isinstance(loop_vars, (tuple, list)) or not loop_vars:
        raise GraphError("while_loop needs a non-empty tuple or list of loop variables")
    if parallel_iterations < 1:
        raise GraphError(f"parallel_iterations must be >= 1, got {parallel_iterations}")
    graph = get_default_graph()
    source = user_location()
    structure = loop_vars
    flat = [convert(v) for v in nest.flatten(loop_vars)]
    max_iters = convert(maximum_iterations, dtype=None) if maximum_iterations is not None else None
    limit = _check_limit(iteration_limit if iteration_limit is not None else graph.default_iteration_limit)
    if memory_policy is None and checkpoint_every is None and not swap_memory and default_policy(graph) is not None:
        policy = default_policy(graph)
    else:
        policy = check_policy(memory_policy, checkpoint_every, swap_memory, source)
    labels = _labels(structure, names, len(flat) + 1)
    invariants = _invariants(shape_invariants, structure, flat, labels, source)
    shapes = [t.shape if inv is _INFERRED else inv for t, inv in zip(flat, invariants, strict=True)]
    hoist: list = []
    for _ in range(_MAX_RELAXATIONS + 1):
        checkpoint = graph.checkpoint()
        ctx, exits, body_shapes = _build(graph, cond, body, structure, flat, shapes, labels, max_iters, limit,
                                         parallel_iterations, name, names, policy, source, hoist, back_prop)
        requested = ctx.requested_iteration_limit
        if requested is not None and requested != limit:  # the body asked for a limit: built again with it
            graph.rollback(checkpoint)
            limit = requested
            continue
        relaxed = [_relax(s, b) if inv is _INFERRED else _check_invariant(inv, b, label, "after one iteration", source)
                   for s, b, inv, label in zip(shapes, body_shapes, invariants, labels, strict=False)]
        # Variables the loop reads but never assigns are read once, before it (the body is traced
        # again): a read per iteration would cost a node, make the loop effectful (its iterations
        # ordered by identities) and, differentiated, save the same value in every iteration.
        read, written = variable_uses(n for n in graph.nodes[checkpoint.num_nodes:] if _within(n.context, ctx))
        invariant = [e for e in hoist if id(e[0]) not in written] + \
            [e for k, e in read.items() if k not in written]
        if relaxed == shapes and [id(v) for v, _ in invariant] == [id(v) for v, _ in hoist]:
            ctx.complete()
            return nest.pack_as(structure, exits[:len(flat)])
        graph.rollback(checkpoint)
        shapes, hoist = relaxed, invariant
    raise GraphError("the shapes of the loop variables did not stabilise", source)


def set_iteration_limit(limit: int) -> None:
    """Gives the innermost while loop being built an `iteration_limit` (see `while_loop`): for code
    that runs while a loop body is traced, like AutoGraph's `set_loop_options`. The loop is built
    again with it; its body calls this again then, which changes nothing."""
    ctx = get_default_graph().context
    loop = ctx.frame if ctx is not None else None
    if not isinstance(loop, WhileContext):
        raise GraphError("set_iteration_limit is for the body of a while loop being built; no loop is being "
                         "built here")
    loop.request_iteration_limit(_check_limit(limit))


def _check_limit(limit):
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0):
        raise GraphError(f"an iteration limit must be a Python int >= 0, got {limit!r}")
    return None if limit is None else int(limit)


def _within(ctx, loop) -> bool:
    while ctx is not None:
        if ctx is loop:
            return True
        ctx = ctx.outer
    return False


_INFERRED = object()  # a loop variable without a shape invariant: its shape is inferred


def _invariants(shape_invariants, structure, flat, labels, source) -> list:
    """Per flat loop variable its shape invariant, checked against its initial value, or _INFERRED."""
    if shape_invariants is None:
        return [_INFERRED] * len(flat)
    try:
        given = nest.flatten_up_to(structure, shape_invariants)
    except ValueError as e:
        raise GraphError(f"shape_invariants must have the structure of the loop variables "
                         f"{nest.structure_description(tuple(structure))}: {e}", source) from None
    out = []
    for t, inv, label in zip(flat, given, labels, strict=False):
        if t.dtype is _dt.variant:  # a TensorArray's handle: its elements have their own shapes
            out.append(_INFERRED)
            continue
        out.append(_check_invariant(_as_invariant(inv, label, source), t.shape, label, "enters the loop", source))
    return out


def _as_invariant(inv, label, source):
    if inv is None:
        return None
    try:
        return _sh.as_shape(tuple(None if d is None else operator.index(d) for d in inv))
    except TypeError:
        raise GraphError(f"the shape invariant of loop variable {label} must be a shape (a tuple of ints and None, "
                         f"or None for any shape), got {inv!r}", source) from None


def _check_invariant(invariant, shape, label, when: str, source):
    """`invariant`, where `shape` fits it (each known dim of the invariant equal); a GraphError otherwise."""
    fits = invariant is None or (shape is not None and len(shape) == len(invariant) and all(
        d is None or d == s for d, s in zip(invariant, shape, strict=True)))
    if not fits:
        raise GraphError(f"loop variable {label} {when} with shape {_sh.format_shape(shape)}, which does not fit "
                         f"its shape invariant {_sh.format_shape(invariant)}; give a less specific invariant (None "
                         "for a dimension that changes, None for any shape)", source)
    return invariant


def _relax(loop_shape, body_shape):
    """The loop shape widened so that it also covers `body_shape`."""
    if loop_shape is None:
        return None
    if body_shape is None or len(body_shape) != len(loop_shape):
        return None
    return tuple(d if d == b else None for d, b in zip(loop_shape, body_shape))


def _labels(structure, names, n) -> list[str]:
    """A user-facing name for every flat loop variable (names[i] + path inside it)."""
    out = []
    for i, var in enumerate(structure):
        for p in nest.paths(var):
            out.append(repr(f"{names[i]}{p}") if names is not None and i < len(names) else f"loop_vars[{i}]{p}")
    out.extend("the iteration counter" for _ in range(n - len(out)))
    return out


def _build(graph, cond, body, structure, flat, shapes, labels, max_iters, limit,
           parallel_iterations, name, names, policy, source, hoist, back_prop):
    outer = graph.context
    # an iteration counter, the last loop variable, when the trip count is bounded or limited
    counted = max_iters is not None or limit is not None
    n_user = len(flat)
    if counted:
        flat, shapes = flat + [convert(0, dtype=np.int64)], shapes + [()]
    labels = labels[:len(flat)]
    with graph.name_scope(name or "while") as scope:
        ctx = WhileContext(scope.rstrip("/"), parallel_iterations, outer, source, names=labels,
                           maximum_iterations=max_iters, iteration_limit=limit, memory_policy=policy[0],
                           checkpoint_every=policy[1], back_prop=back_prop)
        ctx.structure = structure
        for var, dev in hoist:  # in program order with the effects before the loop, which its Enters follow
            with graph.device(dev):
                ctx.hoisted_reads[id(var)] = var.read()
        prev_effect = effect_before(graph, outer)
        ordering = [prev_effect] if prev_effect is not None else []
        for t in flat:
            t_outer = graph.create_node("Identity", [t], name="entry").outputs[0] \
                if t.node.context is not outer else t
            enter = ctx.make_enter(t_outer, is_constant=False, control_inputs=ordering)
            ctx.enters.append(enter.node)
        with graph.in_context(ctx):
            for enter, shape in zip(ctx.enters, shapes, strict=True):
                m = graph.create_node(MERGE, [enter.outputs[0], enter.outputs[0]], name=MERGE)
                m.outputs[0].shape = shape
                ctx.merges.append(m)
            loop_in = [m.outputs[0] for m in ctx.merges]
            user_vars = nest.pack_as(structure, loop_in[:-1] if counted else loop_in)
            pred = cond(*user_vars)
            pred = _as_predicate(pred, source)
            if limit is not None:
                pred = graph.create_node("CheckIterationLimit", [pred, loop_in[-1]],
                                         {"limit": limit, "loop": ctx.describe()}, name="CheckIterationLimit",
                                         source=source).outputs[0]
            if max_iters is not None:
                pred = logical_and(less(loop_in[-1], max_iters), pred)
            pred_effect = graph.last_effect(ctx)
            ctx.loop_cond = graph.create_node(LOOP_COND, [pred], name=LOOP_COND)
            lc = ctx.loop_cond.outputs[0]
            for m in ctx.merges:
                sw = graph.create_node(SWITCH, [m.outputs[0], lc], name=SWITCH,
                                       control_inputs=[pred_effect] if pred_effect is not None else ())
                ctx.switches.append(sw)
            ctx.exits = [ctx.make_exit(sw.outputs[0]) for sw in ctx.switches]
            ctx.phase = "body"
            body_in = [sw.outputs[1] for sw in ctx.switches]
            body_vars = nest.pack_as(structure, body_in[:-1] if counted else body_in)
            out = body(*body_vars)
            out = _check_body_structure(structure, out, names, source)
            out_flat = [convert(v) for v in nest.flatten(out)]
            if counted:
                out_flat.append(add(body_in[-1], np.int64(1)))
            out_flat = [graph.create_node("Identity", [t], name="Identity").outputs[0]
                        if t.node.context is not ctx or ctx.is_invariant(t) else t for t in out_flat]
            _check_dtypes(flat, out_flat, labels, source)
            last = graph.last_effect(ctx)
            if ctx.has_effects and last is not None:
                # The next iteration starts after this one's effects (program order). Every node of an
                # iteration runs after its LoopCond (through its Switches or the pivots), and its
                # condition's effects after its first Merge: holding back the variables these read holds
                # back the whole iteration; the others may go ahead.
                gated = _condition_inputs(ctx) | {0}
                out_flat = [graph.create_node("Identity", [t], name="after_effects",
                                              control_inputs=[last]).outputs[0] if k in gated else t
                            for k, t in enumerate(out_flat)]
            for m, t in zip(ctx.merges, out_flat, strict=True):
                nxt = graph.create_node(NEXT_ITERATION, [t], name=NEXT_ITERATION)
                ctx.next_iterations.append(nxt)
                m.update_input(1, nxt.outputs[0])
        if ctx.has_effects:
            graph.set_last_effect(outer, ctx.exits[0])
            if outer is not None:  # an enclosing branch or loop body must wait for this loop's effects
                outer.has_effects = True
    body_shapes = [t.shape for t in out_flat[:n_user]]
    return ctx, [e.outputs[0] for e in ctx.exits], body_shapes


def _condition_inputs(ctx: WhileContext) -> set[int]:
    """The loop variables (indices) that the loop's condition reads."""
    merges = {m: k for k, m in enumerate(ctx.merges)}
    # the walk stops at the Merges and at nodes outside the loop; conds and loops in the condition are in it
    reached = upstream([ctx.loop_cond], cut=merges,
                       follow=lambda n: producers(n) if _within(n.context, ctx) else ())
    return {merges[n] for n in reached if n in merges}


def _as_predicate(pred, source) -> Tensor:
    if isinstance(pred, (bool, np.bool_)):
        pred = convert(bool(pred))
    pred = convert(pred)
    if pred.dtype != np.bool_ or (pred.shape is not None and pred.shape != ()):
        raise GraphError(f"the loop condition must return a scalar bool, got a {pred.dtype}"
                         f"{_sh.format_shape(pred.shape)} tensor", source)
    return pred


def _check_body_structure(structure, out, names, source):
    if len(structure) == 1 and not isinstance(out, (tuple, list)):
        out = type(structure)([out]) if isinstance(structure, list) else (out,)
    if not isinstance(out, (tuple, list)) or len(out) != len(structure):
        raise GraphError(
            f"the loop body must return the {len(structure)} loop variables with the same structure: expected "
            f"{nest.structure_description(tuple(structure))}, got {nest.structure_description(out)}", source)
    for i, (before, after) in enumerate(zip(structure, out, strict=True)):
        diff = nest.first_difference(before, after)
        if diff is not None:
            path, was, now = diff
            label = repr(f"{names[i]}{path}") if names is not None and i < len(names) else f"loop_vars[{i}]{path}"
            raise GraphError(
                f"loop variable {label} is {was} before the loop and {now} after one iteration; a loop variable "
                "must keep the same structure (the same nesting of tuples, lists and dicts)", source)
    return out


def _check_dtypes(before: list[Tensor], after: list[Tensor], labels, source) -> None:
    for label, b, a in zip(labels, before, after, strict=True):
        if b.dtype != a.dtype:
            raise GraphError(
                f"loop variable {label} has dtype {b.dtype} before the loop and {a.dtype} after one "
                f"iteration; a loop variable must keep its dtype: start it as {a.dtype} before the loop "
                f"or cast it back to {b.dtype} in the body", source)
