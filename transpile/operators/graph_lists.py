"""Python lists whose length graph control flow changes (`GraphList`): `pop`, `insert`, `extend`,
`remove`, `del`, `clear` and `sort` in a graph loop's body or a graph branch.

A graph loop runs its body any number of times, so a list that the body shortens or grows other than by
appending (which a TensorArray does, data_structures.TensorList) has a length known only when the graph
runs. A GraphList holds its items stacked in one tensor of shape [n, *item shape], with n known when the
graph runs; each method computes the new stack as Python's method changes the list, and returns what
Python's returns. A graph loop or cond carries it as that one tensor (a composite). Its items are of one
dtype and shape; items that were Python numbers stay Python numbers (`python_type`: weak beside arrays,
and Python numbers again in the list the function returns).
"""
from __future__ import annotations

import numpy as np

import graph
from graph.node import Tensor
from transpile.operators.leaves import describe, is_tensor, is_weak, leaf_dtype, mark_weak_type, weak_type
from transpile.operators.staging import StagingError


class GraphList:
    """A Python list whose items are stacked in tensor `items` (see the module docstring).

    A list a graph loop built by appending is one after its loop, with the loop's TensorArray as its
    `builder` (data_structures.stacked_list): appending to it in a later loop continues that array. A
    change of the items made otherwise forgets the builder.
    """

    __slots__ = ("_items", "python_type", "guessed", "builder", "__weakref__")

    def __init__(self, items: Tensor, python_type: type | None = None, guessed: bool = False, builder=None):
        self._items = items
        self.python_type = python_type
        self.guessed = guessed  # an empty list whose items' dtype and shape the first item added tells
        self.builder = builder

    @property
    def items(self) -> Tensor:
        return self._items

    @items.setter
    def items(self, new: Tensor) -> None:
        self._items = new
        self.builder = None  # (the TensorArray it was stacked from no longer holds these items)

    @classmethod
    def from_list(cls, values, name: str, like: "ItemSpec | None" = None) -> "GraphList":
        """The GraphList of a Python list (an empty one takes its items' dtype and shape from `like`)."""
        if isinstance(values, GraphList):
            return values
        values = list(values)
        if not values:
            # until the first item added tells them, reads see Python ints: an index read back
            # (`a[stack[-1]]`) indexes, and a number computed from one takes the others' dtype as a weak scalar
            spec = like or ItemSpec(np.dtype(np.int64), (), int)
            return cls(graph.zeros((0, *spec.shape), spec.dtype), spec.python_type, guessed=like is None)
        kinds = {weak_type(v) for v in values}
        python_type = kinds.pop() if len(kinds) == 1 else None
        try:
            items = graph.stack([_item_tensor(v) for v in values])
        except Exception as e:
            raise StagingError(f"list '{name}' changes length in graph control flow, so its items must be "
                               f"numbers or arrays of one dtype and shape: {e}") from None
        if like is not None:  # what a graph loop learned the list holds after its iterations
            items = items if items.dtype == like.dtype else graph.cast(items, like.dtype)
            python_type = like.python_type
        return cls(items, python_type)

    # -- the composite protocol: graph conds and loops carry the stack -------------------------------
    def _flat_tensors(self):
        return [self.items]

    def _with_flat_tensors(self, tensors):
        builder = self.builder if tensors[0] is self._items else None
        return GraphList(tensors[0], self.python_type, self.guessed, builder)

    # -- numpy functions and ufuncs of the list: of its items, stacked (`np.mean(losses)`) -------------
    def __array_function__(self, func, types, args, kwargs):
        return func(*_items_of(args), **_items_of(kwargs))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return getattr(ufunc, method)(*_items_of(inputs), **_items_of(kwargs))

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a list built in graph control flow has its items only when the graph runs: numpy "
                        "functions of it are graph ops in converted code (np.stack(lst), np.mean(lst))")

    @property
    def spec(self) -> "ItemSpec":
        shape = self.items.shape
        return ItemSpec(self.items.dtype, None if shape is None else tuple(shape[1:]), self.python_type)

    # -- reading ---------------------------------------------------------------------------------
    def size(self) -> Tensor:
        """`len(lst)`, when the graph runs."""
        return graph.shape(self.items)[0]

    def _item(self, t: Tensor):
        if self.python_type is not None:
            mark_weak_type(t, self.python_type)
        return t

    def _index(self, k, clamp: bool = False):
        """A Python index `k` (negative from the end) as a non-negative position."""
        n = self.size()
        k = graph.convert(k) if is_tensor(k) else graph.constant(np.int64(k))
        k = graph.where(k < 0, n + k, k)
        return graph.minimum(graph.maximum(k, np.int64(0)), n) if clamp else k

    def __getitem__(self, k):
        if isinstance(k, slice):
            return GraphList(self.items[k], self.python_type)
        return self._item(graph.getitem(self.items, self._index(k)))

    def index(self, value):
        """`lst.index(value)`: the first position holding `value` (the run fails if none does)."""
        equal = self._equal(value)
        found = graph.assert_(graph.reduce_any(equal), "list.index(x): x not in list")
        with graph.control_dependencies([found]):
            return graph.argmax(equal, axis=0)

    def count(self, value):
        return graph.reduce_sum(graph.cast(self._equal(value), np.int64))

    def _equal(self, value):
        eq = graph.equal(self.items, graph.convert(value))
        rank = None if eq.shape is None else len(eq.shape)
        return eq if rank == 1 else graph.reduce_all(eq, axis=tuple(range(1, rank)) if rank else None)

    # -- changing it: each method replaces the stack, as Python's changes the list --------------------
    def append(self, value) -> None:
        item = self._fit(value)  # first: the first item of a guessed list sets its items' dtype
        self.items = graph.concat([self.items, graph.expand_dims(item, 0)], 0)

    def extend(self, values) -> None:
        if isinstance(values, GraphList):
            more = values.items
        elif isinstance(values, (list, tuple)):
            if not values:
                return
            more = graph.stack([self._fit(v) for v in values])  # (before self.items is read, as in append)
        else:
            more = graph.cast(graph.convert(values), self.items.dtype)
        self.items = graph.concat([self.items, more], 0)

    def __iadd__(self, values):
        self.extend(values)
        return self

    def __mul__(self, count):
        if not isinstance(count, int) or isinstance(count, bool):
            return NotImplemented
        return GraphList(graph.concat([self.items] * max(count, 0), 0) if count > 0 else self.items[:0],
                         self.python_type)

    __rmul__ = __mul__

    def __add__(self, values):
        out = self.copy()
        out.extend(values)
        return out

    def __radd__(self, values):
        out = GraphList.from_list(values, "list", self.spec)
        out.extend(self)
        return out

    def insert(self, k, value) -> None:
        k = self._index(k, clamp=True)
        self.items = graph.concat([self.items[:k], graph.expand_dims(self._fit(value), 0), self.items[k:]], 0)

    def pop(self, k=-1):
        """`lst.pop(k)`: the item, removed (the run fails on an empty list or an index out of range)."""
        position = self._index(k)
        inside = graph.logical_and(position >= 0, position < self.size())
        check = graph.assert_(inside, "pop from empty list" if k == -1 else "pop index out of range")
        with graph.control_dependencies([check]):
            item = graph.getitem(self.items, position)
        self._delete(position)
        return self._item(item)

    def remove(self, value) -> None:
        self._delete(self.index(value))

    def __delitem__(self, k) -> None:
        if isinstance(k, slice):
            if k.step not in (None, 1):
                raise StagingError("`del lst[a:b:step]` of a list whose length changes in graph control flow is "
                                   "not supported; rebuild the list instead")
            before = self.items[:k.start] if k.start is not None else self.items[:0]
            after = self.items[k.stop:] if k.stop is not None else self.items[:0]
            self.items = graph.concat([before, after], 0)
            return
        position = self._index(k)
        inside = graph.logical_and(position >= 0, position < self.size())
        check = graph.assert_(inside, "list assignment index out of range")
        with graph.control_dependencies([check]):
            self._delete(graph.identity(position))

    def _delete(self, position) -> None:
        self.items = graph.concat([self.items[:position], self.items[position + np.int64(1):]], 0)

    def __setitem__(self, k, value) -> None:
        if isinstance(k, slice):
            raise StagingError("slice assignment to a list whose length changes in graph control flow is not "
                               "supported")
        self.items = graph.set_item(self.items, self._index(k), self._fit(value))

    def clear(self) -> None:
        self.items = self.items[:0]

    def reverse(self) -> None:
        self.items = self.items[::-1]

    def sort(self, key=None, reverse: bool = False) -> None:
        if key is not None:
            raise StagingError("list.sort(key=...) of a list whose length changes in graph control flow is not "
                               "supported")
        self.items = np.sort(self.items, axis=0)
        if reverse:
            self.items = self.items[::-1]

    def copy(self) -> "GraphList":
        return GraphList(self._items, self.python_type, self.guessed, self.builder)

    def _fit(self, value) -> Tensor:
        """`value` as an item: of the list's dtype (a Python number takes it, as numpy's weak scalars)."""
        t = _item_tensor(value)
        if self.guessed:  # the first item tells the list's item dtype and shape
            self.guessed = False
            self.items = graph.expand_dims(t, 0)[:0]
            self.python_type = weak_type(value)
            return t
        if t.dtype != self.items.dtype:
            if not (is_weak(value) or weak_type(t) is not None) and \
                    np.result_type(t.dtype, self.items.dtype) != self.items.dtype:
                raise StagingError(f"{describe(value)} is added to a list of {self.items.dtype} items in graph "
                                   "control flow; its items keep one dtype there")
            t = graph.cast(t, self.items.dtype)
        if weak_type(value) is None:
            self.python_type = None
        return t

    # -- what Python-level code may not do with it ----------------------------------------------------
    def __len__(self):
        raise TypeError("len() of a list whose length changes in graph control flow is a graph tensor: converted "
                        "code computes it (ag.len); code that is not converted cannot")

    def __reversed__(self) -> "GraphList":
        """`reversed(lst)`: its items, last first, which a `for` loop iterates as a graph loop (builtins'
        reversed() would need len(), a graph tensor here)."""
        return GraphList(self.items[::-1], self.python_type)

    def __iter__(self):
        raise TypeError("a list whose length changes in graph control flow is iterated by a graph loop: iterate "
                        "it in converted code (a `for` loop over it)")

    def __repr__(self) -> str:
        return f"<GraphList of {describe(self.items)}>"


class ItemSpec:
    """The dtype and shape of a GraphList's items, and the Python number type they stand for (or None)."""

    __slots__ = ("dtype", "shape", "python_type")

    def __init__(self, dtype, shape, python_type):
        self.dtype, self.shape, self.python_type = dtype, shape, python_type

    def __eq__(self, other):
        return isinstance(other, ItemSpec) and str(self.dtype) == str(other.dtype) and self.shape == other.shape \
            and self.python_type is other.python_type

    __hash__ = None


def _items_of(x):
    """`x` with each GraphList in it replaced by its stacked items."""
    if isinstance(x, GraphList):
        return x.items
    if isinstance(x, (list, tuple)):
        return type(x)(_items_of(v) for v in x)
    if isinstance(x, dict):
        return {k: _items_of(v) for k, v in x.items()}
    return x


def _item_tensor(value) -> Tensor:
    if is_tensor(value):
        return graph.convert(value)
    dtype = leaf_dtype(value)
    return graph.constant(np.asarray(value, dtype=dtype))
