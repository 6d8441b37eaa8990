"""`while` and `for` loops: run in Python while their condition or iterable is a Python value,
graph while_loops when it is a tensor (or becomes one)."""
from __future__ import annotations

import numpy as np

import graph
from graph import nest
from transpile import conversion
from transpile.operators.arrays import journal_mark, undo_writes
from transpile.operators.carried_state import CarriedWrites
from transpile.operators.conditionals import graph_cond
from transpile.operators.data_structures import ElementsUnknown, TensorList, list_builder, list_truth, stacked_list
from transpile.operators.encoding import (
    builder_paths,
    fresh_containers,
    pack_result,
    replace_at,
    unpack_outputs,
    value_at,
)
from transpile.operators.graph_lists import GraphList
from transpile.operators.iterables import RangeSource, Source, graph_source
from transpile.operators.leaves import (
    cast_leaves,
    describe,
    is_convertible,
    is_tensor,
    leaf_dtype,
    mark_weak_type,
    variable_label,
    weak_type,
)
from transpile.operators.loop_vars import (
    ElementInference,
    body_output,
    dtype_changed,
    initial_mode,
    initial_value,
    joined_dtypes,
    joined_spec,
    probe_of_a_stand_in,
    probed_value,
    stays_python_number,
    weak_fixups,
    weak_probes,
)
from transpile.operators.staging import (
    Promote,
    Retry,
    StagingError,
    anchor_effects,
    build_until_settled,
    learn_weak_numbers_first,
    predicate,
    warn_at_user_line,
)
from transpile.operators.trace_state import LoopFrame, trace_state, trial_build
from transpile.operators.uncatchable import refuse_if_caught
from transpile.operators.values import MaybeDefined

_UNROLL_WARNING_ITERATIONS = 1000
_warned_unrolled: set = set()  # code objects of loop bodies already warned about


def _check_unrolling(loop_body, iterations: int, g, nodes_before: int) -> None:
    """Warns once per loop when a Python loop adds many copies of its body to the graph."""
    if iterations != _UNROLL_WARNING_ITERATIONS or len(g.nodes) == nodes_before:
        return
    code = getattr(loop_body, "__code__", None)
    if code in _warned_unrolled:
        return
    _warned_unrolled.add(code)
    meta = conversion.metadata_for(loop_body)
    where = _loop_where(meta, meta.get("kind", "")) if meta else "a loop"
    warn_at_user_line(f"{where} has run {iterations} iterations in Python while the graph is built, adding "
                      f"{len(g.nodes) - nodes_before} nodes so far: its condition or iterable is a Python value, "
                      "so it unrolls into the graph. Make it a graph tensor (e.g. a tensor loop bound) for a graph "
                      "loop")


def _loop_where(meta, kind) -> str:
    f, line = meta.get("filename"), meta.get("loop_line")
    return f"the {kind} loop at {f}:{line}" if f and line else f"a {kind} loop"


def _graph_loop(cond_fn, body_fn, internal, state, names, meta, kind: str, loop_where: str,
                parallel_iterations: int = 32):
    """`while cond_fn(internal, state): internal, state = body_fn(internal, state)` as a graph loop.

    `internal` are the helper's own loop variables (a counter); `state` the
    user's. Variables undefined before the loop, Python lists appended to in
    it and Python numbers whose dtype the body changes are discovered while
    tracing the body; the loop is then rolled back and built again with them.
    """
    g = graph.get_default_graph()
    anchor_effects(g)
    state = tuple(state)
    appends, resizes = set(meta.get("appends", ())), set(meta.get("resizes", ()))
    modes = [("sequence", None) if names[i] in resizes and isinstance(v, list)
             else ("accumulate",) if names[i] in appends and (isinstance(v, list) or list_builder(v) is not None)
             else initial_mode(v) for i, v in enumerate(state)]
    for i, v in enumerate(state):
        inner = tuple(builder_paths(v)) if modes[i] == ("tensor", None) else ()
        if inner:  # lists built by earlier loops stay lists (TensorArrays) through this one
            modes[i] = ("tensor", None, inner)
    token = object()
    written = CarriedWrites(token)
    labels = list(names)
    # variables that started as Python numbers and that the body, traced with them as numbers (a probe),
    # left Python numbers: index -> their Python type. Carried as tensors, they still stand for Python
    # numbers (leaves.weak_type) in the body and after the loop, as in the Python program.
    python_numbers: dict = {}

    def build():
        carried = [i for i, m in enumerate(modes) if m[0] not in ("fixed", "probe")]
        try:
            init = {i: initial_value(state[i], modes[i], names[i], loop_where) for i in carried}
        except TypeError as e:
            i = next(i for i in carried if not is_convertible(state[i]))
            label = variable_label(names[i], meta)
            raise StagingError(f"{label} cannot be carried by the graph loop: {e}") from None
        # a graph loop needs a variable: a loop whose state lives in Variables only gets a counter
        extra = () if internal or carried else (graph.constant(np.int64(0)),)
        n_internal = len(internal) + len(extra)
        loop_vars = tuple(internal) + extra + tuple(init[i] for i in carried)
        seen_outs: dict = {}

        def full_state(values):
            current = [probed_value(v) if modes[k] == ("probe",) else v for k, v in enumerate(state)]
            for i, v in zip(carried, values, strict=True):
                current[i] = v
                if i in python_numbers:
                    mark_weak_type(v, python_numbers[i])
            return current

        def probing() -> dict:
            """The carried lists whose element dtype this attempt infers: index -> ElementProbe."""
            return {i: init[i].probe for i in carried if modes[i][0] == "accumulate" and len(modes[i]) > 1
                    and init[i].probe is not None}

        def traced(fn, current, *args):
            """`fn(*args)`, asking for a rebuild when it reads a carried list before its first append."""
            try:
                with trial_build(bool(probing())):
                    return fn(*args)
            except ElementsUnknown as e:
                i = next((i for i in carried if modes[i] == ("accumulate",) and isinstance(state[i], list)
                          and isinstance(current[i], TensorList) and current[i].array._spec is e.spec), None)
                if i is not None:
                    raise Retry(token, {i: ("accumulate", ElementInference())}) from None
                if any(not frame.promotable for frame in trace_state().loops):
                    raise  # a list an outer graph loop carries
                raise StagingError(f"list '{e.spec.name}' is read in {_loop_where(meta, kind)} before anything "
                                   "is appended to it, and the loop cannot carry it as a list; append to it "
                                   "before reading it") from None
            except Exception as exc:
                guessing = probing()
                if not guessing:
                    refuse_if_caught(exc, f"in the body of {_loop_where(meta, kind)}, which the graph runs any "
                                          "number of times")
                    raise
                changes = {i: ("accumulate", modes[i][1].failed()) for i in guessing}
                if any(change[1].exhausted for change in changes.values()):
                    raise  # no dtype makes the body work: the error is the user's
                raise Retry(token, changes) from None

        def cond_w(*vs):
            current = full_state(vs[n_internal:])
            return traced(cond_fn, current, vs[:len(internal)], current)

        def body_w(*vs):
            current = full_state(vs[n_internal:])
            lists = {id(v): i for i, v in enumerate(current) if isinstance(v, list)}
            lengths = {i: len(v) for i, v in enumerate(current) if isinstance(v, list)}
            loops = trace_state().loops
            probes = weak_probes(state, modes)
            frame = LoopFrame(token, lists, weak_probes=probes, staged=True)
            loops.append(frame)
            nodes_before = len(g.nodes)
            # dicts and resizable lists as they enter the iteration: the body may change them in place
            entering = [fresh_containers((v,))[0] if isinstance(v, dict) else v.copy() if isinstance(v, GraphList)
                        else v for v in current]
            try:
                new_internal, out = traced(body_fn, current, vs[:len(internal)], current)
            finally:
                loops.remove(frame)
            out = unpack_outputs(out, names)
            guessing = probing()
            if guessing:  # an attempt to learn element dtypes only: the loop is built again
                raise Retry(token, {i: ("accumulate", modes[i][1].after(probe, init[i].array.dtype))
                                    for i, probe in guessing.items()})
            changes, result = {}, []
            for i, n in lengths.items():
                if out[i] is current[i] and len(out[i]) != n:  # appended in place (not via list_append)
                    changes[i] = ("accumulate",)
            if changes:
                raise Retry(token, changes)
            for i in range(len(state)):
                if modes[i] == ("probe",):
                    number_type = weak_type(state[i]) if out[i] is entering[i] else weak_type(out[i])
                    if number_type is not None:
                        python_numbers[i] = number_type
                    else:
                        python_numbers.pop(i, None)
                if modes[i] == ("probe",) and entering[i] is not state[i]:   # traced with a stand-in number
                    changes[i] = probe_of_a_stand_in(state[i], entering[i], out[i])
                    continue
                value, change = body_output(entering[i], out[i], modes[i], names[i], meta)
                if change is None and i in init and names[i] in meta.get("return_vars", ()) \
                        and dtype_changed(init[i], value):
                    # returns of different dtypes (`return 0` before the loop or in an earlier iteration, a
                    # float later): one dtype for both, as for the two branches of a cond
                    dtypes = joined_dtypes(init[i], value)
                    if [leaf_dtype(x) for x in nest.flatten(init[i])] == dtypes:
                        value = cast_leaves(value, dtypes)
                    elif modes[i][:2] == ("tensor", None):
                        change = ("tensor", dtypes, *modes[i][2:])
                    elif modes[i][0] == "zeros":
                        weak = modes[i][2] if len(modes[i]) > 2 else ()
                        change = ("zeros", joined_spec(modes[i][1], value, weak))
                if change is not None:
                    changes[i] = change
                elif modes[i][0] not in ("fixed", "probe"):
                    result.append(value)
                    seen_outs[i] = value
            for i, v in seen_outs.items():   # Python numbers the body keeps Python numbers
                if modes[i] == ("tensor", None) and weak_type(state[i]) is not None:
                    if stays_python_number(v, current[i], nodes_before):
                        python_numbers[i] = weak_type(state[i])
                    else:
                        python_numbers.pop(i, None)
            fixups = weak_fixups(state, modes, init, seen_outs, nodes_before)
            for i in fixups:   # another path gives it an array's dtype
                python_numbers.pop(i, None)
            changes.update(fixups)
            if not changes and any(dtype_changed(init[i], v) for i, v in seen_outs.items()):
                # a dtype change: it may come from a Python number carried at its default dtype, in this
                # loop or an enclosing one; else the variable takes both dtypes' promotion, as in a cond
                if probes:
                    raise Retry(token, probes)
                learn_weak_numbers_first()
                for i, v in seen_outs.items():
                    if modes[i][0] == "tensor" and len(modes[i]) <= 2 and dtype_changed(init[i], v):
                        dtypes = joined_dtypes(init[i], v)
                        if [leaf_dtype(x) for x in nest.flatten(init[i])] == dtypes:
                            seen_outs[i] = cast_leaves(v, dtypes)
                        else:
                            warn_at_user_line(f"{variable_label(names[i], meta)} is {describe(init[i])} before "
                                              f"{_loop_where(meta, kind)} and {describe(v)} after an iteration; it "
                                              f"is {', '.join(map(str, dtypes))} from the start")
                            changes[i] = ("tensor", dtypes)
                result = list(seen_outs.values())
            if changes:
                raise Retry(token, changes)
            return tuple(new_internal) + tuple(v + np.int64(1) for v in vs[len(internal):n_internal]) + \
                tuple(result)

        # arrays made before the loop that its body writes are loop variables after the user's
        n_vars = len(loop_vars)

        def cond_a(*vs):
            return written.traced(lambda: cond_w(*vs[:n_vars]), vs[n_vars:])[0]

        def body_a(*vs):
            out, contents = written.traced(lambda: body_w(*vs[:n_vars]), vs[n_vars:])
            return out + contents

        context, effect_before = g.context, g.last_effect(g.context)
        outs = graph.while_loop(cond_a, body_a, loop_vars + written.contents(),
                                parallel_iterations=parallel_iterations,
                                names=[f"<{kind} counter>"] * n_internal + [labels[i] for i in carried]
                                + ["<a place the loop writes>"] * len(written.slots))
        if context is not None and g.last_effect(context) is not effect_before:
            context.has_effects = True  # (as for graph.cond, see conditionals.graph_cond)
        written.write(outs[n_vars:])
        outs = tuple(outs[:n_vars])
        final = full_state(outs[n_internal:])
        for i in carried:
            if modes[i][0] == "accumulate" and not isinstance(state[i], TensorList):
                final[i] = stacked_list(final[i])
            for path, *_ in (modes[i][2] if modes[i][0] == "tensor" and len(modes[i]) > 2 else ()):
                if not isinstance(value_at(state[i], path), TensorList):  # outside its loops: a tensor
                    final[i] = replace_at(final[i], path, stacked_list)
            for path, _ in (modes[i][3] if modes[i][0] == "tensor" and len(modes[i]) > 3 else ()):
                # a key the body adds is there after the loop; the run fails if the loop never assigned it
                final[i] = replace_at(final[i], path, MaybeDefined.read)
        return outs[:len(internal)], final

    def adjust(changes: dict) -> None:
        if written.learn(changes):
            return
        for i, change in changes.items():
            modes[i] = change
        if ("probe",) in changes.values():
            # a return value's placeholder learned while Python numbers had their default dtypes is
            # learned again, with the dtypes the numbers get
            for i, mode in enumerate(modes):
                if mode[0] == "zeros" and i not in changes:
                    modes[i] = initial_mode(state[i])

    return build_until_settled(build, adjust, token,
                               f"could not build the graph loop {loop_where}: its variables kept changing")


def while_stmt(loop_test, loop_body, state=(), names=()):
    """Runs the loop, and returns the variables it carries::

        while loop_test(*state):
            state = loop_body(*state)

    When the test is a graph tensor the loop becomes a graph while_loop. A loop
    whose test turns into a tensor after some Python iterations (a `break` that
    depends on a tensor, e.g. in `while True:`) is rebuilt as a graph loop.
    """
    state, names = tuple(state), tuple(names)
    g = graph.get_default_graph()
    checkpoint, written_mark = g.checkpoint(), journal_mark()
    start = fresh_containers(state)
    nodes_before = len(g.nodes)
    iterations = 0
    loops = trace_state().loops
    frame = LoopFrame(object(), promotable=True)
    loops.append(frame)
    try:
        test = list_truth(loop_test(*state))
        while not is_tensor(test):
            if not test:
                return pack_result(state, names) if names else None
            state = unpack_outputs(loop_body(*state), names)
            iterations += 1
            _check_unrolling(loop_body, iterations, g, nodes_before)
            test = list_truth(loop_test(*state))
    except Promote as p:
        if p.token is not frame.token:
            raise
    finally:
        loops.remove(frame)
    g.rollback(checkpoint)
    undo_writes(written_mark)
    meta = conversion.metadata_for(loop_body)
    where = _loop_where(meta, "while")

    def cond_fn(internal, current):
        value = list_truth(loop_test(*current))
        return predicate(value, where) if is_tensor(value) else graph.constant(bool(value))

    def body_fn(internal, current):
        return (), loop_body(*current)

    try:
        _, final = _graph_loop(cond_fn, body_fn, (), start, names, meta, "while", f"{where}, which ran zero times")
    except Exception as e:
        if iterations:
            e.add_note(f"note: {where} became a graph loop because its condition became a graph tensor after "
                       f"{iterations} Python iteration(s) (a `break` or `return` that depends on a tensor, or a "
                       "loop variable that became a tensor)")
        raise
    return pack_result(final, names) if names else None


def for_stmt(iterable, loop_body, state=(), names=(), loop_test=None):
    """Runs the loop, and returns the variables it carries::

        for item in iterable:
            if loop_test is not None and not loop_test(*state):
                break
            state = loop_body(item, *state)

    Iterating over a tensor (its first axis), a TensorArray, `range` with
    tensor bounds, or `enumerate`/`zip` of those builds a graph loop. Other
    iterables run in Python while the graph is built. When whether such a loop
    goes on depends on a graph tensor (a `break` or `return` under a tensor
    condition), a `range` loop becomes a graph loop; where its body needs the
    index as a Python int (`self.layers[i]`), and for other iterables of known
    length, each remaining iteration runs in a graph cond on the loop test
    instead (`_guarded_iterations`), so items stay Python values.
    """
    state, names = tuple(state), tuple(names)
    meta = conversion.metadata_for(loop_body)
    where = _loop_where(meta, "for")
    source = graph_source(iterable)
    if source is not None:
        return _graph_for(source, loop_body, state, names, loop_test, meta, where)
    g = graph.get_default_graph()
    checkpoint, written_mark = g.checkpoint(), journal_mark()
    start = fresh_containers(state)
    items = iter(iterable)
    nodes_before, iterations = len(g.nodes), 0
    loops = trace_state().loops
    frame = LoopFrame(object(), promotable=isinstance(iterable, range))
    loops.append(frame)
    try:
        while True:
            if loop_test is not None:
                go = loop_test(*state)
                if is_tensor(go):
                    if isinstance(iterable, range):
                        raise Promote(frame.token)
                    if hasattr(iterable, "__len__"):
                        return _guarded_iterations(items, loop_body, state, names, loop_test, where, go)
                    raise StagingError(
                        f"{where} iterates over {describe(iterable)}, so it runs in Python while the graph is "
                        "built, but whether it stops early (a `break` or `return` inside it) depends on a graph "
                        "tensor, and the iterable has no length to bound it. Iterate over a list or a tensor "
                        "instead (e.g. `for v in list(values)`, `for v in np.asarray(values)` on an array "
                        "argument, or `range(n)` with a tensor n), or make the condition a Python value")
                if not go:
                    break
            try:
                item = next(items)
            except StopIteration:
                break
            state = unpack_outputs(loop_body(item, *state), names)
            iterations += 1
            _check_unrolling(loop_body, iterations, g, nodes_before)
        return pack_result(state, names) if names else None
    except Promote as p:
        if p.token is not frame.token:
            raise
    finally:
        loops.remove(frame)
    g.rollback(checkpoint)
    undo_writes(written_mark)
    src = RangeSource(iterable.start, iterable.stop, iterable.step)
    unrolled_start = fresh_containers(start)
    try:
        return _graph_for(src, loop_body, start, names, loop_test, meta, where)
    except Exception as graph_loop_error:
        # e.g. the index used as a Python int (a list index): the range is static, so iterating it in
        # Python with each iteration in a graph cond gives the same result
        g.rollback(checkpoint)
        undo_writes(written_mark)
        try:
            return _guarded_iterations(iter(iterable), loop_body, unrolled_start, names, loop_test, where)
        except Exception as e:
            e.add_note(f"note: {where} goes on or stops depending on a graph tensor (a `break` or `return` "
                       f"inside it). Built as a graph loop it failed with: {graph_loop_error}")
            raise


def _guarded_iterations(items, loop_body, state, names, loop_test, where, go=None):
    """The rest of a Python `for` loop whose test (`go`: its value now) has become a graph tensor::

        for item in items:
            if not loop_test(*state):
                break
            state = loop_body(item, *state)

    with each iteration under a tensor test built as a graph cond that runs the
    body or leaves the state as it is: items (a list's, a range's index) stay
    Python values, and the graph has one cond per remaining item.
    """
    g = graph.get_default_graph()
    nodes_before, iterations = len(g.nodes), 0

    def skip(*values):
        return pack_result(values, names)

    for item in items:
        go = loop_test(*state) if go is None else go
        if not is_tensor(go):
            if not go:
                break
            out = loop_body(item, *state)
        else:
            out = graph_cond(predicate(go, where), lambda *values, item=item: loop_body(item, *values), skip,
                             state, names, f"an iteration of {where}")
        state, go = unpack_outputs(out, names), None
        iterations += 1
        _check_unrolling(loop_body, iterations, g, nodes_before)
    return pack_result(state, names) if names else None


def _graph_for(source: Source, loop_body, state, names, loop_test, meta, where):
    n = source.n()

    def cond_fn(internal, current):
        (k,) = internal
        pred = graph.less(k, n)
        if loop_test is not None:
            go = loop_test(*current)
            go = predicate(go, where) if is_tensor(go) else graph.constant(bool(go))
            pred = graph.logical_and(pred, go)
        return pred

    def body_fn(internal, current):
        (k,) = internal
        out = loop_body(source.item(k), *current)
        return (k + np.int64(1),), out

    _, final = _graph_loop(cond_fn, body_fn, (graph.constant(np.int64(0)),), state, names, meta, "for",
                           f"{where}, which ran zero times")
    return pack_result(final, names) if names else None
