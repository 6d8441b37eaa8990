"""`cond(pred, true_fn, false_fn)`: a conditional built from Switch and Merge."""
from __future__ import annotations

import numpy as np

from graph import nest
from graph import shapes as _sh
from graph.control_flow.contexts import CondContext, CondState, effect_before
from graph.core import get_default_graph
from graph.errors import GraphError, user_location
from graph.node import Node, Tensor
from graph.op_names import IDENTITY, MERGE
from graph.ops.conversion import convert


def cond(pred, true_fn, false_fn, name: str | None = None, names=None):
    """`true_fn() if pred else false_fn()`, decided when the graph runs.

    Tensors from outside that a branch uses are captured lazily, one Switch each;
    there is one Merge per output. Branches must return the same structure
    (nested tuples/lists/dicts) with the same dtypes; shapes may differ (the result
    gets unknown dims where they do). Only the taken branch executes. A Python or
    numpy bool `pred` just calls the chosen function.
    """
    if isinstance(pred, (bool, np.bool_)):
        return true_fn() if pred else false_fn()
    graph = get_default_graph()
    source = user_location()
    pred = convert(pred)
    if pred.dtype != np.bool_ or (pred.shape is not None and pred.shape != ()):
        raise GraphError(f"cond needs a scalar bool predicate, got {pred.dtype}"
                         f"{_sh.format_shape(pred.shape)} tensor: {pred.describe()}", source)
    outer = graph.context
    with graph.name_scope(name or "cond"):
        state = CondState(pred, source)
        results = []
        for branch, fn in ((1, true_fn), (0, false_fn)):
            ctx = CondContext(state, branch, outer)
            state.branches.append(ctx)
            with graph.in_context(ctx):
                # an op (a print, an assignment, group(...)) gives no value (None): its effect is ordered
                out = nest.map_structure(lambda v: None if isinstance(v, Node) else v, fn())
                flat = [None if v is None else convert(v) for v in nest.flatten(out)]
                flat = [None if v is None else _gate(graph, ctx, v) for v in flat]
            results.append((ctx, out, flat))
        (t_ctx, t_out, t_flat), (f_ctx, f_out, f_flat) = results
        _check_branches(t_out, f_out, t_flat, f_flat, names, source)
        merged = []
        for t, f in zip(t_flat, f_flat, strict=True):
            if t is None:
                merged.append(None)
                continue
            m = graph.create_node(MERGE, [f, t], name="Merge", context=outer)
            state.merges.append(m)
            merged.append(m.outputs[0])
        _finish_effects(graph, state, outer)
        result = nest.pack_as(t_out, merged)
        state.outputs = result
        return result


def _gate(graph, ctx: CondContext, t: Tensor) -> Tensor:
    """The branch's value of `t`, dead when the branch is not taken.

    An outer tensor returned as-is goes through its Switch; a branch with effects
    makes each output wait for them.
    """
    if t.node.context is not ctx:
        t = graph.create_node(IDENTITY, [t], name="Identity").outputs[0]
    return t


def _finish_effects(graph, state: CondState, outer) -> None:
    """After a cond with effects, later effects in the outer context wait for both branches."""
    if not any(ctx.has_effects for ctx in state.branches):
        return
    before = effect_before(graph, outer)  # the branches did not change it
    tokens = []
    for ctx in state.branches:
        last = graph.last_effect(ctx)
        # a branch without effects must still not let later effects overtake those before the cond
        done_after = last if last is not None else before
        with graph.in_context(ctx):
            tok = graph.create_node(IDENTITY, [ctx.pivot.outputs[0]], name="effects_done",
                                    control_inputs=[done_after] if done_after is not None else ())
        tokens.append(tok.outputs[0])
        for m in state.merges:
            if last is not None:
                # outputs of a branch become visible only after its effects
                idx = 1 if ctx.branch else 0
                src = m.inputs[idx]
                with graph.in_context(ctx):
                    gated = graph.create_node(IDENTITY, [src], name="after_effects", control_inputs=[last])
                m.update_input(idx, gated.outputs[0])
    done = graph.create_node(MERGE, tokens, name="effects_merge", context=outer)
    graph.set_last_effect(outer, done)
    if outer is not None:  # an enclosing branch or loop body must wait for (and so run) these effects
        outer.has_effects = True


def _check_branches(t_out, f_out, t_flat, f_flat, names, source) -> None:
    diff = nest.first_difference(t_out, f_out)
    if diff is not None:
        path, in_true, in_false = diff
        label = f"output {_path_label(names, t_out, path)}" if path else "the output"
        if "None" in (in_true, in_false):
            which, other = ("true", in_false) if in_true == "None" else ("false", in_true)
            raise GraphError(f"{label} of the cond has no value (None, or an op) in the {which} branch but "
                             f"is {other} in the other; both branches must produce a value", source)
        where = f"output {_path_label(names, t_out, path)} of the cond is" if path else "the cond returns"
        raise GraphError(
            f"the branches of a cond return different structures: {where} {in_true} in the true branch "
            f"and {in_false} in the false branch; both branches must return the same nesting of tuples, "
            "lists and dicts", source)
    labels = nest.paths(t_out)
    for i, (t, f) in enumerate(zip(t_flat, f_flat, strict=True)):
        label = _label(names, labels, i)
        if t is not None and t.dtype != f.dtype:
            raise GraphError(
                f"output {label} of the cond has dtype {t.dtype} in the true branch and {f.dtype} in the "
                "false branch; cast one of them (e.g. graph.cast(x, np.float32)) so both agree", source)


def _path_label(names, out, path: str) -> str:
    """`path` inside the branch outputs, starting with the user's name of the output when known."""
    if names and isinstance(out, (tuple, list)) and len(out) == len(names) and path.startswith("["):
        i, rest = path[1:].split("]", 1)
        return repr(f"{names[int(i)]}{rest}")
    return path


def _label(names, labels, i) -> str:
    if names is not None and i < len(names):
        return repr(names[i])
    return f"#{i}{labels[i]}" if labels[i] else f"#{i}"
