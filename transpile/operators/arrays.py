"""numpy arrays whose contents are graph values (`MutableArray`), written in place as numpy arrays are,
and the journal of those writes that graph conds and loops read to carry them.

A numpy array is mutable and shared: after `a[i] = v`, `a += v` or
`np.clip(a, lo, hi, out=a)`, every name, list and object that refers to `a`
sees the new contents. A graph tensor never changes, so an array that may hold
a graph value is a `MutableArray`: one object whose contents (`value`, a numpy
array or a tensor) each write changes or replaces. Converted code gets one for

- a numpy array it reads from its globals, closures or objects while a
  `transpile.function` is traced (see transpile/captured_state.py),
- a new array made by a numpy constructor while a graph is traced (`np.zeros(n)`,
  `np.zeros_like(t)`, `np.copy(t)`, `np.array([t, u])`),
- any other numpy array a graph value is written into (`buf[i] = t`), or that
  is written inside a branch of a graph cond or the body of a graph loop.

Each write is recorded in the thread's journal (`TraceState.writes`), from
which graph conds and loops learn the arrays their branches and bodies write
(see carried_state.py), and which a rollback of the graph (a cond or loop
built again) undoes to its checkpoint.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import graph
from graph.node import Tensor
from graph.ops import numpy_api, tensor_methods
from transpile.operators.array_aliases import refuse_if_shared, variables_naming
from transpile.operators.array_views import (
    Index,
    Reshape,
    Transpose,
    holds_graph_value,
    indexes_one_element,
    is_basic_index,
    swapped_axes,
    transpose_axes,
)
from transpile.operators.staging import StagingError
from transpile.operators.trace_state import trace_state


class MutableArray:
    """A numpy array in converted code whose contents may become a graph value (see the module docstring).

    `value` is the contents: a numpy array while they are known when the graph
    is built (numpy functions and operators then compute with it as numpy
    does), a tensor once a graph value is written into it or it stands for an
    array the graph reads when it runs. Writes keep the array's dtype and
    shape, as numpy's do. A write of known values to known contents changes
    them in place; inside a graph branch or loop body, or of a graph value, a
    write replaces `value` with a new tensor.

    A view (`buf[0]`, `buf.reshape(3, 2)`, `buf.T`) is a MutableArray with a `base` and a `view`
    record (array_views.py): its contents are read from the base's, and its writes go into the
    base's, as numpy's views share their base's memory. Only arrays without a base (roots) hold
    contents of their own and are journaled.
    """

    __slots__ = ("_contents", "base", "view", "same_when", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, value):
        self._contents = value if isinstance(value, np.ndarray) else graph.convert(value)
        self.base = self.view = None
        self.same_when: tuple[SameWhen, ...] = ()  # the arrays this one is on some paths only (roots only)
        state = trace_state()
        if state.tracing:
            state.writes.append((self, _CREATED))

    @classmethod
    def view_of(cls, base: "MutableArray", view) -> "MutableArray":
        """A view of `base` (see array_views.py)."""
        array = cls.__new__(cls)
        array._contents, array.base, array.view, array.same_when = None, base, view, ()
        return array

    @property
    def value(self):
        if self.base is None:
            return self._contents
        return self.view.read(self.base.value)

    @value.setter
    def value(self, new) -> None:
        # (set by the journal's undo and by graph conds and loops carrying the contents: roots only)
        if self.base is None:
            self._contents = new
        else:
            self.base.value = self.view.put(self.base.value, new)

    @property
    def root(self) -> "MutableArray":
        """The array whose contents this one reads: itself, or the base of its views."""
        array = self
        while array.base is not None:
            array = array.base
        return array

    @property
    def _as_graph_tensor(self):
        # the graph library takes an array of known contents as the numpy array it is (a constant, a
        # Variable's initial value): it reads as a tensor only once its contents are a graph value
        if self.is_known:
            raise AttributeError("_as_graph_tensor")
        return self.tensor

    def tensor(self) -> Tensor:
        """The contents as a tensor."""
        return graph.convert(self.value)

    @property
    def is_known(self) -> bool:
        """Whether the contents are known when the graph is built (a numpy array)."""
        if self.base is None:
            return isinstance(self._contents, np.ndarray)
        return self.view.known and self.base.is_known

    @property
    def dtype(self):
        return self.value.dtype

    @property
    def static_shape(self):
        """The shape as far as it is known while the graph is built (None for unknown dims)."""
        return self.value.shape

    @property
    def shape(self):
        """`a.shape` as the program reads it: a dim unknown while the graph is built (relax_shapes) is a
        scalar tensor, its value when the graph runs."""
        shape = self.value.shape
        if shape is None:
            return graph.shape(self.tensor())
        if None not in shape:
            return tuple(shape)
        dynamic = graph.shape(self.tensor())
        return tuple(dynamic[i] if d is None else d for i, d in enumerate(shape))

    @property
    def ndim(self):
        return self.value.ndim

    @property
    def T(self):
        return self.transpose()

    def reshape(self, *shape, order: str = "C"):
        if order != "C":
            raise ValueError("converted code supports C-order reshape only")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return MutableArray.view_of(self, Reshape(_resolved_shape(self, shape)))

    def ravel(self, order: str = "C"):
        return self.reshape(-1, order=order)

    def squeeze(self, axis=None):
        shape = self.static_shape
        if shape is None or (axis is None and None in shape):
            return fresh(graph.squeeze(self.tensor(), axis))
        axes = range(len(shape)) if axis is None else [a % len(shape) for a in np.atleast_1d(axis)]
        squeezed = [i for i in axes if shape[i] == 1]
        return self.reshape(tuple(d for i, d in enumerate(shape) if i not in squeezed))

    def transpose(self, *axes):
        rank = _rank(self)
        if rank is None:
            return fresh(self.tensor().transpose(*axes))
        return MutableArray.view_of(self, Transpose(transpose_axes(rank, axes)))

    def swapaxes(self, a: int, b: int):
        rank = _rank(self)
        if rank is None:
            return fresh(np.swapaxes(self.tensor(), a, b))
        return MutableArray.view_of(self, Transpose(swapped_axes(rank, a, b)))

    def flatten(self, order: str = "C"):
        return self.reshape(-1, order=order).copy()

    def astype(self, dtype, copy: bool = True):
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        if self.is_known:
            return fresh(self.value.astype(dtype))
        return fresh(graph.cast(self.tensor(), dtype))

    def fill(self, value) -> None:
        """`a.fill(v)`: every element set to `v`, in place."""
        self[...] = value

    def __getattr__(self, name):
        # methods and attributes of the contents: numpy's (`a.sum()`, `a.size`) or the tensor's; an
        # array they make is a new array (numpy's methods that give views are defined above)
        if name.startswith("__"):
            raise AttributeError(name)
        attribute = getattr(self.value, name)
        if not callable(attribute):
            return attribute

        def method(*args, **kwargs):
            return fresh(attribute(*_contents(args), **_contents(kwargs)))
        return method

    def write(self, new) -> None:
        """Replaces the contents with `new` (of this array's dtype and shape), journaled."""
        if self.base is not None:
            self.base.write(self.view.put(self.base.value, new))
            return
        self._replace(new)
        for link in self.same_when:  # the arrays it is on some paths: their contents on those paths
            link.array._follow(self, link)

    def _replace(self, new) -> None:
        state = trace_state()
        if state.tracing:
            state.writes.append((self, self._contents))
        self._contents = new

    def _follow(self, written: "MutableArray", link: "SameWhen") -> None:
        # `written` is this array where `link.when` holds: there its new contents are this one's too
        if link.when is None:  # a path the graph does not tell: refused where Python code can see this array
            # the variables naming it (a name of the written array, held by a frame of converted code from
            # before the loop, is not another: the user's function has one variable of that name)
            written_names = set(variables_naming(written))
            others = [f"variable '{n}'" for n in variables_naming(self) if n not in written_names]
            if others:
                raise StagingError(
                    f"an array written here is, after {link.where}, the same numpy array as one that is also "
                    f"{'; '.join(others)} on some of the paths the graph may take only (a loop that ran zero "
                    "times, or a branch that did not bind a new array to the name), so the write may or may "
                    "not reach them. Copy before (`x = x.copy()`) so that the names never share an array, or "
                    "take the other reference after it")
            return
        mine, theirs = self.value, written.value
        if graph.convert(mine).dtype != graph.convert(theirs).dtype or _shape_of(mine) != _shape_of(theirs) \
                or None in (_shape_of(mine) or (None,)):
            raise StagingError(
                f"an array written here is, after {link.where}, the same numpy array as another variable's "
                "only when the graph takes one of its branches (one branch binds a new array to the name), "
                "and the two differ in dtype or shape, so the write cannot reach both as numpy's would. Copy "
                "before the `if` (`x = x.copy()`) so that the names never share an array, or bind the name in "
                "both branches")
        self._replace(graph.where(link.when, theirs, mine))

    def _changes_in_place(self, *operands) -> bool:
        """Whether a write of `operands` can change the numpy contents in place: known contents and
        values, outside graph branches and loops (where a write must be undone for the other path).
        In a Python loop, which may yet be rebuilt as a graph loop, the contents before are journaled."""
        if not self.is_known or holds_graph_value(operands) or _staged() or self.root.same_when:
            return False  # (an array shared on some paths only: its write is a graph value for the other)
        state = trace_state()
        if state.tracing and state.loops:
            root = self.root
            state.writes.append((root, root._contents.copy()))
        return True

    def assign(self, result, what: str) -> None:
        """`self[...] = result` for the result of an in-place operation (`what` names it in errors):
        numpy's same-kind casting to this array's dtype, and its shape."""
        result = graph.convert(result)
        if result.dtype != self.dtype:
            if not np.can_cast(result.dtype, self.dtype, "same_kind"):
                raise TypeError(f"{what}: cannot cast the result from {result.dtype} to the array's dtype "
                                f"{self.dtype} with casting rule 'same_kind' (as numpy)")
            result = graph.cast(result, self.dtype)
        shape = tuple(self.static_shape) if self.static_shape is not None else None
        if result.shape != shape and shape is not None:
            if result.shape is not None and len(result.shape) > len(shape):
                raise ValueError(f"{what}: the result has shape {graph.shapes.format_shape(result.shape)}, which "
                                 f"does not fit the array's {graph.shapes.format_shape(shape)}")
            result = graph.broadcast_to(result, shape if None not in shape else graph.shape(self.tensor()))
        self.write(result)

    def __getitem__(self, key):
        key = _contents(key)
        if is_basic_index(key) and not indexes_one_element(key, _rank(self)):
            return MutableArray.view_of(self, Index(key))
        if self.is_known and not holds_graph_value(key):
            return fresh(self.value[key])
        return fresh(graph.getitem(self.tensor(), key))

    def __setitem__(self, key, value) -> None:
        key = _contents(key)
        if self._changes_in_place(key, value):
            self.value[key] = np.asarray(value) if isinstance(value, MutableArray) else value
        else:
            if holds_graph_value(value) and graph.convert(value).dtype != self.dtype:
                value = graph.cast(graph.convert(value), self.dtype)  # numpy's item assignment casts
            self.write(Index(key).put(self.value, value))

    def copy(self) -> "MutableArray":
        """`a.copy()`: a new array with the same contents."""
        return MutableArray(self.value.copy() if self.is_known else self.value)

    def __array__(self, dtype=None, copy=None):
        if self.is_known:
            return self.value if dtype is None else self.value.astype(dtype)
        return numpy_api.array(self.value, dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        call = getattr(ufunc, method)
        known = not holds_graph_value(inputs)
        if out is None:
            return fresh(call(*_contents(inputs), **kwargs) if known
                         else numpy_api.array_ufunc(None, ufunc, method, *inputs, **kwargs))
        if len(out) != 1:
            raise TypeError(f"np.{ufunc.__name__} with several out= arrays is not supported on graph values")
        if known and _writes_in_place(out[0], inputs):
            call(*_contents(inputs), out=_contents(out), **kwargs)
            return out[0]
        result = call(*_contents(inputs), **kwargs) if known else \
            numpy_api.array_ufunc(None, ufunc, method, *inputs, **kwargs)
        return write_into(out[0], result, f"np.{ufunc.__name__}(..., out=...)")

    def __array_function__(self, func, types, args, kwargs):
        view = _view_function(func, args, kwargs)
        if view is not None:
            return view
        out = kwargs.pop("out", None)
        known = not holds_graph_value((args, kwargs))
        if out is None:
            result = func(*_contents(args), **_contents(kwargs)) if known else \
                numpy_api.array_function(None, func, types, args, kwargs)
            return fresh(new_array(func, result, args))
        if known and _writes_in_place(out, (args, kwargs)):
            func(*_contents(args), out=_contents(out), **_contents(kwargs))
            return out
        result = func(*_contents(args), **_contents(kwargs)) if known else \
            numpy_api.array_function(None, func, types, args, kwargs)
        return write_into(out, result, f"np.{func.__name__}(..., out=...)")

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self):
        return iter(self.value)

    def __bool__(self):
        return bool(self.value)

    def __index__(self):
        return self.value.__index__()

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def __repr__(self) -> str:
        if self.is_known:
            return f"<MutableArray {self.value!r}>"
        t = self.tensor()
        return f"<MutableArray {t.dtype}{graph.shapes.format_shape(t.shape)} {t.name}>"

    __hash__ = object.__hash__


def _rank(array: MutableArray):
    shape = array.static_shape
    return None if shape is None else len(shape)


def _resolved_shape(array: MutableArray, shape) -> tuple:
    """A reshape's shape with its -1 resolved where the size is known (so that a view's `put` can
    reshape back), else as given."""
    shape = tuple(_contents(shape))
    static = array.static_shape
    if static is None or None in static or holds_graph_value(shape) or -1 not in shape:
        return shape
    size, rest = int(np.prod(static)), int(-np.prod(shape))
    return tuple(size // rest if d == -1 and rest else d for d in shape)


def _writes_in_place(out, operands) -> bool:
    """Whether a numpy call with known `operands` can write its result into `out` in place."""
    if isinstance(out, MutableArray):
        return out._changes_in_place(operands)
    return isinstance(out, np.ndarray) and not _staged()


# numpy functions that give a view of their first argument, as the methods of the same name
_VIEW_FUNCTIONS = {np.reshape: "reshape", np.ravel: "ravel", np.squeeze: "squeeze", np.transpose: "transpose",
                   np.swapaxes: "swapaxes"}


def _view_function(func, args, kwargs):
    """`np.reshape(a, ...)` and the like on a MutableArray `a`: its view, else None."""
    method = _VIEW_FUNCTIONS.get(func)
    if method is None or not args or not isinstance(args[0], MutableArray):
        return None
    a, rest = args[0], args[1:]
    if method == "reshape":
        shape = rest[0] if rest else kwargs.get("newshape", kwargs.get("shape"))
        return a.reshape(shape)
    if method == "transpose":
        axes = rest[0] if rest else kwargs.get("axes")
        return a.transpose(*(() if axes is None else tuple(axes)))
    return getattr(a, method)(*rest, **kwargs)


def fresh(result):
    """A value an operation on arrays made, as converted code holds it: a new array of rank 1 or more is
    a MutableArray of its own (numpy's operations give new, writable arrays); scalars and other values
    are as they are. Outside a trace nothing changes."""
    if isinstance(result, MutableArray) or not trace_state().tracing:
        return result
    if isinstance(result, Tensor):
        if not isinstance(result.dtype, np.dtype) or result.shape == ():
            return result
        return MutableArray(result)
    if isinstance(result, np.ndarray) and result.ndim > 0 and result.dtype.kind in "biufc":
        return MutableArray(result)
    if type(result) in (tuple, list):
        return type(result)(fresh(r) for r in result)
    return result


def _operator(name: str):
    graph_op = tensor_methods.OPERATORS[name]

    def method(self, *args):
        if self.is_known and not holds_graph_value(args):
            result = getattr(self.value, name)(*_contents(args))
        else:
            result = graph_op(self.tensor(), *args)
        return result if result is NotImplemented else fresh(result)
    method.__name__ = name
    return method


def _in_place(name: str, op: str):
    def method(self, other):
        if self._changes_in_place(other):
            getattr(self.value, name)(_contents(other))
        else:
            binary = tensor_methods.OPERATORS[name.replace("__i", "__", 1)]
            self.assign(binary(self.tensor(), other), f"`a {op}= b`")
        return self
    method.__name__ = name
    return method


for _name in tensor_methods.OPERATORS:
    if _name not in ("__getitem__", "__setitem__"):
        setattr(MutableArray, _name, _operator(_name))
for _name, _op in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("floordiv", "//"), ("mod", "%"),
                   ("pow", "**"), ("matmul", "@"), ("and", "&"), ("or", "|"), ("xor", "^")):
    setattr(MutableArray, f"__i{_name}__", _in_place(f"__i{_name}__", _op))

# numpy functions whose result is a new array of its own (not a view, nor a value computed for reading):
# in converted code it is a MutableArray, as numpy gives a new writable array
NEW_ARRAY_FUNCTIONS = frozenset({np.copy, np.zeros_like, np.ones_like, np.empty_like, np.full_like, np.array,
                                 np.asarray, np.asanyarray, np.ascontiguousarray, np.zeros, np.ones, np.empty,
                                 np.full, np.eye, np.identity, np.arange, np.linspace, np.logspace, np.geomspace,
                                 np.tri})


def new_array(func, result, args=()):
    """The result of numpy function `func` as converted code gets it: a MutableArray for a new array
    (`np.asarray(a)` of an array `a` is `a` itself)."""
    if func not in NEW_ARRAY_FUNCTIONS or not trace_state().tracing:
        return result
    if any(result is a for a in args) or isinstance(result, MutableArray):
        return result
    if isinstance(result, Tensor) or (isinstance(result, np.ndarray) and result.dtype.kind in "biufc"):
        return MutableArray(result)
    return result


def write_into(out, result, what: str):
    """`out[...] = result` for an out= argument; returns what the numpy call returns (the array written)."""
    if isinstance(out, MutableArray):
        out.assign(result, what)
        return out
    if isinstance(out, np.ndarray):
        # a numpy array cannot hold a graph value: the array written is a new MutableArray (`a += t`
        # rebinds `a` to it), refused where other references to the numpy array would keep its old contents
        refuse_if_shared(out, what)
        array = MutableArray(out.copy())
        array.assign(result, what)
        return array
    raise TypeError(f"{what}: out= must be an array, got {type(out).__name__}")


def frozen(value):
    """`value` with each MutableArray in it replaced by its contents now, as a tensor: what a graph cond's
    branch or loop's body hands out of the construct. Its arrays' contents are put back as they were
    before the construct once the branch or body is traced, so they must be read before that."""
    if isinstance(value, MutableArray):
        return value.tensor()
    if isinstance(value, (tuple, list)):
        items = [frozen(v) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)
    if isinstance(value, dict):
        items = {k: frozen(v) for k, v in value.items()}
        return value if all(items[k] is v for k, v in value.items()) else type(value)(items)
    if hasattr(value, "_flat_tensors") and any(isinstance(v, MutableArray) for v in value._flat_tensors()):
        return value._with_flat_tensors([frozen(v) for v in value._flat_tensors()])  # (a maybe-defined array)
    return value


def set_array_item(target, key, value):
    """`target[key] = value` for a numpy array or MutableArray `target`; returns the array written.

    A numpy array that would receive a graph value (or a graph index), or that is written while a
    graph branch or loop body is traced (it must keep its contents on the other path), becomes a
    MutableArray holding a copy of its contents, with the item written; that is refused where other
    references to the numpy array would not see the write (array_aliases).
    """
    if isinstance(target, np.ndarray) and (_staged() or holds_graph_value((key, value))):
        refuse_if_shared(target, "`{name}[...] = ...`")
        target = MutableArray(target.copy())
    target[key] = value
    return target


def _staged() -> bool:
    """Whether a graph branch or loop body is being traced."""
    return trace_state().tracing > 0 and graph.get_default_graph().context is not None


def _contents(x):
    """`x` with each MutableArray of known contents replaced by its numpy array."""
    if isinstance(x, MutableArray):
        return x.value
    if isinstance(x, tuple):
        return tuple(_contents(v) for v in x)
    if isinstance(x, list):
        return [_contents(v) for v in x]
    if isinstance(x, dict):
        return {k: _contents(v) for k, v in x.items()}
    return x


# --------------------------------------------------------------------------- arrays shared on some paths

@dataclass(frozen=True, slots=True)
class SameWhen:
    """`array` is the same numpy array as the one holding this record where the graph's boolean `when`
    holds. After a graph `if` whose one branch binds a new array to a name and whose other leaves the
    old one there, Python's other names of the old array (`alias = buf`) see the name's writes on that
    path only. `where` names the `if` for errors."""

    array: MutableArray
    when: Tensor | None  # None: the graph does not tell the path (a loop that may have run zero times)
    where: str


@dataclass(frozen=True, slots=True)
class _Unlinked:
    """The journal's entry for links made at that point: what `same_when` was before them."""

    before: tuple


def link_on_path(a: MutableArray, b: MutableArray, when: Tensor | None, where: str) -> None:
    """Records that `a` and `b` are one array where `when` holds (journaled, so a rollback forgets it):
    each write of either is then the other's on that path (`MutableArray.write`)."""
    state = trace_state()
    for x, y in ((a.root, b.root), (b.root, a.root)):
        if state.tracing:
            state.writes.append((x, _Unlinked(x.same_when)))
        x.same_when = (*x.same_when, SameWhen(y, when, where))


def _shape_of(value) -> tuple | None:
    shape = graph.convert(value).shape
    return tuple(shape) if shape is not None else None


# --------------------------------------------------------------------------- the journal

_CREATED = object()  # the journal's entry for an array made (not written) at that point


def journal_mark() -> int:
    """A position in this thread's journal of array writes (see `undo_writes`)."""
    return len(trace_state().writes)


def undo_writes(mark: int) -> None:
    """Gives every array written since `mark` back the contents it had then."""
    writes = trace_state().writes
    while len(writes) > mark:
        array, old = writes.pop()
        if isinstance(old, _Unlinked):
            array.same_when = old.before
        elif old is not _CREATED:
            array.value = old


def written_since(mark: int) -> list:
    """The arrays made before `mark` and written since, each once, in order of their first write."""
    seen, out = set(), []
    for array, old in trace_state().writes[mark:]:
        if id(array) not in seen:
            seen.add(id(array))
            if old is not _CREATED and not isinstance(old, _Unlinked):
                out.append(array)
    return out
