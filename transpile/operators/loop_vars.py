"""How each variable a graph loop may carry enters it and comes back from its body: the loop
variable it becomes, and what tracing the body shows must change before the loop is built again."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import graph
from graph import nest
from graph.node import Tensor
from transpile.operators.arrays import MutableArray
from transpile.operators.data_structures import ElementProbe, TensorList, as_tensor_list, list_builder
from transpile.operators.encoding import (
    Spec,
    added_keys,
    insert_at,
    list_paths,
    replace_at,
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
    variable_label,
    weak_type,
)
from transpile.operators.staging import StagingError
from transpile.operators.values import MaybeDefined, PartiallyDefined, Undefined, UndefinedReturn

# A mode says how a variable is carried by a graph loop:
#   ("fixed",)                not carried: the body leaves it as it is
#   ("probe",)                not carried, traced once as a Python number to learn the dtype the body gives it
#   ("tensor", dtypes)        its leaves as tensors (of these dtypes; None: their own)
#   ("tensor", None, paths)   the same, with the lists at these paths (see encoding.list_paths) as TensorArrays
#   ("tensor", None, paths, added)   the same, with dict keys the body adds: (path, spec) each, MaybeDefined
#                             in the loop (its value is defined once the body has assigned it)
#   ("maybe", spec)           a MaybeDefined: first assigned in the body, undefined if the loop runs zero times
#   ("zeros", spec)           the return value, a placeholder of this spec until the body returns
#   ("sequence", spec)        a Python list the body resizes (pop, insert, ...), as a GraphList (of items of
#                             this ItemSpec, or None: its own, or a guess for an empty list)
#   ("accumulate",)           a Python list appended to in the body, as a TensorList
#   ("accumulate", inference) the same, for a list the body reads before its first append (ElementInference)


# The dtypes that reads of a list see, one attempt each, before its element dtype is known: the weakest
# integer and the weakest float, so that a value computed from them takes the dtype of whatever else
# it is computed from, as a value computed from an empty list's (absent) elements does in Python.
_ELEMENT_GUESSES = (np.dtype(np.int8), np.dtype(np.float16))


@dataclass(frozen=True)
class ElementInference:
    """The element dtype of a list that a graph loop reads before appending to it, inferred from the
    appends (the loop is built once per guess, then with the dtype found).

    Python's list holds what the first append gives it, and in the first iteration a read of the
    empty list contributes nothing to it. So: an append of a value that does not depend on the reads
    gives the dtype directly; when every append depends on them, each guess in `_ELEMENT_GUESSES`
    gives a dtype, and the smallest of those (the one the others promote from) is the list's.
    """

    guesses: tuple = _ELEMENT_GUESSES   # this attempt's guess first
    found: tuple = ()                   # the dtype appended under each earlier guess
    dtype: object = None                # the inferred dtype, once known

    def probe(self) -> ElementProbe | None:
        return None if self.dtype is not None else ElementProbe(self.guesses[0])

    def after(self, probe: ElementProbe, learned) -> "ElementInference":
        """What the next attempt does, after one whose appends taught the list `learned` (a dtype,
        or None) and recorded `probe.appended`."""
        if learned is not None:  # an append that does not depend on the reads
            return ElementInference(dtype=learned)
        if not probe.appended:  # nothing is appended: the reads never find an element; float64, as np.asarray([])
            return ElementInference(dtype=np.dtype(np.float64))
        found = self.found + (np.result_type(*probe.appended),)
        if len(self.guesses) > 1:
            return ElementInference(self.guesses[1:], found)
        return ElementInference(dtype=_smallest(found))

    def failed(self) -> "ElementInference":
        """The next attempt after one that failed under this guess."""
        if len(self.guesses) > 1:
            return ElementInference(self.guesses[1:], self.found)
        if self.found:
            return ElementInference(dtype=_smallest(self.found))
        return ElementInference((), self.found)  # no guess is left: the last failure is the error

    @property
    def exhausted(self) -> bool:
        return self.dtype is None and not self.guesses


def _smallest(dtypes):
    """The dtype that each of the others promotes from (else their common promotion)."""
    for d in dtypes:
        if all(np.result_type(d, other) == other for other in dtypes):
            return d
    return np.result_type(*dtypes)


def initial_mode(value) -> tuple:
    """The mode a variable starts with, from its value before the loop."""
    if isinstance(value, (UndefinedReturn, MutableArray)) or getattr(value, "is_variable", False):
        return ("fixed",)  # (an array's writes are carried as the arrays the body writes: loops.py)
    if isinstance(value, Undefined):
        return ("fixed",)
    if isinstance(value, (MaybeDefined, TensorList)) or is_composite(value):
        return ("tensor", None)
    if value is not None and is_convertible(value):
        return ("tensor", None)
    return ("fixed",)


def initial_value(value, mode, name, where):
    """The loop variable for a carried variable's value before the loop (`where` says which loop, for
    the error of a MaybeDefined read after it)."""
    kind = mode[0]
    if kind == "tensor":
        paths = mode[2] if len(mode) > 2 else ()
        for path, dtype, element_shape, _ in paths:  # lists the body turns into TensorArrays
            value = replace_at(value, path, lambda v: as_tensor_list(v, dtype, element_shape, name))
        for path, spec in (mode[3] if len(mode) > 3 else ()):  # dict keys the body adds
            label = item_label(name, path)
            value = insert_at(value, path, MaybeDefined(label, zeros_like_spec(spec, label), graph.constant(False),
                                                        where))
        if is_composite(value) and not isinstance(value, (list, tuple, dict)):
            return value
        dtypes = mode[1]
        leaves = nest.flatten(value)
        if dtypes is None or len(dtypes) != len(leaves):
            dtypes = [None] * len(leaves)
        return nest.pack_as(value, [convert_leaf(x, dt) for x, dt in zip(leaves, dtypes, strict=True)])
    if kind == "maybe":
        return MaybeDefined(name, zeros_like_spec(mode[1], f"variable '{name}'"), graph.constant(False), where)
    if kind == "zeros":
        return zeros_like_spec(mode[1], "the return value")
    if kind == "sequence":
        return GraphList.from_list(value, name, like=mode[1])
    if kind == "accumulate":
        inference = mode[1] if len(mode) > 1 else None
        if inference is None:
            return list_builder(value) or TensorList.from_list(value, name=name)
        return TensorList.from_list(value, name=name, dtype=inference.dtype, probe=inference.probe())
    raise AssertionError(kind)


def item_label(name: str, path) -> str:
    """How code names the item at `path` in variable `name`: `d['s']`."""
    return name + "".join(f"[{k!r}]" for k in path)


def body_output(v_in, v_out, mode, name, meta):
    """The body's new value of a carried variable, in the loop variable's form; or a change request.

    Returns (value, None), or (None, new mode) when the loop must be built
    again with the variable carried differently.
    """
    kind = mode[0]
    label = variable_label(name, meta)
    line = meta.get("line")
    at = f" (loop body at line {line})" if line else ""
    if kind == "probe":
        if v_out is v_in:
            return None, None
        if not (is_convertible(v_out) and is_numeric(v_out)):
            raise StagingError(f"{label} becomes {describe(v_out)} in the graph loop body{at}; a graph loop "
                               "can only carry tensors and numbers")
        return None, ("tensor", [leaf_dtype(v_out)])  # (a Python number's own: `c = 0` that becomes 0.125)
    if kind == "fixed":
        if v_out is v_in or same_leaves(v_out, v_in):
            return None, None
        if isinstance(v_in, Undefined):
            if isinstance(v_out, Undefined) and not isinstance(v_out, PartiallyDefined):
                return None, None
            if type(v_in) is UndefinedReturn and not isinstance(v_out, (Undefined, MaybeDefined)):
                return None, ("zeros", spec_of(v_out), tuple(is_weak(x) for x in nest.flatten(v_out)))
            like = v_out.like if isinstance(v_out, PartiallyDefined) else \
                (v_out.value if isinstance(v_out, MaybeDefined) else v_out)
            if not is_convertible(like):
                raise StagingError(f"{label} is first assigned {describe(like)} in a graph loop{at}; a "
                                   "graph loop can only carry tensors and numbers")
            return None, ("maybe", spec_of(like))
        if isinstance(v_in, list) and isinstance(v_out, list):
            return None, ("accumulate",)
        if (getattr(v_in, "is_variable", False) or isinstance(v_in, (MutableArray, str))) and is_numeric(v_out) \
                and is_convertible(v_out):
            # a name bound to a Variable or array, then to values computed from it; a str, then to a graph string
            return None, ("tensor", None)
        raise StagingError(f"{label} is {describe(v_in)} before the graph loop and changes in its body{at} "
                           f"(to {describe(v_out)}); a graph loop can only carry tensors and numbers (also in "
                           "tuples, lists and dicts)")
    if kind == "sequence":
        if isinstance(v_out, list):  # a new list each iteration
            v_out = GraphList.from_list(v_out, name, like=v_in.spec)
        if not isinstance(v_out, GraphList):
            raise StagingError(f"{label} is a list whose length the graph loop changes{at}; it must stay a list "
                               f"(it became {describe(v_out)})")
        if v_out.spec != v_in.spec and not v_out.guessed:
            # an empty list's first item tells its items' dtype and shape; an item that is not a Python
            # number makes them numpy's: the loop starts with what its iterations leave
            return None, ("sequence", v_out.spec)
        return v_out, None
    if kind == "accumulate" or isinstance(v_in, TensorList):
        builder = list_builder(v_out)
        if builder is not None:
            return builder, None
        if isinstance(v_out, list) and is_flat_numeric_list(v_out):  # a new list each iteration
            return as_tensor_list(v_out, v_in.array.dtype, v_in.array.element_shape, name), None
        if not isinstance(v_out, TensorList):
            raise StagingError(f"{label} is a list appended to in the graph loop{at}; it must stay a list "
                               f"(it became {describe(v_out)})")
        return v_out, None
    if kind == "maybe" or isinstance(v_in, MaybeDefined):
        if isinstance(v_out, MaybeDefined):
            return v_out, None
        if isinstance(v_out, Undefined):
            raise StagingError(f"{label} is deleted or undefined at the end of the graph loop body{at}")
        inner = v_in.value
        if not nest.same_structure(inner, v_out):
            raise StagingError(f"{label} is {describe(inner)} before the loop and {describe(v_out)} after "
                               f"one iteration{at}; a loop variable must keep its structure")
        dtypes = [t.dtype for t in nest.flatten(inner)]
        return MaybeDefined(name, cast_leaves(v_out, dtypes), graph.constant(True), v_in.where), None
    # a plain carried value
    if isinstance(v_out, Undefined):
        if isinstance(v_out, PartiallyDefined):
            raise v_out.error()
        raise StagingError(f"{label} is undefined at the end of the graph loop body{at}")
    if isinstance(v_out, MaybeDefined):
        raise StagingError(f"{label} may be undefined at the end of the graph loop body{at}")
    added = tuple(added_keys(v_in, v_out))
    if added:  # the body adds keys to a dict: they enter the loop undefined
        for path, v in added:
            if not is_convertible(v):
                raise StagingError(f"{item_label(name, path)} is first assigned {describe(v)} in a graph loop"
                                   f"{at}; a graph loop can only carry tensors and numbers")
        known = mode[2] if len(mode) > 2 else ()
        return None, ("tensor", None, known, (mode[3] if len(mode) > 3 else ()) + tuple(
            (path, spec_of(v.value if isinstance(v, MaybeDefined) else v)) for path, v in added))
    for path, _ in (mode[3] if len(mode) > 3 else ()):
        item, assigned = value_at(v_in, path), value_at(v_out, path)
        if not isinstance(assigned, MaybeDefined):  # assigned in this iteration
            dtypes = [t.dtype for t in nest.flatten(item.value)]
            v_out = replace_at(v_out, path, lambda v: MaybeDefined(item.name, cast_leaves(v, dtypes),
                                                                  graph.constant(True), item.where))
    paths = tuple(list_paths(v_in, v_out))
    if paths:
        # a list inside the variable became a TensorArray (a list built in a nested loop), or the other way
        grow = tuple(p for p in paths if not isinstance(value_at(v_in, p[0]), TensorList))
        if grow:
            known = mode[2] if len(mode) > 2 else ()
            return None, ("tensor", None, known + grow) + tuple(mode[3:])
        for path, dtype, element_shape, _ in paths:
            v_out = replace_at(v_out, path, lambda v: as_tensor_list(v, dtype, element_shape, name))
    if not nest.same_structure(v_in, v_out) or is_composite(v_in) != is_composite(v_out):
        raise StagingError(f"{label} is {describe(v_in)} before the loop and {describe(v_out)} after one "
                           f"iteration{at}; a loop variable must keep its structure (shapes may change)")
    if is_composite(v_in):
        return v_out, None
    in_leaves, out_leaves = nest.flatten(v_in), nest.flatten(v_out)
    new = []
    for a, b in zip(in_leaves, out_leaves, strict=True):
        if not is_numeric(b) or not is_convertible(b):
            raise StagingError(f"{label} becomes {describe(b)} in the graph loop body{at}; a graph loop can "
                               "only carry tensors and numbers")
        if is_weak(b) and isinstance(a, Tensor) and np.result_type(b, a.dtype) == a.dtype:
            b = convert_leaf(b, a.dtype)  # a Python number takes the loop variable's dtype, as with an array
        new.append(b)
    return nest.pack_as(v_out, new), None


def weak_probes(init_state, modes) -> dict:
    """The changes that trace the variables holding Python numbers as numbers, for those whose dtype
    the loop has not learned yet (carried at their default dtype so far)."""
    return {i: ("probe",) for i, (v0, mode) in enumerate(zip(init_state, modes, strict=True))
            if mode == ("tensor", None) and weak_type(v0) is not None}


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
    return ("tensor", [dtype])


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
        if mode[0] != "tensor" or len(mode) > 2 or i not in loop_vars or i not in outs or weak_type(v0) is None:
            continue
        before, after = loop_vars[i], outs[i]
        dtype = leaf_dtype(after)
        if not isinstance(before, Tensor) or dtype is None:
            continue
        if mode[1] is not None:  # learned by a probe, which followed one path: another may widen it
            if dtype != before.dtype:
                changes[i] = ("tensor", [np.result_type(before.dtype, dtype)])
        elif dtype != before.dtype or any(np.result_type(probed_value(v0), d) != np.result_type(before.dtype, d)
                                          for d in _computed_from(after, first_body_node)):
            changes[i] = ("probe",)
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
        if node.id < first_node and node.op != "Enter":
            return False
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


def joined_spec(spec, after, weak=()):
    """`spec` with each leaf's dtype joined with the body's (`weak`: which leaves of the spec came from
    Python numbers, which take the body's dtype as numpy's weak scalars do)."""
    weak = weak or (False,) * len(spec.leaves)
    leaves, values = [], []
    for (dtype, shape), v, b, w in zip(spec.leaves, nest.flatten(spec.structure), nest.flatten(after), weak,
                                       strict=True):
        other = leaf_dtype(b)
        if isinstance(other, np.dtype) and isinstance(dtype, np.dtype):
            joined = np.result_type(dtype.type(0).item() if w else dtype, other)
            if joined != dtype:  # the placeholder is made from the structure's leaves: one of the new dtype
                dtype, v = joined, np.zeros(tuple(0 if d is None else d for d in shape or ()), joined)
        leaves.append((dtype, shape))
        values.append(v)
    return Spec(nest.pack_as(spec.structure, values), leaves)


def dtype_changed(before, after) -> bool:
    """Whether a carried value comes back from the body with a leaf of another dtype."""
    for a, b in zip(nest.flatten(before), nest.flatten(after)):
        if isinstance(a, Tensor) and leaf_dtype(b) is not None and leaf_dtype(b) != a.dtype:
            return True
    return False
