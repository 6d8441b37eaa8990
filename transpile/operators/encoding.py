"""What graph conds and loops share to carry the user's variables: the state tuples generated
functions take and return, specs and placeholders of values, and the lists that cross as TensorArrays.

A list's place inside a variable's value is a *path*: the keys and indices
that lead to it (`()` for the value itself).
"""
from __future__ import annotations

import numpy as np

import graph
from graph import nest
from graph.node import Tensor
from transpile.operators.arrays import frozen
from transpile.operators.data_structures import TensorList, empty_array_like, list_builder
from transpile.operators.graph_lists import GraphList
from transpile.operators.leaves import (
    is_composite,
    is_convertible,
    is_flat_numeric_list,
    is_numeric,
    is_tensor,
    leaf_dtype,
)
from transpile.operators.staging import StagingError
from transpile.operators.values import MaybeDefined

# --------------------------------------------------------------------------- state tuples

def unpack_outputs(out, names) -> tuple:
    """A generated function's return value as one value per state name."""
    if len(names) == 1:
        return (out,)
    if not names:
        return ()
    return tuple(out)


def pack_result(values, names):
    """State values as the converted statement assigns them: one value, or a tuple."""
    return values[0] if len(names) == 1 else tuple(values)


def fresh_containers(values) -> tuple:
    """New containers (lists, dicts, lists of graph values) for a state, so a branch's in-place changes
    stay its own."""
    return tuple(nest.map_structure(lambda x: x, v) if isinstance(v, (list, dict, tuple))
                 else v.copy() if isinstance(v, GraphList) else v for v in values)


# --------------------------------------------------------------------------- specs and placeholders

class Spec:
    """The structure, dtypes and shapes of a value (compared without touching its tensors)."""

    __slots__ = ("structure", "leaves")

    def __init__(self, structure, leaves):
        self.structure, self.leaves = structure, leaves

    def __eq__(self, other):
        return isinstance(other, Spec) and self.leaves == other.leaves and \
            nest.same_structure(self.structure, other.structure)

    __hash__ = None

    def __iter__(self):
        return iter((self.structure, self.leaves))


def spec_of(value) -> Spec:
    """(structure, [(dtype, shape)]) of a value, for placeholders of the same kind (its arrays' contents
    as they are now: the structure outlives the branch or body it is taken in)."""
    value = frozen(value)
    leaves = []
    for leaf in nest.flatten(value):
        if isinstance(leaf, Tensor):
            leaves.append((leaf.dtype, leaf.shape))
        elif getattr(leaf, "is_variable", False):
            leaves.append((np.dtype(leaf.dtype), tuple(leaf.shape)))
        elif is_tensor(leaf):
            t = graph.convert(leaf)
            leaves.append((t.dtype, t.shape))
        else:
            arr = np.asarray(leaf)
            leaves.append((arr.dtype, arr.shape))
    return Spec(value, leaves)


def zeros_like_spec(spec: Spec, what: str):
    """A placeholder with the spec's structure, dtypes and shapes: zeros, and empty arrays.

    It stands for a value on a path that does not define it (`what` names the
    value in errors).
    """
    return _placeholder(spec.structure, what)


def _placeholder(value, what: str):
    builder = list_builder(value)
    if builder is not None:  # a list a graph loop built: an empty list of the same elements
        return TensorList(empty_array_like(builder.array))
    if isinstance(value, graph.TensorArray):
        return empty_array_like(value)
    if isinstance(value, MaybeDefined):
        return MaybeDefined(value.name, _placeholder(value.value, what), graph.constant(False), value.where)
    if is_composite(value):
        raise StagingError(f"{what} holds a {type(value).__name__}, which has no placeholder value; give it a "
                           "value before the loop or branch")
    if isinstance(value, (list, tuple, dict)):
        return nest.pack_as(value, [_placeholder(v, what) for v in nest.flatten(value)]) \
            if not any(is_composite(v) for v in _children(value)) else _rebuild(value, what)
    if value is None:
        return None
    if not is_numeric(value):
        return value
    dtype = leaf_dtype(value)
    shape = value.shape if isinstance(value, Tensor) else np.shape(value)
    dims = () if shape is None else tuple(0 if d is None else d for d in shape)
    return graph.constant(np.zeros(dims, dtype))


def _children(value):
    return value.values() if isinstance(value, dict) else value


def _rebuild(value, what):
    if isinstance(value, dict):
        return type(value)((k, _placeholder(v, what)) for k, v in value.items())
    items = [_placeholder(v, what) for v in value]
    return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)


# --------------------------------------------------------------------------- lists that cross as TensorArrays

class ListSlot:
    """Stands for a list that leaves a cond as a TensorArray (for comparing branch structures)."""

    def _flat_tensors(self):
        return [LIST_HANDLE]

    def _with_flat_tensors(self, tensors):
        return self


LIST_HANDLE = object()  # the one leaf of a ListSlot


def list_paths(t, f, path=()):
    """(path, dtype, element_shape, stack after) of each list that must leave a cond (or a loop body,
    `t` its value before and `f` after) as a TensorArray."""
    tb, fb = list_builder(t), list_builder(f)
    if tb is not None or fb is not None:
        if isinstance(t, TensorList) and isinstance(f, TensorList):
            return
        if all(b is not None or (isinstance(v, list) and is_convertible(v)) for v, b in ((t, tb), (f, fb))):
            like = next((b.array for b in (tb, fb) if b is not None and b.array.dtype is not None), (tb or fb).array)
            yield path, like.dtype, like.element_shape, not (isinstance(t, TensorList) or isinstance(f, TensorList))
        return
    if isinstance(t, list) and isinstance(f, list) and len(t) != len(f) and is_flat_numeric_list(t) \
            and is_flat_numeric_list(f):
        # a Python list that grows in one branch only (e.g. in a loop run in Python there)
        first = (t or f)[0]
        shape = first.shape if isinstance(first, Tensor) else np.shape(first)
        yield path, leaf_dtype(first), shape, True
        return
    if isinstance(t, dict) and isinstance(f, dict) and set(t) == set(f):
        for k in t:
            yield from list_paths(t[k], f[k], path + (k,))
    elif isinstance(t, (list, tuple)) and type(t) is type(f) and len(t) == len(f):
        for i, (a, b) in enumerate(zip(t, f)):
            yield from list_paths(a, b, path + (i,))


def builder_paths(value, path=()):
    """Paths of the lists inside `value` that are stacked from a graph loop's TensorArray."""
    if isinstance(value, GraphList):
        builder = list_builder(value)
        if builder is not None:
            yield path, builder.array.dtype, builder.array.element_shape, True
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from builder_paths(v, path + (k,))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from builder_paths(v, path + (i,))


def replace_at(value, path, fn):
    """`value` with the item at `path` replaced by `fn(item)` (containers rebuilt, not changed)."""
    if not path:
        return fn(value)
    key, rest = path[0], path[1:]
    if isinstance(value, dict):
        return type(value)((k, replace_at(v, rest, fn) if k == key else v) for k, v in value.items())
    items = [replace_at(v, rest, fn) if i == key else v for i, v in enumerate(value)]
    return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)


def insert_at(value, path, item):
    """`value` with `item` at `path`, whose last key is a new dict key (containers rebuilt, not changed)."""
    if len(path) == 1:
        return type(value)({**value, path[0]: item})
    return replace_at(value, path[:1], lambda inner: insert_at(inner, path[1:], item))


def added_keys(before, after, path=()):
    """(path, value) of each dict key that `after` has and `before` lacks, in dicts at the same place
    in both (nested in dicts, lists and tuples)."""
    if isinstance(before, dict) and isinstance(after, dict) and set(before) <= set(after):
        for k, v in after.items():
            if k in before:
                yield from added_keys(before[k], v, path + (k,))
            else:
                yield path + (k,), v
    elif isinstance(before, (list, tuple)) and type(before) is type(after) and len(before) == len(after):
        for i, (a, b) in enumerate(zip(before, after)):
            yield from added_keys(a, b, path + (i,))


def value_at(value, path):
    """The item at `path` in `value`."""
    for key in path:
        value = value[key]
    return value


def stand_in(value, paths):
    """`value` with a ListSlot at each path (as `list_paths` gives them)."""
    for path, *_ in paths:
        value = replace_at(value, path, lambda v: ListSlot())
    return value
