"""A gradient taken inside a loop body covers one iteration: where that would drop a path, an error.

Inside a loop body, a loop variable's value was computed by the previous iteration
(or before the loop). A gradient taken there (`gradients` called in the body, or in
a branch inside it) is built from the current iteration's computation: when the
differentiated value reads a loop variable that an x shaped in an earlier iteration
(a loss carried over from the previous iteration, an RNN state that a weight fed),
part of the gradient lies in iterations that are over, and the result would be
silently wrong (zeros). `check_carried` raises then, naming the loop variable, the
loop and what to write instead.

What counts is whether an x's *value* can have reached the loop variable's current
value, as in the Python program the graph was traced from:
- a value computed in the current iteration cannot (it is newer);
- a loop variable `w` reached `loss` if `loss` started as a function of `w`'s initial
  value, or if the body computes `loss`'s next value from `w`'s next value (`w = w -
  lr * g; loss = f(w)`); a `w` that the body passes on unchanged (or replaces by an
  outer value) may hold an older value, and then any path from it counts;
- any other x (an outer tensor; a Variable, whose reads in every iteration are reads
  of the same Variable) reached it if a differentiable path leads from x to it.
The body is still being traced when `gradients` runs: what the loop's initial values
show is checked at once, the rest when the loop is complete (`WhileContext.when_complete`).
"""
from __future__ import annotations

from grad.aliases import older_values, python_sources
from grad.analysis import ForwardIndex, Target, ancestors, differentiable_dtype, is_within, loop_variable_of, origin
from grad.registry import is_differentiable
from graph.control_flow.contexts import WhileContext
from graph.core import Tensor
from graph.errors import GraphError, SourceLocation


def carried_reads(ys: list[Tensor], top, avoiding: Tensor | None = None) -> list[tuple[WhileContext, int]]:
    """The loop variables of the loops around `top` that `ys` read in the current iteration, through
    differentiable ops and not through `avoiding` (an x: what it reads is its own business): (loop, k)
    pairs."""
    loops = [c for c in ancestors(top) if isinstance(c, WhileContext)]
    if not loops:
        return []
    boundary = {}
    for loop in loops:
        for k, (m, sw) in enumerate(zip(loop.merges, loop.switches, strict=False)):
            boundary[m.outputs[0]] = boundary[sw.outputs[1]] = (loop, k)
    found: dict[tuple[int, int], tuple[WhileContext, int]] = {}
    seen = {t for t in ys if differentiable_dtype(t) and t is not avoiding}
    work = list(seen)
    while work:
        t = work.pop()
        hit = boundary.get(t)
        if hit is not None:
            found.setdefault((id(hit[0]), hit[1]), hit)
            continue
        n = t.node
        if not is_differentiable(n):
            continue
        for i in n.inputs:
            if i not in seen and i is not avoiding and differentiable_dtype(i):
                seen.add(i)
                work.append(i)
    return list(found.values())


def check_carried(index: ForwardIndex, top, ys: list[Tensor], targets: list[Target],
                  where: SourceLocation | None) -> None:
    """Raises if a gradient taken in `top` (inside loops) would miss paths through earlier iterations
    (see the module docstring); the part that needs the rest of a loop's body runs when it is complete."""
    if not any(isinstance(c, WhileContext) for c in ancestors(top)):
        return
    reads = [(loop, k, target) for target in targets if target.is_variable or differentiable_dtype(target.x)
             for loop, k in carried_reads(ys, top, None if target.is_variable else target.x)]
    _check(index, reads, where)
    for loop in {id(loop): loop for loop, _, _ in reads}.values():
        mine = [r for r in reads if r[0] is loop]
        loop.when_complete(lambda lp, mine=mine: _check(ForwardIndex(lp.graph), mine, where))


def _check(index: ForwardIndex, reads, where) -> None:
    for loop, k, target in reads:
        if _reached(index, loop, k, target):
            raise _carried_error(loop, k, target, where)


def _reached(index: ForwardIndex, loop: WhileContext, j: int, target: Target) -> bool:
    """Whether `target`'s value may have shaped loop variable j's value in the current iteration."""
    hits = (loop.merges[j].outputs[0], loop.switches[j].outputs[1])
    if target.is_variable:
        return _reaches(index, list(target.sources), hits)
    return _reached_from(index, loop, j, target.sources)


def _reached_from(index: ForwardIndex, loop: WhileContext, j: int, sources) -> bool:
    """Whether the values of tensors `sources` may have shaped loop variable j's value in the current
    iteration of `loop`."""
    hits = (loop.merges[j].outputs[0], loop.switches[j].outputs[1])
    complete = len(loop.next_iterations) == len(loop.merges)
    for o in {id(s): origin(s) for s in sources}.values():
        var = loop_variable_of(o)
        i = var[1] if var is not None and var[0] is loop else None
        if i is None:
            if _new_in_iteration(o, loop):
                continue
            if _reaches(index, python_sources(o), hits):
                return True
            continue
        if i == j:
            continue
        first = python_sources(loop.enters[i].inputs[0])
        init_j = loop.enters[j].inputs[0]
        if any(origin(init_j) is f for f in first) or init_j in index.forward_reach(first):
            return True
        outer = loop_variable_of(init_j)
        if outer is not None and outer[0] is not loop and _reached_from(index, outer[0], outer[1], first):
            # both entered this loop from an enclosing loop's variables: there, too, variable j's value
            # may come from an earlier iteration (or the code before that loop) that x's value shaped
            return True
        if not complete:
            continue
        new = origin(loop.next_iterations[i].inputs[0])
        next_j = loop.next_iterations[j].inputs[0]
        if origin(next_j) is new:
            return True
        if _new_in_iteration(new, loop):
            # a value of the iteration before: only what it computed after it counts
            if next_j in index.forward_reach(python_sources(new), stop=frozenset(loop.next_iterations)):
                return True
        elif _reaches(index, [o, *python_sources(new), *first], hits):
            return True
    return False


def _new_in_iteration(t: Tensor, loop: WhileContext) -> bool:
    """Whether `t`'s value is computed in the current iteration of `loop`, in Python: not a loop
    variable's, nor one that a cond in the body may pass through from before it."""
    def new(v: Tensor) -> bool:
        var = loop_variable_of(v)
        return is_within(v.node.context, loop) and (var is None or var[0] is not loop)
    return new(t) and all(new(v) for v in older_values(t))


def _reaches(index: ForwardIndex, sources: list[Tensor], hits) -> bool:
    reach = index.forward_reach(sources)
    return any(h in reach for h in hits)


def _carried_error(loop: WhileContext, j: int, target: Target, where) -> GraphError:
    var = loop.loop_var_name(j)
    x = target.describe()
    return GraphError(
        f"gradients: the value being differentiated reads {var}, a loop variable of {loop.describe()}, and its "
        f"value in this iteration depends on {x} through an earlier iteration (or the code before the loop); a "
        "gradient taken inside the loop body covers the current iteration only and would miss that part. Compute "
        f"the value from {x} inside the iteration before differentiating it (`loss = f(w)`, then "
        "`gradients(loss, w)`, instead of a `loss` carried over from the previous iteration), or take the "
        "gradient outside the loop.", where)
