"""Values a cond or a loop gives out that are, in Python, older values or siblings of other outputs.

The graph gives every output of a cond a Merge and every loop variable an Exit, but in the
Python program the graph was traced from, a variable that the taken branch leaves unchanged
is, after the `if`, the same object as before it; so is a loop variable after a loop that
leaves it unchanged (or runs no iteration). A gradient with respect to such an output means,
in Python, the gradient with respect to the older value too, and a value computed before
the `if` from the older value depends on it. Likewise another output of the same cond,
computed in the branch from this one's value, depends on it in Python though not on the
Merge. The graph differentiates the Merge or Exit alone, so where the ys depend on such an
older value or sibling other than through the output itself, `check_aliases` raises, rather
than return a gradient that misses part of what Python means.
"""
from __future__ import annotations

from grad.analysis import ForwardIndex, Target, differentiable_dtype, is_within, origin
from grad.registry import is_differentiable
from graph.control_flow.contexts import CondContext, WhileContext
from graph.core import Node, Tensor
from graph.errors import GraphError, SourceLocation
from graph.op_names import EXIT, MERGE


def produced_by(t: Tensor):
    """The cond (CondState) or loop (WhileContext) whose output `t` is, or None."""
    n = origin(t).node
    if n.op == EXIT:
        return n.inputs[0].node.context
    if n.op == MERGE and n.inputs:
        src = n.inputs[0].node.context
        if isinstance(src, CondContext) and src.outer is n.context:
            return src.state
    return None


def _inside(t: Tensor, unit) -> bool:
    ctx = t.node.context
    if isinstance(unit, WhileContext):
        return is_within(ctx, unit)
    return any(is_within(ctx, b) for b in unit.branches)


def older_values(t: Tensor) -> list[Tensor]:
    """The values from before the cond or loop that gave out `t` which `t` may be, in Python: those
    a branch passes through, a loop variable's initial value (no iteration, or none changes it)."""
    o = origin(t)
    unit = produced_by(o)
    if unit is None:
        return []
    if isinstance(unit, WhileContext):
        k = next(k for k, e in enumerate(unit.exits) if e is o.node)
        candidates = [unit.enters[k].inputs[0]]
        if k < len(unit.next_iterations):
            new = origin(unit.next_iterations[k].inputs[0])
            if not _inside(new, unit):
                candidates.append(new)   # replaced by an outer value in every iteration
    else:
        candidates = list(o.node.inputs)
    out: dict[int, Tensor] = {}
    for c in candidates:
        c = origin(c)
        if not _inside(c, unit):
            out.setdefault(id(c), c)
        for r in older_values(c):
            if not _inside(r, unit):
                out.setdefault(id(r), r)
    return list(out.values())


def python_sources(t: Tensor) -> list[Tensor]:
    """`t`'s value, and the tensors through which what Python computes from that value is reached: the
    older values it may be and, for an output of a cond or loop, the values inside it that it is (so
    another output computed from one of those depends on it in Python)."""
    out: dict[int, Tensor] = {}
    todo = [origin(t)]
    while todo:
        v = todo.pop()
        if id(v) in out:
            continue
        out[id(v)] = v
        todo += older_values(v) + _inner_values(v)
    return list(out.values())


def _inner_values(t: Tensor) -> list[Tensor]:
    """For an output of a cond or loop, the values inside it that the output is."""
    unit = produced_by(t)
    if unit is None:
        return []
    o = origin(t)
    if isinstance(unit, WhileContext):
        k = next(k for k, e in enumerate(unit.exits) if e is o.node)
        inner = [unit.next_iterations[k].inputs[0]] if k < len(unit.next_iterations) else []
    else:
        inner = list(o.node.inputs)
    return [v for v in map(origin, inner) if _inside(v, unit)]


def check_aliases(index: ForwardIndex, ys: list[Tensor], targets: list[Target], where: SourceLocation | None) -> None:
    """Raises where an x given out by a cond or loop stands, in Python, for more than the output the
    graph differentiates, and the ys depend on that (module docstring)."""
    for target in targets:
        x = target.x
        if target.is_variable or not differentiable_dtype(x):
            continue
        unit = produced_by(x)
        if unit is None:
            continue
        older = older_values(x)
        siblings = _sibling_outputs(index, x, unit)
        if not older and not siblings:
            continue
        reach = _depended_on_avoiding(ys, origin(x))
        for o in older:
            if o in reach:
                raise _alias_error(target, unit, "older", where)
        if any(s in reach for s in siblings):
            raise _alias_error(target, unit, "sibling", where)


def _sibling_outputs(index: ForwardIndex, x: Tensor, unit) -> list[Tensor]:
    """The other outputs of `unit` that, where x's value is computed inside it, are computed from it."""
    o = origin(x)
    if isinstance(unit, WhileContext):
        k = next(k for k, e in enumerate(unit.exits) if e is o.node)
        if k >= len(unit.next_iterations):
            return []
        new = origin(unit.next_iterations[k].inputs[0])
        if not _inside(new, unit):
            return []
        # the final values are the last iteration's: only what it computes from x's final value counts
        reach = index.forward_reach([new], stop=frozenset(unit.next_iterations))
        return [e.outputs[0] for j, e in enumerate(unit.exits)
                if j != k and j < len(unit.next_iterations) and unit.next_iterations[j].inputs[0] in reach]
    inner = _inner_values(o)
    if not inner:
        return []
    reach = index.forward_reach(inner, stop=frozenset({o.node}))
    return [m.outputs[0] for m in index.merges_of(unit) if m is not o.node and m.outputs[0] in reach]


def _depended_on_avoiding(ys: list[Tensor], x: Tensor) -> set[Tensor]:
    """What the ys depend on differentiably, other than through x."""
    seen = {t for t in ys if t is not x}
    work = list(seen)
    while work:
        n: Node = work.pop().node
        if not is_differentiable(n):
            continue
        for i in n.inputs:
            if i is not x and i not in seen and differentiable_dtype(i):
                seen.add(i)
                work.append(i)
    return seen


def _alias_error(target: Target, unit, kind: str, where) -> GraphError:
    x = target.describe()
    if isinstance(unit, WhileContext):
        what, before = unit.describe(), "the loop"
        when = "when the loop leaves it unchanged (or runs no iteration)"
    else:
        what, before = f"the cond at {unit.source}", "the cond"
        when = "when the branch taken leaves it unchanged"
    if kind == "older":
        why = (f"{when} it is, in the Python program, the value it had before {before}, and the value being "
               "differentiated depends on that value other than through it")
    else:
        why = (f"the value being differentiated reads another output of {before}, which {before} computes from "
               "this one's value")
    return GraphError(
        f"gradients: one of the xs, {x}, is an output of {what}; {why}. The gradient of the output alone would miss that "
        f"part. Differentiate with respect to the value before {before} (or inside it), or compute the value "
        f"being differentiated from {x} after {before}.", where)
