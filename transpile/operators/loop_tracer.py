"""Building a graph while_loop from a converted loop: trace the body, reconcile what came out with how
each variable was carried, update the carry modes, and build again until they settle.

`LoopTracer.run()` is `while cond_fn(internal, state): internal, state = body_fn(internal, state)` as
one graph loop. `internal` are the loop helper's own variables (a `for` loop's counter); `state` the
user's, with one loop mode each (carry.py, loop_vars.py). What tracing the body can teach the loop:

- a variable undefined before the loop that the body assigns, or the function's return value;
- a Python list the body appends to (a TensorList) or resizes (a GraphList), and the element dtype of
  one it reads before appending to it (`ElementInference`, a guess per attempt);
- the dtype a Python number gets in the body (it is traced once as a number: a Probe);
- a dtype the body changes, a dict key it adds, a list inside a variable that becomes a TensorArray;
- numpy arrays and attributes of captured objects that the body writes (carried_state.py).

An attempt returns a `Rebuild` of those changes (staging.build_until_settled rolls the graph back and
builds again); code nested in the body asks for changes through the loop's frame (trace_state.LoopFrame).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

import graph
from graph import nest
from graph.node import Tensor
from transpile.operators.arrays import MutableArray, link_on_path
from transpile.operators.carried_state import CarriedWrites
from transpile.operators.carry import (
    CARRIED,
    PROBE,
    Appended,
    Carried,
    FirstAssigned,
    Fixed,
    LoopMode,
    Probe,
    Resized,
    ReturnValue,
)
from transpile.operators.data_structures import TensorList, list_builder, stacked_list
from transpile.operators.encoding import builder_paths, fresh_containers, replace_at, unpack_outputs, value_at
from transpile.operators.facts import LoopFacts, variable_label
from transpile.operators.graph_lists import GraphList
from transpile.operators.leaves import (
    cast_leaves,
    describe,
    is_convertible,
    leaf_dtype,
    mark_weak_type,
    weak_type,
)
from transpile.operators.loop_vars import (
    BodyWhere,
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
    Rebuild,
    StagingError,
    anchor_effects,
    build_until_settled,
    request_weak_numbers_first,
    warn_at_user_line,
)
from transpile.operators.trace_state import LoopFrame, trace_state, trial_build
from transpile.operators.uncatchable import refuse_if_caught
from transpile.operators.values import MaybeDefined

_FAILED = object()   # what a traced function gives when its attempt failed under a guessed element dtype


@dataclass(frozen=True)
class LoopSpec:
    """What the converted code says about a loop: its functions, state and names, and what its errors
    name (the converter's facts, and `where`: "the for loop at file:line")."""

    cond_fn: object
    body_fn: object
    internal: tuple
    state: tuple
    names: tuple
    facts: LoopFacts
    where: str
    kind: str              # "while" or "for"
    parallel_iterations: int = 32

    @property
    def zero_trips(self) -> str:
        """How a read of a variable the loop may not have assigned names the loop."""
        return f"{self.where}, which ran zero times"

    def label(self, i: int) -> str:
        """Variable `i` as errors name it."""
        return variable_label(self.names[i], self.facts.return_vars)


@dataclass
class _Attempt:
    """One attempt at building the loop: the variables it carries and what tracing taught it."""

    carried: list
    init: dict
    n_internal: int
    changes: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)   # variable index -> the body's value, as carried
    rebound: set = field(default_factory=set)     # the arrays' variables the body binds a new array to


class LoopTracer:
    """Builds one graph loop (see the module docstring)."""

    def __init__(self, spec: LoopSpec):
        self.spec = spec
        self.g = graph.get_default_graph()
        state, names = spec.state, spec.names
        appends, resizes = set(spec.facts.appends), set(spec.facts.resizes)
        self.modes: list[LoopMode] = [_starting_mode(v, names[i] in appends, names[i] in resizes)
                                      for i, v in enumerate(state)]
        self.token = object()
        self.written = CarriedWrites()
        # variables that started as Python numbers and that the body, traced with them as numbers (a
        # probe), left Python numbers: index -> their Python type. Carried as tensors, they still stand
        # for Python numbers (leaves.weak_type) in the body and after the loop, as in the Python program.
        self.python_numbers: dict = {}

    def run(self):
        """(internal values, state values) after the loop."""
        anchor_effects(self.g)
        return build_until_settled(self._build, self._adjust,
                                   f"could not build the graph loop {self.spec.where}: its variables kept "
                                   "changing")

    # -- one attempt ----------------------------------------------------------------------------
    def _build(self):
        spec = self.spec
        carried = [i for i, m in enumerate(self.modes) if not isinstance(m, (Fixed, Probe))]
        init = {i: self._initial(i) for i in carried}
        # a graph loop needs a variable: a loop whose state lives in Variables only gets a counter
        extra = () if spec.internal or carried else (graph.constant(np.int64(0)),)
        attempt = _Attempt(carried, init, len(spec.internal) + len(extra))
        loop_vars = tuple(spec.internal) + extra + tuple(init[i] for i in carried)
        n_vars = len(loop_vars)
        context, effect_before = self.g.context, self.g.last_effect(self.g.context)
        outs = graph.while_loop(
            lambda *vs: self.written.traced(lambda: self._cond(attempt, vs[:n_vars]), vs[n_vars:])[0],
            lambda *vs: self._body_with_writes(attempt, vs, n_vars),
            loop_vars + self.written.contents(), parallel_iterations=spec.parallel_iterations,
            names=[f"<{spec.kind} counter>"] * attempt.n_internal + [spec.names[i] for i in carried]
            + ["<a place the loop writes>"] * len(self.written.slots))
        if attempt.changes or self.written.found:
            return Rebuild(attempt.changes)
        if context is not None and self.g.last_effect(context) is not effect_before:
            context.has_effects = True  # (as for graph.cond, see conditionals.graph_cond)
        self.written.write(outs[n_vars:])
        return self._final(attempt, tuple(outs[:n_vars]))

    def _adjust(self, changes: dict) -> None:
        if self.written.settle() and not changes:
            return
        for i, change in changes.items():
            self.modes[i] = change
        if PROBE in changes.values():
            # a return value's placeholder learned while Python numbers had their default dtypes is
            # learned again, with the dtypes the numbers get
            for i, mode in enumerate(self.modes):
                if isinstance(mode, ReturnValue) and i not in changes:
                    self.modes[i] = initial_mode(self.spec.state[i])

    def _initial(self, i: int):
        try:
            return initial_value(self.spec.state[i], self.modes[i], self.spec.names[i], self.spec.zero_trips)
        except TypeError as e:
            if is_convertible(self.spec.state[i]):
                raise
            raise StagingError(f"{self.spec.label(i)} cannot be carried by the graph loop: {e}") from None

    def _full_state(self, attempt: _Attempt, values) -> list:
        """The user's state as the body sees it: carried values from the loop variables, the others as
        they were (a probed one as a Python number)."""
        state = self.spec.state
        current = [probed_value(v) if isinstance(self.modes[k], Probe) else v for k, v in enumerate(state)]
        for i, v in zip(attempt.carried, values, strict=True):
            current[i] = v
            if i in self.python_numbers:
                mark_weak_type(v.value if isinstance(v, MaybeDefined) else v, self.python_numbers[i])
        return current

    # -- the loop's test and body ---------------------------------------------------------------
    def _cond(self, attempt: _Attempt, vs):
        n = len(self.spec.internal)
        current = self._full_state(attempt, vs[attempt.n_internal:])
        frame = self._frame(attempt, current, weak=False)
        trace_state().loops.append(frame)
        try:
            pred = self._traced(attempt, self.spec.cond_fn, vs[:n], current)
        finally:
            trace_state().loops.remove(frame)
        attempt.changes.update(frame.requests)
        return graph.constant(False) if pred is _FAILED or attempt.changes else pred

    def _frame(self, attempt: _Attempt, current, weak: bool = True) -> LoopFrame:
        """The frame of the loop's test or body being traced (trace_state.LoopFrame)."""
        lists = {id(v): i for i, v in enumerate(current) if isinstance(v, list)}
        probes = weak_probes(self.spec.state, self.modes) if weak else {}
        return LoopFrame(self.token, lists, weak_probes=probes, staged=True,
                         list_specs=self._list_specs(attempt, current))

    def _body_with_writes(self, attempt: _Attempt, vs, n_vars: int):
        out, contents = self.written.traced(lambda: self._body(attempt, vs[:n_vars]), vs[n_vars:])
        return out + contents

    def _body(self, attempt: _Attempt, vs) -> tuple:
        """The loop variables' next values; where the attempt learns it must be built again, `vs` as they
        came (the loop is built to completion, then thrown away)."""
        spec = self.spec
        # what a thrown-away attempt returns: the loop variables as they came, not as the body changed
        # them in place (a dict that gained a key)
        pristine = fresh_containers(vs)
        current = self._full_state(attempt, vs[attempt.n_internal:])
        frame = self._frame(attempt, current)
        lengths = {i: len(v) for i, v in enumerate(current) if isinstance(v, list)}
        nodes_before = len(self.g.nodes)
        # dicts and resizable lists as they enter the iteration: the body may change them in place
        entering = [fresh_containers((v,))[0] if isinstance(v, dict) else v.copy() if isinstance(v, GraphList)
                    else v for v in current]
        trace_state().loops.append(frame)
        try:
            result = self._traced(attempt, spec.body_fn, vs[:len(spec.internal)], current)
        finally:
            trace_state().loops.remove(frame)
        if result is _FAILED or attempt.changes:
            return pristine
        new_internal, out = result
        attempt.changes.update(self._learned(attempt, frame, current, lengths, unpack_outputs(out, spec.names)))
        if attempt.changes:
            return pristine
        attempt.changes.update(self._outputs(attempt, entering, unpack_outputs(out, spec.names), nodes_before))
        if attempt.changes or trace_state().rebuild_pending():  # (an enclosing loop is built again first)
            return pristine
        counters = tuple(v + np.int64(1) for v in vs[len(spec.internal):attempt.n_internal])
        return tuple(new_internal) + counters + tuple(attempt.outputs[i] for i in attempt.carried)

    def _list_specs(self, attempt: _Attempt, current) -> dict:
        """The TensorLists the loop carries (by their spec) that a read before the first append can name."""
        return {id(current[i].array._spec): i for i in attempt.carried
                if isinstance(self.modes[i], Appended) and self.modes[i].inference is None
                and isinstance(self.spec.state[i], list) and isinstance(current[i], TensorList)}

    def _probing(self, attempt: _Attempt) -> dict:
        """The carried lists whose element dtype this attempt infers: index -> ElementProbe."""
        return {i: attempt.init[i].probe for i in attempt.carried
                if isinstance(self.modes[i], Appended) and self.modes[i].inference is not None
                and attempt.init[i].probe is not None}

    def _traced(self, attempt: _Attempt, fn, internal, current):
        """`fn(internal, current)`; _FAILED where it raised under a guessed element dtype (the loop is
        built again under the next guess)."""
        guessing = self._probing(attempt)
        try:
            with trial_build(bool(guessing)):
                return fn(internal, current)
        except Exception as exc:
            if not guessing:
                refuse_if_caught(exc, f"in the body of {self.spec.where}, which the graph runs any number "
                                      "of times")
                raise
            changes = {i: Appended(self.modes[i].inference.failed()) for i in guessing}
            if any(change.inference.exhausted for change in changes.values()):
                raise  # no dtype makes the body work: the error is the user's
            attempt.changes.update(changes)
            return _FAILED

    def _learned(self, attempt: _Attempt, frame: LoopFrame, current, lengths: dict, out) -> dict:
        """What the body's trace asked to change before its outputs are read: requests of code nested in
        it, the element dtypes an inferring attempt learned, lists appended to in place."""
        changes = dict(frame.requests)
        guessing = self._probing(attempt)
        if guessing:  # an attempt to learn element dtypes only: the loop is built again
            changes.update({i: Appended(self.modes[i].inference.after(probe, attempt.init[i].array.dtype))
                            for i, probe in guessing.items()})
        for i, n in lengths.items():
            if out[i] is current[i] and len(out[i]) != n:  # appended in place (not via list_append)
                changes[i] = Appended()
        return changes

    def _outputs(self, attempt: _Attempt, entering, out, nodes_before: int) -> dict:
        """Reads the body's value of each variable into `attempt.outputs`; returns the changes of modes
        they call for."""
        changes = {}
        known = set(self.python_numbers)
        for i in range(len(self.spec.state)):
            change = self._output(attempt, i, entering[i], out[i])
            if change is not None:
                changes[i] = change
        self._learn_python_numbers(attempt, entering, nodes_before)
        fixups = weak_fixups(self.spec.state, self.modes, attempt.init, attempt.outputs, nodes_before)
        for i in fixups:   # another path gives it an array's dtype
            self.python_numbers.pop(i, None)
        changes.update(fixups)
        if not changes:
            changes.update(self._dtype_changes(attempt))
        if not changes:
            # a counter found to stay a Python number (`k += 1`): the body saw it as an int64 tensor, so
            # what it computed from it is built again seeing a Python int (`idx.append(k)` holds ints)
            changes.update({i: self.modes[i] for i in set(self.python_numbers) - known
                            if self.modes[i] == CARRIED})
        return changes

    def _output(self, attempt: _Attempt, i: int, entering, out) -> LoopMode | None:
        spec, mode, state = self.spec, self.modes[i], self.spec.state
        if isinstance(mode, Probe):
            number_type = weak_type(state[i]) if out is entering else weak_type(out)
            if number_type is not None:
                self.python_numbers[i] = number_type
            else:
                self.python_numbers.pop(i, None)
            if entering is not state[i]:   # traced with a stand-in number
                return probe_of_a_stand_in(state[i], entering, out)
        if isinstance(mode, FirstAssigned) and not isinstance(out, MaybeDefined):
            self._learn_first_assigned(i, out)
        if isinstance(state[i], MutableArray) and out is not entering:
            attempt.rebound.add(i)
        result = body_output(entering, out, mode, spec.names[i], BodyWhere(spec.label(i), spec.facts.body_line))
        if result.change is not None:
            return result.change
        value = result.value
        if i in attempt.init and spec.names[i] in spec.facts.return_vars \
                and dtype_changed(attempt.init[i], value):
            value, change = self._return_dtypes(attempt.init[i], value, mode)
            if change is not None:
                return change
        if not isinstance(mode, (Fixed, Probe)):
            attempt.outputs[i] = value
        return None

    @staticmethod
    def _return_dtypes(before, value, mode: LoopMode):
        """Returns of different dtypes (`return 0` before the loop or in an earlier iteration, a float
        later): one dtype for both, as for the two branches of a cond. (value, change of mode or None)."""
        dtypes = joined_dtypes(before, value)
        if [leaf_dtype(x) for x in nest.flatten(before)] == dtypes:
            return cast_leaves(value, dtypes), None
        if isinstance(mode, Carried) and mode.dtypes is None:
            return value, replace(mode, dtypes=tuple(dtypes))
        if isinstance(mode, ReturnValue):
            return value, ReturnValue(joined_spec(mode.spec, value, mode.weak))
        return value, None

    def _learn_first_assigned(self, i: int, value) -> None:
        """A variable first assigned in the body a Python number (a loop index `i`, `k * 0.5`) is one after
        the loop too (and in the next iteration), as in Python: weak beside arrays, and a Python number where
        the function returns it."""
        kind = weak_type(value)
        if kind is not None:
            self.python_numbers[i] = kind
        else:
            self.python_numbers.pop(i, None)

    def _learn_python_numbers(self, attempt: _Attempt, entering, nodes_before: int) -> None:
        """Python numbers the body keeps Python numbers (`s = s * 0.5`) still stand for them."""
        for i, v in attempt.outputs.items():
            if self.modes[i] == CARRIED and weak_type(self.spec.state[i]) is not None:
                if stays_python_number(v, entering[i], nodes_before):
                    self.python_numbers[i] = weak_type(self.spec.state[i])
                else:
                    self.python_numbers.pop(i, None)

    def _dtype_changes(self, attempt: _Attempt) -> dict:
        """A dtype the body changes: it may come from a Python number carried at its default dtype, in
        this loop or an enclosing one; else the variable takes both dtypes' promotion, as in a cond."""
        changed = {i: v for i, v in attempt.outputs.items() if dtype_changed(attempt.init[i], v)}
        if not changed:
            return {}
        probes = weak_probes(self.spec.state, self.modes)
        if probes:
            return probes
        if request_weak_numbers_first():
            return {}   # an enclosing loop is built again first (_body sees it pending)
        changes = {}
        for i, v in changed.items():
            mode = self.modes[i]
            if not (isinstance(mode, Carried) and mode.as_leaves):
                continue
            dtypes = joined_dtypes(attempt.init[i], v)
            if [leaf_dtype(x) for x in nest.flatten(attempt.init[i])] == dtypes:
                attempt.outputs[i] = cast_leaves(v, dtypes)
            else:
                warn_at_user_line(f"{self.spec.label(i)} is "
                                  f"{describe(attempt.init[i])} before {self.spec.where} and {describe(v)} "
                                  f"after an iteration; it is {', '.join(map(str, dtypes))} from the start")
                changes[i] = replace(mode, dtypes=tuple(dtypes))
        return changes

    # -- after the loop -------------------------------------------------------------------------
    def _final(self, attempt: _Attempt, outs: tuple):
        """(internal values, state values) from the loop's outputs."""
        final = self._full_state(attempt, outs[attempt.n_internal:])
        for i in attempt.carried:
            mode = self.modes[i]
            if isinstance(mode, Appended):
                # the kind of items the body's appends left (Python ints, floats): the loop variable was
                # made from the list as it entered
                final[i] = final[i].with_python_type(attempt.outputs[i].python_type)
                if not isinstance(self.spec.state[i], TensorList):
                    final[i] = stacked_list(final[i])
            if isinstance(mode, ReturnValue) and any(mode.weak):
                _mark_python_numbers(final[i], mode.weak)
            if i in attempt.rebound and isinstance(final[i], (Tensor, MutableArray)):
                final[i] = self._array_after(final[i], self.spec.state[i])
            if isinstance(mode, Carried):
                for p in mode.lists:
                    if not isinstance(value_at(self.spec.state[i], p.path), TensorList):  # outside its loops
                        final[i] = replace_at(final[i], p.path, stacked_list)
                for key in mode.added:
                    # a key the body adds is there after the loop; the run fails if the loop never assigned it
                    final[i] = replace_at(final[i], key.path, MaybeDefined.read)
        return outs[:len(self.spec.internal)], final


    def _array_after(self, value, before: MutableArray) -> MutableArray:
        """A variable that named a numpy array before the loop and one the body made names an array after
        it (writes into it and views of it are numpy's). It is the array from before only if the loop
        ran zero times, which the graph does not tell: a write that the array's other names could see
        is refused (arrays.SameWhen)."""
        array = value if isinstance(value, MutableArray) else MutableArray(value)
        link_on_path(array, before, None, self.spec.where)
        return array


def _mark_python_numbers(value, weak: tuple) -> None:
    """Marks the leaves of a return value that the body returned as Python numbers (`weak`, per leaf) as
    standing for them (leaves.weak_type): beside a float32 array they take its dtype, as in numpy."""
    leaves = nest.flatten(value)
    if len(leaves) != len(weak):
        return
    for leaf, is_number in zip(leaves, weak, strict=True):
        if is_number and isinstance(leaf, Tensor) and isinstance(leaf.dtype, np.dtype):
            kind = {"f": float, "i": int, "b": bool}.get(leaf.dtype.kind)
            if kind is not None:
                mark_weak_type(leaf, kind)


def _starting_mode(value, appended: bool, resized: bool) -> LoopMode:
    """A variable's mode before its first attempt: from its value, and what the converter saw the loop
    do to it (append to it, resize it)."""
    if resized and isinstance(value, list):
        return Resized()
    if appended and (isinstance(value, list) or list_builder(value) is not None):
        return Appended()
    mode = initial_mode(value)
    lists = tuple(builder_paths(value)) if mode == CARRIED else ()
    # lists built by earlier loops stay lists (TensorArrays) through this one
    return Carried(lists=lists) if lists else mode


def graph_loop(spec: LoopSpec):
    """(internal values, state values) after the graph loop `spec` describes."""
    return LoopTracer(spec).run()


__all__ = ["LoopSpec", "LoopTracer", "graph_loop", "Tensor"]
