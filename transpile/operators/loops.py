"""`while` and `for` loops: run in Python while their condition or iterable is a Python value,
graph while_loops when it is a tensor (or becomes one)."""
from __future__ import annotations

import numpy as np

import graph
from transpile.code_cache import CodeMap
from transpile.operators.arrays import journal_mark, undo_writes
from transpile.operators.conditionals import graph_cond
from transpile.operators.data_structures import list_truth
from transpile.operators.encoding import fresh_containers, pack_result, unpack_outputs
from transpile.operators.facts import NO_FACTS, LoopFacts, filename_of
from transpile.operators.iterables import RangeSource, Source, graph_source
from transpile.operators.leaves import describe, is_tensor
from transpile.operators.loop_tracer import LoopSpec, graph_loop
from transpile.operators.staging import StagingError, predicate, warn_at_user_line
from transpile.operators.trace_state import LoopFrame, trace_state

_UNROLL_WARNING_ITERATIONS = 1000
_warned_unrolled: CodeMap[bool] = CodeMap()  # loop bodies already warned about


def _check_unrolling(loop_body, where: str, iterations: int, g, nodes_before: int) -> None:
    """Warns once per loop when a Python loop adds many copies of its body to the graph."""
    if iterations != _UNROLL_WARNING_ITERATIONS or len(g.nodes) == nodes_before:
        return
    code = getattr(loop_body, "__code__", None)
    if code is None or code in _warned_unrolled:
        return
    _warned_unrolled[code] = True
    warn_at_user_line(f"{where} has run {iterations} iterations in Python while the graph is built, adding "
                      f"{len(g.nodes) - nodes_before} nodes so far: its condition or iterable is a Python value, "
                      "so it unrolls into the graph. Make it a graph tensor (e.g. a tensor loop bound) for a graph "
                      "loop")


def _loop_where(facts: LoopFacts, kind: str, loop_body) -> str:
    filename = filename_of(loop_body)
    return f"the {kind} loop at {filename}:{facts.line}" if filename and facts.line else f"a {kind} loop"


def while_stmt(loop_test, loop_body, state=(), names=(), facts: LoopFacts = NO_FACTS):
    """Runs the loop, and returns the variables it carries::

        while loop_test(*state):
            state = loop_body(*state)

    When the test is a graph tensor the loop becomes a graph while_loop. A loop
    whose test turns into a tensor after some Python iterations (a `break` that
    depends on a tensor, e.g. in `while True:`) is rebuilt as a graph loop.
    """
    state, names = tuple(state), tuple(names)
    where = _loop_where(facts, "while", loop_body)
    g = graph.get_default_graph()
    checkpoint, written_mark = g.checkpoint(), journal_mark()
    start = fresh_containers(state)
    python = _PythonLoop(loop_body, where, g)
    try:  # (the frame goes also when the body raises: a frame left behind would ask every later loop to wait)
        test = python.guarded(lambda: list_truth(loop_test(*state)))
        while not python.frame.promote and not is_tensor(test):
            if not test:
                return pack_result(state, names) if names else None
            out = python.iteration(lambda: loop_body(*state))
            if python.frame.promote:  # (the iteration is abandoned: it may have given nothing)
                break
            state = unpack_outputs(out, names)
            test = python.guarded(lambda: list_truth(loop_test(*state)))
    finally:
        python.close()
    g.rollback(checkpoint)
    undo_writes(written_mark)

    def cond_fn(internal, current):
        value = list_truth(loop_test(*current))
        return predicate(value, where) if is_tensor(value) else graph.constant(bool(value))

    def body_fn(internal, current):
        return (), loop_body(*current)

    try:
        _, final = graph_loop(LoopSpec(cond_fn, body_fn, (), start, names, facts, where, "while"))
    except Exception as e:
        if python.iterations:
            e.add_note(f"note: {where} became a graph loop because its condition became a graph tensor after "
                       f"{python.iterations} Python iteration(s) (a `break` or `return` that depends on a tensor, "
                       "or a loop variable that became a tensor)")
        raise
    return pack_result(final, names) if names else None


class _PythonLoop:
    """A loop running in Python while the graph is built, which may yet become a graph loop: code nested
    in it asks for that through its frame (`frame.promote`, trace_state.LoopFrame), and an error its
    iteration raises after such a request is the abandoned iteration's."""

    def __init__(self, loop_body, where: str, g, promotable: bool = True):
        self.loop_body, self.where, self.g = loop_body, where, g
        self.frame = LoopFrame(object(), promotable=promotable)
        self.nodes_before, self.iterations = len(g.nodes), 0
        trace_state().loops.append(self.frame)

    def guarded(self, fn):
        """`fn()`, or None where it raised after the loop was asked to become a graph loop."""
        try:
            return fn()
        except Exception:
            if not self.frame.promote:
                raise
            return None

    def iteration(self, fn):
        out = self.guarded(fn)
        self.iterations += 1
        _check_unrolling(self.loop_body, self.where, self.iterations, self.g, self.nodes_before)
        return out

    def close(self) -> None:
        if self.frame in trace_state().loops:
            trace_state().loops.remove(self.frame)


def for_stmt(iterable, loop_body, state=(), names=(), loop_test=None, facts: LoopFacts = NO_FACTS):
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
    where = _loop_where(facts, "for", loop_body)
    source = graph_source(iterable)
    if source is not None:
        return _graph_for(source, loop_body, state, names, loop_test, facts, where)
    g = graph.get_default_graph()
    checkpoint, written_mark = g.checkpoint(), journal_mark()
    start = fresh_containers(state)
    items = iter(iterable)
    python = _PythonLoop(loop_body, where, g, promotable=isinstance(iterable, range))
    try:
        while not python.frame.promote:
            go = python.guarded(lambda: loop_test(*state)) if loop_test is not None else True
            if python.frame.promote:
                break
            if is_tensor(go):
                if isinstance(iterable, range):
                    python.frame.promote = True
                    break
                python.close()
                _check_has_length(iterable, where)
                return _guarded_iterations(items, loop_body, state, names, loop_test, where, go)
            item = next(items, _END) if go else _END
            if item is _END:
                return pack_result(state, names) if names else None
            out = python.iteration(lambda: loop_body(item, *state))
            if python.frame.promote:  # (the iteration is abandoned: it may have given nothing)
                break
            state = unpack_outputs(out, names)
    finally:
        python.close()
    g.rollback(checkpoint)
    undo_writes(written_mark)
    src = RangeSource(iterable.start, iterable.stop, iterable.step)
    unrolled_start = fresh_containers(start)
    try:
        return _graph_for(src, loop_body, start, names, loop_test, facts, where)
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


_END = object()


# reversed() of a list or tuple: as bounded as the sequence (`for e in reversed(acc)`)
_SEQUENCE_ITERATORS = (type(reversed([])), reversed)


def _check_has_length(iterable, where: str) -> None:
    """A loop whose exit depends on a graph tensor goes through an iterable in Python only if it has a
    length (each remaining item an iteration in a graph cond): else a StagingError saying what to do."""
    if hasattr(iterable, "__len__") or isinstance(iterable, _SEQUENCE_ITERATORS):
        return
    raise StagingError(
        f"{where} iterates over {describe(iterable)}, so it runs in Python while the graph is built, but "
        "whether it stops early (a `break` or `return` inside it) depends on a graph tensor, and the "
        "iterable has no length to bound it. Iterate over a list or a tensor instead (e.g. `for v in "
        "list(values)`, `for v in np.asarray(values)` on an array argument, or `range(n)` with a tensor n), "
        "or make the condition a Python value")


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
        _check_unrolling(loop_body, where, iterations, g, nodes_before)
    return pack_result(state, names) if names else None


def _graph_for(source: Source, loop_body, state, names, loop_test, facts: LoopFacts, where: str):
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

    _, final = graph_loop(LoopSpec(cond_fn, body_fn, (graph.constant(np.int64(0)),), state, names, facts, where,
                                   "for"))
    return pack_result(final, names) if names else None
