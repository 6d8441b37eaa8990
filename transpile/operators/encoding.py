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
from graph.ops.strings import STRING
from transpile.operators.arrays import frozen
from transpile.operators.carry import LeafSpec, ListPath, ResizedPath, Spec
from transpile.operators.data_structures import TensorList, empty_array_like, list_builder
from transpile.operators.graph_lists import GraphList, ItemSpec
from transpile.operators.leaves import (
    convert_leaf,
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

def spec_of(value) -> Spec:
    """(structure, [(dtype, shape)]) of a value, for placeholders of the same kind (its arrays' contents
    as they are now: the structure outlives the branch or body it is taken in)."""
    value = frozen(value)
    return Spec(value, tuple(_leaf_spec(leaf) for leaf in nest.flatten(value)))


def _leaf_spec(leaf) -> LeafSpec:
    if isinstance(leaf, Tensor):
        return LeafSpec(leaf.dtype, leaf.shape)
    if getattr(leaf, "is_variable", False):
        return LeafSpec(np.dtype(leaf.dtype), tuple(leaf.shape))
    if is_tensor(leaf):
        t = graph.convert(leaf)
        return LeafSpec(t.dtype, t.shape)
    arr = np.asarray(leaf)
    return LeafSpec(arr.dtype, arr.shape)


def zeros_like_spec(spec: Spec, what: str, exact: bool = False):
    """A placeholder with the spec's structure, dtypes and shapes: zeros, and empty arrays.

    It stands for a value on a path that does not define it (`what` names the
    value in errors). A list a graph loop built is an empty TensorList of its
    items (what the defined path's list becomes in a cond), unless `exact`:
    then each GraphList stays one, for a placeholder that must have exactly
    the structure of a value already encoded.
    """
    return _placeholder(spec.structure, what, exact)


def _placeholder(value, what: str, exact: bool = False):
    if isinstance(value, GraphList) and (exact or value.builder is None):
        # an empty list of the same items (dims the graph does not know are 0 here, as for a tensor)
        spec = value.spec
        shape = () if spec.shape is None else tuple(0 if d is None else d for d in spec.shape)
        return GraphList.from_list([], what, like=ItemSpec(spec.dtype, shape, spec.python_type))
    builder = list_builder(value)
    if builder is not None:  # a list a graph loop built: an empty list of the same elements
        return TensorList(empty_array_like(builder.array))
    if isinstance(value, graph.TensorArray):
        return empty_array_like(value)
    if isinstance(value, MaybeDefined):
        return MaybeDefined(value.name, _placeholder(value.value, what, exact), graph.constant(False), value.where)
    if is_composite(value):
        raise StagingError(f"{what} holds a {type(value).__name__}, which has no placeholder value; give it a "
                           "value before the loop or branch")
    if isinstance(value, (list, tuple, dict)):
        return nest.pack_as(value, [_placeholder(v, what, exact) for v in nest.flatten(value)]) \
            if not any(is_composite(v) for v in _children(value)) else _rebuild(value, what, exact)
    if value is None:
        return None
    if not is_numeric(value):
        return value
    dtype = leaf_dtype(value)
    if dtype == STRING:  # a str, or a graph string: the empty text
        return convert_leaf("")
    shape = value.shape if isinstance(value, Tensor) else np.shape(value)
    dims = () if shape is None else tuple(0 if d is None else d for d in shape)
    return graph.constant(np.zeros(dims, dtype))


def _children(value):
    return value.values() if isinstance(value, dict) else value


def _rebuild(value, what, exact: bool):
    if isinstance(value, dict):
        return type(value)((k, _placeholder(v, what, exact)) for k, v in value.items())
    items = [_placeholder(v, what, exact) for v in value]
    return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)


def resized_paths(t, f, path=()):
    """ResizedPaths of the lists that one value holds resized (a GraphList without a builder: a graph loop
    resized it) and the other a Python list (one branch of a cond, or a loop variable before the loop), at any depth of the variable."""
    if isinstance(t, GraphList) != isinstance(f, GraphList):
        resized, other = (t, f) if isinstance(t, GraphList) else (f, t)
        if resized.builder is None and isinstance(other, list):  # (appended lists: list_paths)
            yield ResizedPath(path, resized.spec)
        return
    if isinstance(t, dict) and isinstance(f, dict) and t.keys() == f.keys():
        for k in t:
            yield from resized_paths(t[k], f[k], path + (k,))
    elif isinstance(t, (list, tuple)) and isinstance(f, (list, tuple)) and type(t) is type(f) \
            and len(t) == len(f):
        for k, (a, b) in enumerate(zip(t, f)):
            yield from resized_paths(a, b, path + (k,))


def with_graph_list(t, f, path: tuple):
    """`t` and `f` with the GraphList one of them has at `path` on both sides (for planning only)."""
    a, b = value_at(t, path), value_at(f, path)
    resized = a if isinstance(a, GraphList) else b
    return replace_at(t, path, lambda _: resized), replace_at(f, path, lambda _: resized)


def as_graph_lists(value, lists, name: str):
    """`value` with the Python lists at `lists` (ResizedPaths) made GraphLists of their items."""
    for p in lists:
        value = replace_at(value, p.path, lambda v, p=p: GraphList.from_list(v, name, like=p.items))
    return value


# --------------------------------------------------------------------------- lists that cross as TensorArrays

class ListSlot:
    """Stands for a list that leaves a cond as a TensorArray (for comparing branch structures)."""

    def _flat_tensors(self):
        return [LIST_HANDLE]

    def _with_flat_tensors(self, tensors):
        return self


LIST_HANDLE = object()  # the one leaf of a ListSlot


def list_paths(t, f, path=()):
    """A ListPath for each list that must leave a cond (or a loop body, `t` its value before and `f`
    after) as a TensorArray."""
    tb, fb = list_builder(t), list_builder(f)
    if tb is not None or fb is not None:
        if isinstance(t, TensorList) and isinstance(f, TensorList):
            return
        if all(b is not None or (isinstance(v, list) and is_convertible(v)) for v, b in ((t, tb), (f, fb))):
            like = next((b.array for b in (tb, fb) if b is not None and b.array.dtype is not None), (tb or fb).array)
            yield ListPath(path, like.dtype, like.element_shape,
                           not (isinstance(t, TensorList) or isinstance(f, TensorList)))
        return
    if isinstance(t, list) and isinstance(f, list) and len(t) != len(f) and is_flat_numeric_list(t) \
            and is_flat_numeric_list(f):
        # a Python list that grows in one branch only (e.g. in a loop run in Python there)
        first = (t or f)[0]
        shape = first.shape if isinstance(first, Tensor) else np.shape(first)
        yield ListPath(path, leaf_dtype(first), shape, True)
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
            yield ListPath(path, builder.array.dtype, builder.array.element_shape, True)
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


def added_keys(before, after, path=()) -> dict:
    """{path: value} of each dict key that `after` has and `before` lacks, in dicts at the same place
    in both (nested in dicts, lists and tuples)."""
    found: dict = {}
    if isinstance(before, dict) and isinstance(after, dict) and set(before) <= set(after):
        for k, v in after.items():
            if k in before:
                found.update(added_keys(before[k], v, path + (k,)))
            else:
                found[path + (k,)] = v
    elif isinstance(before, (list, tuple)) and type(before) is type(after) and len(before) == len(after):
        for i, (a, b) in enumerate(zip(before, after)):
            found.update(added_keys(a, b, path + (i,)))
    return found


def value_at(value, path):
    """The item at `path` in `value`."""
    for key in path:
        value = value[key]
    return value


def stand_in(value, paths):
    """`value` with a ListSlot at each ListPath's place."""
    for p in paths:
        value = replace_at(value, p.path, lambda v: ListSlot())
    return value
