"""How each variable a graph loop may carry enters it and comes back from its body: the loop
variable it becomes, and what tracing the body shows must change before the loop is built again."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

import graph
from graph import nest
from graph.node import Tensor
from transpile.operators.arrays import MutableArray
from transpile.operators.carry import (
    CARRIED,
    FIXED,
    PROBE,
    AddedKey,
    Appended,
    Carried,
    FirstAssigned,
    Fixed,
    LeafSpec,
    LoopMode,
    Probe,
    Resized,
    ReturnValue,
    Spec,
)
from transpile.operators.data_structures import TensorList, as_tensor_list, list_builder
from transpile.operators.encoding import (
    added_keys,
    as_graph_lists,
    insert_at,
    list_paths,
    replace_at,
    resized_paths,
    spec_of,
    value_at,
    zeros_like_spec,
)
from transpile.operators.graph_lists import GraphList
from transpile.operators.leaves import (
    cast_leaves,
    convert_leaf,
    describe,
    is_composite,
    is_convertible,
    is_flat_numeric_list,
    is_numeric,
    is_weak,
    leaf_dtype,
    same_leaves,
    weak_type,
)
from transpile.operators.staging import StagingError
from transpile.operators.values import MaybeDefined, PartiallyDefined, Undefined, UndefinedReturn


def initial_mode(value) -> LoopMode:
    """The mode a variable starts with, from its value before the loop."""
    if isinstance(value, (UndefinedReturn, MutableArray)) or getattr(value, "is_variable", False):
        return FIXED  # (an array's writes are carried as the arrays the body writes: carried_state.py)
    if isinstance(value, Undefined):
        return FIXED
    if isinstance(value, (MaybeDefined, TensorList)) or is_composite(value):
        return CARRIED
    if value is not None and is_convertible(value):
        return CARRIED
    return FIXED


def initial_value(value, mode: LoopMode, name: str, where: str):
    """The loop variable for a carried variable's value before the loop (`where` says which loop, for
    the error of a MaybeDefined read after it)."""
    match mode:
        case Carried():
            return _carried_value(value, mode, name, where)
        case FirstAssigned(spec=spec):
            return MaybeDefined(name, zeros_like_spec(spec, f"variable '{name}'"), graph.constant(False), where)
        case ReturnValue(spec=spec):
            return zeros_like_spec(spec, "the return value")
        case Resized(spec=spec):
            return GraphList.from_list(value, name, like=spec)
        case Appended(inference=None):
            return list_builder(value) or TensorList.from_list(value, name=name)
        case Appended(inference=inference):
            return TensorList.from_list(value, name=name, dtype=inference.dtype, probe=inference.probe())
    raise AssertionError(mode)


def _carried_value(value, mode: Carried, name: str, where: str):
    value = as_graph_lists(value, mode.resized, name)  # lists the body resizes
    for p in mode.lists:  # lists the body turns into TensorArrays
        value = replace_at(value, p.path, lambda v, p=p: as_tensor_list(v, p.dtype, p.element_shape, name))
    for key in mode.added:  # dict keys the body adds
        label = item_label(name, key.path)
        value = insert_at(value, key.path, MaybeDefined(label, zeros_like_spec(key.spec, label),
                                                        graph.constant(False), where))
    if is_composite(value) and not isinstance(value, (list, tuple, dict)):
        return value
    leaves = nest.flatten(value)
    dtypes = mode.dtypes if mode.dtypes is not None and len(mode.dtypes) == len(leaves) else [None] * len(leaves)
    return nest.pack_as(value, [convert_leaf(x, dt) for x, dt in zip(leaves, dtypes, strict=True)])


def item_label(name: str, path) -> str:
    """How code names the item at `path` in variable `name`: `d['s']`."""
    return name + "".join(f"[{k!r}]" for k in path)


@dataclass(frozen=True)
class BodyOutput:
    """What the body's value of a carried variable means for the loop: the loop variable's new value,
    or (`change` set) a new mode the loop must be built again with."""

    value: object = None
    change: LoopMode | None = None


_UNCHANGED = BodyOutput()


@dataclass(frozen=True)
class BodyWhere:
    """How errors name the variable and the loop body."""

    label: str
    line: int | None

    @property
    def at(self) -> str:
        return f" (loop body at line {self.line})" if self.line else ""


def body_output(v_in, v_out, mode: LoopMode, name: str, where: BodyWhere) -> BodyOutput:
    """The body's new value of a carried variable, in the loop variable's form; or a change of mode.

    `v_in` is its value as the iteration began, `v_out` as it ended."""
    match mode:
        case Probe():
            return _probe_output(v_in, v_out, where)
        case Fixed():
            return _fixed_output(v_in, v_out, where)
        case Resized():
            return _resized_output(v_in, v_out, name, where)
    if isinstance(mode, Appended) or isinstance(v_in, TensorList):
        return _appended_output(v_in, v_out, name, where)
    if isinstance(mode, FirstAssigned) or isinstance(v_in, MaybeDefined):
        return _first_assigned_output(v_in, v_out, name, where)
    return _carried_output(v_in, v_out, mode, name, where)


def _probe_output(v_in, v_out, where: BodyWhere) -> BodyOutput:
    if v_out is v_in:
        return _UNCHANGED
    if not (is_convertible(v_out) and is_numeric(v_out)):
        raise StagingError(f"{where.label} becomes {describe(v_out)} in the graph loop body{where.at}; a graph "
                           "loop can only carry tensors and numbers")
    return BodyOutput(change=Carried(dtypes=(leaf_dtype(v_out),)))  # (a Python number's own: `c = 0` that becomes 0.125)


def _fixed_output(v_in, v_out, where: BodyWhere) -> BodyOutput:
    if v_out is v_in or same_leaves(v_out, v_in):
        return _UNCHANGED
    if isinstance(v_in, Undefined):
        return _first_assignment(v_in, v_out, where)
    if isinstance(v_in, list) and isinstance(v_out, list):
        return BodyOutput(change=Appended())
    if (getattr(v_in, "is_variable", False) or isinstance(v_in, (MutableArray, str))) and is_numeric(v_out) \
            and is_convertible(v_out):
        # a name bound to a Variable or array, then to values computed from it; a str, then to a graph string
        return BodyOutput(change=CARRIED)
    raise StagingError(f"{where.label} is {describe(v_in)} before the graph loop and changes in its body"
                       f"{where.at} (to {describe(v_out)}); a graph loop can only carry tensors and numbers (also "
                       "in tuples, lists and dicts)")


def _first_assignment(v_in, v_out, where: BodyWhere) -> BodyOutput:
    """A variable undefined before the loop that the body assigns."""
    if isinstance(v_out, Undefined) and not isinstance(v_out, PartiallyDefined):
        return _UNCHANGED
    if type(v_in) is UndefinedReturn and not isinstance(v_out, (Undefined, MaybeDefined)):
        return BodyOutput(change=ReturnValue(spec_of(v_out), tuple(is_weak(x) for x in nest.flatten(v_out))))
    like = v_out.like if isinstance(v_out, PartiallyDefined) else \
        (v_out.value if isinstance(v_out, MaybeDefined) else v_out)
    if not is_convertible(like):
        raise StagingError(f"{where.label} is first assigned {describe(like)} in a graph loop{where.at}; a "
                           "graph loop can only carry tensors and numbers")
    return BodyOutput(change=FirstAssigned(spec_of(like)))


def _resized_output(v_in, v_out, name: str, where: BodyWhere) -> BodyOutput:
    if isinstance(v_out, list):  # a new list each iteration
        v_out = GraphList.from_list(v_out, name, like=v_in.spec)
    if not isinstance(v_out, GraphList):
        raise StagingError(f"{where.label} is a list whose length the graph loop changes{where.at}; it must "
                           f"stay a list (it became {describe(v_out)})")
    if (v_out.spec != v_in.spec or v_in.guessed) and not v_out.guessed:
        # an empty list's first item tells its items' dtype and shape; an item that is not a Python
        # number makes them numpy's: the loop starts with what its iterations leave. A guessed list
        # entering the body is empty in every iteration (its first item replaces its items), so once
        # the body adds one the loop is built again with a list that keeps what earlier iterations added,
        # also where the guess was right (an index appended: Python ints)
        return BodyOutput(change=Resized(v_out.spec))
    return BodyOutput(v_out)


def _appended_output(v_in, v_out, name: str, where: BodyWhere) -> BodyOutput:
    builder = list_builder(v_out)
    if builder is not None:
        return BodyOutput(builder)
    if isinstance(v_out, list) and is_flat_numeric_list(v_out):  # a new list each iteration
        return BodyOutput(as_tensor_list(v_out, v_in.array.dtype, v_in.array.element_shape, name))
    if not isinstance(v_out, TensorList):
        raise StagingError(f"{where.label} is a list appended to in the graph loop{where.at}; it must stay a "
                           f"list (it became {describe(v_out)})")
    return BodyOutput(v_out)


def _first_assigned_output(v_in, v_out, name: str, where: BodyWhere) -> BodyOutput:
    if isinstance(v_out, MaybeDefined):
        return BodyOutput(v_out)
    if isinstance(v_out, Undefined):
        raise StagingError(f"{where.label} is deleted or undefined at the end of the graph loop body{where.at}")
    inner = v_in.value
    if not nest.same_structure(inner, v_out):
        raise StagingError(f"{where.label} is {describe(inner)} before the loop and {describe(v_out)} after "
                           f"one iteration{where.at}; a loop variable must keep its structure")
    dtypes = [t.dtype for t in nest.flatten(inner)]
    return BodyOutput(MaybeDefined(name, cast_leaves(v_out, dtypes), graph.constant(True), v_in.where))


def _carried_output(v_in, v_out, mode: LoopMode, name: str, where: BodyWhere) -> BodyOutput:
    resized = tuple(resized_paths(v_in, v_out))
    if resized:  # lists inside it the body resizes (pop, insert): GraphLists from the start
        if isinstance(mode, ReturnValue):
            return BodyOutput(change=ReturnValue(spec_of(as_graph_lists(v_in, resized, name)), mode.weak))
        mode = mode if isinstance(mode, Carried) else CARRIED
        return BodyOutput(change=replace(mode, resized=mode.resized + resized))
    mode = mode if isinstance(mode, Carried) else CARRIED   # (a return value's placeholder is carried so)
    if isinstance(v_out, Undefined):
        if isinstance(v_out, PartiallyDefined):
            raise v_out.error()
        raise StagingError(f"{where.label} is undefined at the end of the graph loop body{where.at}")
    if isinstance(v_out, MaybeDefined):
        raise StagingError(f"{where.label} may be undefined at the end of the graph loop body{where.at}")
    added = _added_keys(v_in, v_out, mode, name, where)
    if added is not None:
        return added
    v_out = _assigned_keys(v_in, v_out, mode)
    paths = tuple(list_paths(v_in, v_out))
    if paths:
        # a list inside the variable became a TensorArray (a list built in a nested loop), or the other way
        grow = tuple(p for p in paths if not isinstance(value_at(v_in, p.path), TensorList))
        if grow:
            return BodyOutput(change=replace(mode, lists=mode.lists + grow))
        for p in paths:
            v_out = replace_at(v_out, p.path, lambda v, p=p: as_tensor_list(v, p.dtype, p.element_shape, name))
    if not nest.same_structure(v_in, v_out) or is_composite(v_in) != is_composite(v_out):
        raise StagingError(f"{where.label} is {describe(v_in)} before the loop and {describe(v_out)} after one "
                           f"iteration{where.at}; a loop variable must keep its structure (shapes may change)")
    if is_composite(v_in):
        return BodyOutput(v_out)
    return BodyOutput(nest.pack_as(v_out, [_carried_leaf(a, b, where) for a, b in
                                           zip(nest.flatten(v_in), nest.flatten(v_out), strict=True)]))


def _carried_leaf(before, after, where: BodyWhere):
    if not is_numeric(after) or not is_convertible(after):
        raise StagingError(f"{where.label} becomes {describe(after)} in the graph loop body{where.at}; a graph "
                           "loop can only carry tensors and numbers")
    if is_weak(after) and isinstance(before, Tensor) and np.result_type(after, before.dtype) == before.dtype:
        return convert_leaf(after, before.dtype)  # a Python number takes the loop variable's dtype, as with an array
    return after


def _added_keys(v_in, v_out, mode: Carried, name: str, where: BodyWhere) -> BodyOutput | None:
    """The change for dict keys the body adds (they enter the loop undefined), or None."""
    added = added_keys(v_in, v_out)
    if not added:
        return None
    for path, v in added.items():
        if not is_convertible(v):
            raise StagingError(f"{item_label(name, path)} is first assigned {describe(v)} in a graph loop"
                               f"{where.at}; a graph loop can only carry tensors and numbers")
    new = tuple(AddedKey(path, spec_of(v.value if isinstance(v, MaybeDefined) else v)) for path, v in added.items())
    return BodyOutput(change=replace(mode, added=mode.added + new))


def _assigned_keys(v_in, v_out, mode: Carried):
    """`v_out` with each key the body adds, where this iteration assigned it, as a defined MaybeDefined."""
    for key in mode.added:
        item, assigned = value_at(v_in, key.path), value_at(v_out, key.path)
        if not isinstance(assigned, MaybeDefined):  # assigned in this iteration
            dtypes = [t.dtype for t in nest.flatten(item.value)]
            v_out = replace_at(v_out, key.path, lambda v, item=item, dtypes=dtypes: MaybeDefined(
                item.name, cast_leaves(v, dtypes), graph.constant(True), item.where))
    return v_out


def weak_probes(init_state, modes) -> dict:
    """The changes that trace the variables holding Python numbers as numbers, for those whose dtype
    the loop has not learned yet (carried at their default dtype so far)."""
    return {i: PROBE for i, (v0, mode) in enumerate(zip(init_state, modes, strict=True))
            if mode == CARRIED and weak_type(v0) is not None}


def probed_value(v0):
    """What a probe traces a variable holding `v0` with: a Python number as it is; for a tensor that
    stands for one (leaves.weak_type), a Python number of its type (its value is unknown: the probe
    only learns a dtype, and the loop is built again, see `probe_of_a_stand_in`)."""
    return v0 if not isinstance(v0, Tensor) or weak_type(v0) is None else weak_type(v0)(1)


def probe_of_a_stand_in(v0, v_in, v_out):
    """The change for a probed variable whose value before the loop was tensor `v0` (traced as the Python
    number `v_in`) and which the body made `v_out`: carried at the dtype Python gives it (the body's
    value's, where it is an array's; with a Python number, still a Python number, `v0`'s)."""
    if v_out is v_in:
        dtype = v0.dtype
    elif is_weak(v_out):
        dtype = np.result_type(v0.dtype, leaf_dtype(v_out))
    else:
        dtype = leaf_dtype(v_out)
    return Carried(dtypes=(dtype,))


def weak_fixups(init_state, modes, loop_vars, outs, first_body_node: int) -> dict:
    """Loop variables that started as Python numbers and may need another dtype.

    Under numpy's rules a Python number is "weak": `0 + float32` is float32.
    Carried at its default dtype (int64, float64), such a variable can come
    back with another dtype, or keep one that Python would not give it (a
    float64 `s = 0.0` that the body adds float32 values to: a dtype its new
    value is computed from would win over the number). It is then traced once
    more as a plain Python number ("probe"), which gives the dtype Python would
    end up with; the loop starts it with that. `first_body_node` is the id of
    the body's first graph node.
    """
    changes = {}
    for i, (v0, mode) in enumerate(zip(init_state, modes, strict=True)):
        if not isinstance(mode, Carried) or not mode.as_leaves or i not in loop_vars or i not in outs \
                or weak_type(v0) is None:
            continue
        before, after = loop_vars[i], outs[i]
        dtype = leaf_dtype(after)
        if not isinstance(before, Tensor) or dtype is None:
            continue
        if mode.dtypes is not None:  # learned by a probe, which followed one path: another may widen it
            if dtype != before.dtype:
                changes[i] = Carried(dtypes=(np.result_type(before.dtype, dtype),))
        elif dtype != before.dtype or any(np.result_type(probed_value(v0), d) != np.result_type(before.dtype, d)
                                          for d in _computed_from(after, first_body_node)):
            changes[i] = PROBE
    return changes


def stays_python_number(value, loop_var, first_node: int) -> bool:
    """Whether a body's new value of a variable that holds a Python number is computed from that
    variable and Python numbers only (constants, and tensors that stand for Python numbers), so that in
    Python it is still a Python number: `s * 0.5`, `min(s, 1.0)`, in nested branches and loops too.
    Nodes from id `first_node` on are the body's; of those before it, the loop variable and constants."""
    if not isinstance(value, Tensor):
        return weak_type(value) is not None
    todo, seen = [value], set()
    while todo:
        t = todo.pop()
        if t is loop_var or weak_type(t) is not None or id(t) in seen:
            continue
        seen.add(id(t))
        node = t.node
        if node.op == "Const":
            continue
        if node.id < first_node and node.op not in ("Enter", "Switch"):
            return False  # (an Enter or a cond's Switch before the body passes a value on: what it passes decides)
        if node.op in ("Switch",):   # its predicate decides where the value goes, not what it is
            todo.append(node.inputs[0])
        elif node.op in ("LoopCond", "Placeholder") or not node.inputs:
            return False
        else:
            todo.extend(node.inputs)
    return True


def _computed_from(value, first_node: int) -> set:
    """The dtypes of the tensors, among graph nodes from id `first_node` on, that `value` is computed from."""
    todo = [value.node] if isinstance(value, Tensor) else []
    seen, dtypes = set(), set()
    while todo:
        node = todo.pop()
        if node.id < first_node or node.id in seen:
            continue
        seen.add(node.id)
        dtypes.update(t.dtype for t in node.outputs if isinstance(t.dtype, np.dtype))
        todo.extend(t.node for t in node.inputs)
    return dtypes


def joined_dtypes(before, after) -> list:
    """One dtype per leaf that both a carried value's leaves and the body's can take (numpy's promotion)."""
    return [np.result_type(a.dtype, leaf_dtype(b)) if isinstance(a, Tensor) and isinstance(a.dtype, np.dtype)
            and isinstance(leaf_dtype(b), np.dtype) else leaf_dtype(a)
            for a, b in zip(nest.flatten(before), nest.flatten(after), strict=True)]


def joined_spec(spec: Spec, after, weak=()) -> Spec:
    """`spec` with each leaf's dtype joined with the body's (`weak`: which leaves of the spec came from
    Python numbers, which take the body's dtype as numpy's weak scalars do)."""
    weak = weak or (False,) * len(spec.leaves)
    leaves, values = [], []
    for leaf, v, b, w in zip(spec.leaves, nest.flatten(spec.structure), nest.flatten(after), weak, strict=True):
        dtype, other = leaf.dtype, leaf_dtype(b)
        if isinstance(other, np.dtype) and isinstance(dtype, np.dtype):
            joined = np.result_type(dtype.type(0).item() if w else dtype, other)
            if joined != dtype:  # the placeholder is made from the structure's leaves: one of the new dtype
                dtype, v = joined, np.zeros(tuple(0 if d is None else d for d in leaf.shape or ()), joined)
        leaves.append(LeafSpec(dtype, leaf.shape))
        values.append(v)
    return Spec(nest.pack_as(spec.structure, values), tuple(leaves))


def dtype_changed(before, after) -> bool:
    """Whether a carried value comes back from the body with a leaf of another dtype."""
    for a, b in zip(nest.flatten(before), nest.flatten(after)):
        if isinstance(a, Tensor) and leaf_dtype(b) is not None and leaf_dtype(b) != a.dtype:
            return True
    return False
