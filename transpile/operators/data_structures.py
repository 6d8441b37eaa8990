"""Lists appended to in graph loops (TensorArrays that behave like the lists), `list.append`
and item assignment."""
from __future__ import annotations

import numpy as np

import graph
from graph import nest
from graph.errors import GraphError
from graph.node import Tensor
from transpile.operators.arrays import MutableArray, set_array_item
from transpile.operators.carry import Appended, ElementInference, ElementProbe
from transpile.operators.graph_lists import GraphList
from transpile.operators.leaves import describe, is_tensor, is_weak, leaf_dtype, mark_weak_type, weak_type
from transpile.operators.staging import StagingError
from transpile.operators.trace_state import trace_state

NO_ITEMS = type("NoItems", (), {"__repr__": lambda self: "NO_ITEMS", "__slots__": ()})()


class TensorList:
    """A Python list appended to in a graph loop: a TensorArray that behaves like the list.

    `probe` is set while its loop is built to infer the element dtype (see ElementProbe).
    `python_type` is the Python number type (int, float, bool) of every item appended so far, if they
    all were Python numbers of one type (so that the list the function returns holds Python numbers),
    None if not, `NO_ITEMS` before any.
    """

    def __init__(self, array, probe: ElementProbe | None = None, python_type=NO_ITEMS):
        self.array = array
        self.probe = probe
        self.python_type = python_type

    @classmethod
    def from_list(cls, items, name: str = "list", dtype=None, probe: ElementProbe | None = None):
        ta = graph.TensorArray(dtype, name=name)
        for i, v in enumerate(items):
            ta = ta.write(i, v)
        return cls(ta, probe, _python_type(items))

    def _flat_tensors(self):
        return self.array._flat_tensors()

    def _with_flat_tensors(self, tensors):
        return TensorList(self.array._with_flat_tensors(tensors), self.probe, self.python_type)

    def append(self, value) -> "TensorList":
        if self.probe is not None and self.array.dtype is None and self.probe.depends_on_stand_ins(value):
            self.probe.appended.append(leaf_dtype(nest.flatten(value)[0]))
            return self
        kind = weak_type(value)
        python_type = kind if self.python_type is NO_ITEMS or self.python_type is kind else None
        return TensorList(self.array.write(self.array.size(), value), self.probe, python_type)

    def with_python_type(self, python_type) -> "TensorList":
        """The list with items of `python_type` (what a graph loop's appends left in it)."""
        return TensorList(self.array, self.probe, python_type)

    def size(self) -> Tensor:
        return self.array.size()

    def read(self, index) -> Tensor:
        """`lst[index]` for an index in range."""
        if self.array.dtype is None:
            return self._element_before_first_append()
        return self.array.read(index)

    def stack(self) -> Tensor:
        if self.array.dtype is None:
            return graph.expand_dims(self._element_before_first_append(), 0)
        if self.array.element_shape is None:
            # elements of a shape unknown while tracing (computed from the list's own elements): empty,
            # the list stacks as np.asarray([]) does
            return graph.cond(self.size() > 0, self.array.stack,
                              lambda: graph.zeros([0], self.array.dtype))
        return self.array.stack()

    def _element_before_first_append(self) -> Tensor:
        if self.probe is not None:
            # the guess stands for items of any dtype: weak, so that it gives way to what it meets, a Python
            # number included (`s + i` of an index i is the other dtype's, as with Python's items)
            t = self.probe.stand_in()
            mark_weak_type(t, int if t.dtype.kind in "iu" else float)
            return t
        for frame in reversed(trace_state().loops):
            index = frame.list_specs.get(id(self.array._spec))
            if index is not None:  # the graph loop carrying it learns the dtype from its appends
                frame.request({index: Appended(ElementInference())})
                return graph.placeholder(np.float64, None, name="element_before_first_append")
        raise StagingError(f"list '{self.array._spec.name}' is read before anything is appended to it, so the "
                           "dtype of its elements is unknown; append to it before reading it")

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.stack()[index]
        if is_weak(index) and index < 0 or is_tensor(index):
            index = graph.where(index < 0, self.size() + index, index) if is_tensor(index) else \
                self.size() + index
        return self.read(index)

    def __reversed__(self):
        # (its items so far are not known before the body's first append is traced: refused, not guessed)
        raise StagingError("reversed() of a list inside the graph loop that appends to it is not supported; "
                           "iterate its indices instead: `for k in range(len(lst) - 1, -1, -1): e = lst[k]`")

    def __repr__(self) -> str:
        return f"<TensorList {self.array!r}>"


def stacked_list(tl: TensorList):
    """The value a list built in a graph loop has outside its loops: a list (a GraphList of its items
    stacked) whose builder is `tl`, so that appending to it in a later graph loop continues the list."""
    if tl.array.dtype is None:
        return []  # nothing is ever appended to it: the list is empty whenever the graph runs
    python_type = None if tl.python_type is NO_ITEMS else tl.python_type
    return GraphList(tl.stack(), python_type, builder=tl)


def list_builder(value) -> TensorList | None:
    """The TensorList behind a list value (a TensorList, or a GraphList stacked from one), else None."""
    if isinstance(value, TensorList):
        return value
    if isinstance(value, GraphList):
        return value.builder
    return None


def list_truth(value):
    """`value` as a truth test sees it: `len(lst) > 0` (a tensor) for a list built in a graph loop, whose
    TensorArray would otherwise always be true; any other value as it is."""
    if isinstance(value, GraphList):
        return value.size() > 0
    builder = list_builder(value)
    return builder.size() > 0 if builder is not None else value


def array_of(value):
    """The TensorArray a value is or was built from, else None."""
    if isinstance(value, graph.TensorArray):
        return value
    builder = list_builder(value)
    return builder.array if builder is not None else None


def learn_elements(spec, dtype, element_shape, name: str) -> None:
    """Teaches a TensorArray's spec the dtype and shape of its elements, known from an array it meets."""
    spec.learn_element(dtype, element_shape, "merge", f"the elements of {name!r}")


def empty_array_like(array):
    """An empty array standing for `array` on a path where it is not built: they share their spec, so
    what is learned about the elements later holds for both."""
    return array.empty_like("placeholder")


def as_tensor_list(value, dtype, element_shape, name) -> TensorList:
    """A list (or a list built in a graph loop) as a TensorList of elements of `dtype` and `element_shape`."""
    builder = list_builder(value)
    if builder is not None:
        if builder.array.dtype is None and dtype is not None:
            # an array nothing was written to yet meets one that knows its elements: the merged list
            # may be either at run time, so both must know (e.g. to stack an empty one)
            learn_elements(builder.array._spec, dtype, element_shape, name)
        return builder
    ta = graph.TensorArray(dtype, element_shape=element_shape, name=name)
    for i, item in enumerate(value):
        ta = ta.write(i, item)
    return TensorList(ta, python_type=_python_type(value))


def _python_type(items):
    """The Python number type every item is of (NO_ITEMS for no items, None for any other)."""
    if not items:
        return NO_ITEMS
    kinds = {weak_type(v) for v in items}
    return kinds.pop() if len(kinds) == 1 else None


def share_element_specs(g) -> None:
    """TensorArrays whose handles meet (in a cond Merge, a loop) stand for one list: one that nothing
    was ever written to learns its element dtype and shape from the others, so that stacking it
    when it is the one that flows at run time gives an empty array of the right shape."""
    parent: dict[int, int] = {}

    def find(i):
        while parent.get(i, i) != i:
            parent[i] = parent.get(parent[i], parent[i])
            i = parent[i]
        return i

    variant = graph.dtypes.variant
    for node in g.nodes:
        for t in node.inputs:
            if t.dtype is variant and any(o.dtype is variant for o in node.outputs):
                parent[find(node.id)] = find(t.node.id)
    groups: dict[int, list] = {}
    for node in g.nodes:
        if node.op == "TensorArrayNew":
            groups.setdefault(find(node.id), []).append(node.attrs["spec"])
    for specs in groups.values():
        known = next((sp for sp in specs if sp.dtype is not None), None)
        if known is None:
            continue
        for sp in specs:
            if sp.dtype is None:
                learn_elements(sp, known.dtype, known.element_shape, known.name)  # sets its TensorArrayNew's dtype


def list_append(target, value):
    """`target.append(value)`; returns the list.

    A Python list carried by a graph loop becomes a TensorArray (stacked into a
    tensor after the loop).
    """
    builder = list_builder(target)
    if isinstance(target, GraphList) and builder is None:  # (a list resized in graph control flow)
        target.append(value)
        return target
    if builder is not None:
        try:
            grown = builder.append(value)
        except (TypeError, GraphError) as e:
            raise StagingError(f"cannot append {describe(value)} to a list built in a graph loop: {e}") from None
        return grown if isinstance(target, TensorList) else stacked_list(grown)
    if isinstance(target, list):
        frame = trace_state().innermost_loop()
        if frame is not None and id(target) in frame.lists:  # the graph loop carries it as a TensorList
            frame.request({frame.lists[id(target)]: Appended()})
    target.append(value)
    return target


def set_attribute_item(owner, name: str, key, value) -> None:
    """`owner.name[key] = value`: the attribute is set again only where the write made a new value (a
    tensor's), not where it changed the object in place (an array, a list, a view such as `a.T`)."""
    target = getattr(owner, name)
    written = set_item(target, key, value)
    if written is not target:
        setattr(owner, name, written)


def set_item(target, key, value, in_place=None):
    """`target[key] = value`; returns the target (a new tensor when the target is a tensor).

    A Variable's item is assigned (`target.assign_at(key, value)`). A numpy array that gets a
    graph value, or is written in a graph branch or loop body, becomes a MutableArray (see
    arrays.set_array_item). `in_place` names a target the function does not bind (a global or
    closure variable): it must change in place.
    """
    if getattr(target, "is_variable", False):
        target.assign_at(key, value)
        return target
    if isinstance(target, Tensor):
        if in_place is not None:
            raise StagingError(f"`{in_place}[...] = ...` cannot change graph tensor '{in_place}', which this "
                               "function does not define (graph tensors are immutable): return the new value "
                               f"(`{in_place} = graph.set_item({in_place}, i, v)` where it is defined), or keep "
                               "the state in a graph.Variable")
        return graph.set_item(target, key, value)
    if isinstance(target, TensorList):
        raise StagingError("cannot assign an item of a list built in a graph loop; build a new list instead")
    if isinstance(target, dict) and is_tensor(key):
        raise StagingError(f"a dict item is assigned with a graph-tensor key ({describe(key)}, e.g. the index of a "
                           "graph loop): the key's value, and so the item, would only exist when the graph runs. "
                           "Index an array instead (`xs = np.zeros((n, ...))`, then `xs[t] = ...`), append to a "
                           "list, or make the loop a Python loop (over a Python range)")
    if isinstance(target, (np.ndarray, MutableArray)):
        written = set_array_item(target, key, value)
        if written is not target and in_place is not None:
            raise StagingError(f"`{in_place}[...] = ...` writes a graph value (or, in a graph branch or loop, any "
                               f"value) into numpy array '{in_place}', which this function does not define, so "
                               "it cannot hold it: define the array in this function, or return the new value")
        return written
    target[key] = value
    return target
