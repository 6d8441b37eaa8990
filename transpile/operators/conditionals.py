"""`if` statements and conditional expressions: Python's when the condition is a Python value,
a graph cond when it is a tensor."""
from __future__ import annotations

import dis

import graph
from graph.errors import SourceLocation
from graph.node import Tensor
from transpile import conversion
from transpile.errors import UncatchableError
from transpile.operators.carried_state import CarriedWrites
from transpile.operators.cond_outputs import DROP, Raised, as_is, encode, mode_key, plan, restore
from transpile.operators.data_structures import list_truth, stacked_list
from transpile.operators.encoding import fresh_containers, pack_result, replace_at, stand_in, unpack_outputs
from transpile.operators.leaves import is_tensor, mark_weak
from transpile.operators.staging import Retry, StagingError, anchor_effects, build_until_settled, predicate
from transpile.operators.trace_state import note_conditions, trace_state
from transpile.operators.uncatchable import refuse_if_caught
from transpile.operators.values import ConditionallyDefinedError, Undefined


def _user_raise_location(exc: BaseException) -> SourceLocation | None:
    """Where a `raise` statement in converted code raised `exc`, or None for any other error."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None or not conversion.is_converted_code(last.tb_frame.f_code):
        return None
    code = last.tb_frame.f_code
    op = code.co_code[last.tb_lasti] if 0 <= last.tb_lasti < len(code.co_code) else None
    if op is None or dis.opname[op] not in ("RAISE_VARARGS", "RERAISE"):
        return None
    return SourceLocation(code.co_filename, last.tb_lineno, code.co_name)


def _staged_raise(raised: Raised) -> None:
    """Fails the run, when the current branch is taken, with the exception it raises."""
    g = graph.get_default_graph()
    msg = f"{type(raised.exc).__name__}: {raised.exc}"
    g.create_node("Assert", [graph.constant(False)], {"message": msg}, name="raise", source=raised.location)


def graph_cond(pred: Tensor, true_fn, false_fn, state, names, what: str):
    """Builds a graph cond for `if pred: state = true_fn(*state) else: state = false_fn(*state)`.

    Both branches are traced; their values are compared variable by variable
    (`cond_outputs.plan`). When the true branch, traced first, was encoded
    differently from what the false branch shows is needed (a placeholder, a
    dtype), the cond is rolled back and built again with that knowledge. So is
    a cond whose branches write numpy arrays made before it (MutableArrays): it
    is built again with their contents as extra outputs.
    """
    g = graph.get_default_graph()
    anchor_effects(g)
    meta_t, meta_f = conversion.metadata_for(true_fn), conversion.metadata_for(false_fn)
    hints: dict[int, tuple] = {}  # variable index -> the true branch's mode, learned from the false branch
    token = object()
    written = CarriedWrites(token)  # arrays made before the cond that the branches write: extra outputs

    def build():
        raw: dict = {}
        used: dict[int, tuple] = {}
        plans: list = []

        def run(side, fn):
            try:
                outs = unpack_outputs(fn(*fresh_containers(state)), names)
            except Exception as exc:
                location = _user_raise_location(exc)
                refuse_if_caught(exc, f"only when the graph takes that branch of {what}", location)
                if location is None:
                    raise
                outs = Raised(exc, location)
                _staged_raise(outs)
            raw[side] = outs
            return outs

        def with_writes(outputs):
            out, contents = written.traced(outputs)
            return out + contents

        def true_outputs():
            outs = run("true", true_fn)
            result = []
            for i in range(len(names)):
                value = outs if isinstance(outs, Raised) else outs[i]
                mode = hints.get(i) or (DROP if isinstance(outs, Raised) else as_is(value))
                used[i] = mode
                result.append(encode(value, mode, names[i]))
            return tuple(result)

        def false_outputs():
            outs = run("false", false_fn)
            t_outs = raw["true"]
            for i, name in enumerate(names):
                t = t_outs if isinstance(t_outs, Raised) else t_outs[i]
                f = outs if isinstance(outs, Raised) else outs[i]
                plans.append(plan(t, f, name, meta_t, meta_f))
            wanted = {i: p[0] for i, p in enumerate(plans)}
            if any(mode_key(wanted[i]) != mode_key(used[i]) for i in range(len(names))):
                raise Retry(token, wanted)
            return tuple(encode(outs if isinstance(outs, Raised) else outs[i], p[1], names[i])
                         for i, p in enumerate(plans))

        merged = graph.cond(pred, lambda: with_writes(true_outputs), lambda: with_writes(false_outputs))
        written.write(merged[len(names):])
        results = []
        t_outs = raw["true"]
        for i, (t_mode, f_mode, kept) in enumerate(plans):
            if t_mode == DROP:
                results.append(kept)
            else:
                original = t_outs[i] if not isinstance(t_outs, Raised) else raw["false"][i]
                lists = t_mode if t_mode[0] == "lists" else f_mode if f_mode[0] == "lists" else None
                if lists is not None:
                    if isinstance(original, Undefined) and not isinstance(raw["false"], Raised):
                        original = raw["false"][i]
                    value = restore(merged[i], stand_in(original, lists[2]))
                    for path, _, _, stack in lists[2]:
                        if stack:  # outside its loops, a built list reads as a tensor
                            value = replace_at(value, path, stacked_list)
                else:
                    value = restore(merged[i], original)
                    if not isinstance(raw["false"], Raised) and not isinstance(t_outs, Raised):
                        mark_weak(value, t_outs[i], raw["false"][i])   # Python numbers on both sides
                results.append(value)
        return pack_result(results, names)

    def adjust(changes: dict) -> None:
        if written.learn(changes):
            return
        hints.clear()
        hints.update(changes)

    conditions = trace_state().conditions
    conditions.append(pred)
    try:
        return build_until_settled(build, adjust, token,
                                   f"could not build the graph cond for {what}: its branches kept changing")
    except (StagingError, ConditionallyDefinedError) as e:
        note_conditions(e, reversed(conditions))
        raise
    except UncatchableError as e:  # (an error an `except` of the user's must not catch: the same)
        note_conditions(e.error, reversed(conditions))
        raise
    finally:
        conditions.pop()


def if_stmt(test, if_true, if_false, state=(), names=()):
    """Runs one branch, and returns the variables it assigns::

        if test:
            state = if_true(*state)
        else:
            state = if_false(*state)

    A graph-tensor `test` builds a graph cond: both branches are traced and the
    graph runs one of them.
    """
    test = list_truth(test)
    if not is_tensor(test):
        out = if_true(*state) if test else if_false(*state)
        return out
    meta = conversion.metadata_for(if_true)
    what = f"the `if` at {meta.get('filename')}:{meta.get('if_line')}" if meta else "an `if`"
    return graph_cond(predicate(test, what), if_true, if_false, tuple(state), tuple(names), what)


def if_exp(test, if_true, if_false):
    """`if_true() if test else if_false()`; only the chosen side runs."""
    test = list_truth(test)
    if not is_tensor(test):
        return if_true() if test else if_false()
    return graph_cond(predicate(test, "a conditional expression"), if_true, if_false, (),
                      ("<the value of the conditional expression>",),
                      "a conditional expression")
