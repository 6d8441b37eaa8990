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

import numpy as np

import graph
from graph.node import Tensor
from graph.ops import numpy_api, tensor_methods
from transpile.operators.array_aliases import refuse_if_shared
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
    """

    __slots__ = ("value", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, value):
        self.value = value if isinstance(value, np.ndarray) else graph.convert(value)
        state = trace_state()
        if state.tracing:
            state.writes.append((self, _CREATED))

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
        return isinstance(self.value, np.ndarray)

    @property
    def dtype(self):
        return self.value.dtype

    @property
    def shape(self):
        return self.value.shape

    @property
    def ndim(self):
        return self.value.ndim

    def __getattr__(self, name):
        # methods and attributes of the contents: numpy's (`a.sum()`, `a.T`) or the tensor's
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.value, name)

    def write(self, new) -> None:
        """Replaces the contents with `new` (of this array's dtype and shape), journaled."""
        state = trace_state()
        if state.tracing:
            state.writes.append((self, self.value))
        self.value = new

    def _changes_in_place(self, *operands) -> bool:
        """Whether a write of `operands` can change the numpy contents in place: known contents and
        values, outside graph branches and loops (where a write must be undone for the other path).
        In a Python loop, which may yet be rebuilt as a graph loop, the contents before are journaled."""
        if not self.is_known or _holds_graph_value(operands) or _staged():
            return False
        state = trace_state()
        if state.tracing and state.loops:
            state.writes.append((self, self.value.copy()))
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
        shape = tuple(self.shape) if self.shape is not None else None
        if result.shape != shape and shape is not None:
            if result.shape is not None and len(result.shape) > len(shape):
                raise ValueError(f"{what}: the result has shape {graph.shapes.format_shape(result.shape)}, which "
                                 f"does not fit the array's {graph.shapes.format_shape(shape)}")
            result = graph.broadcast_to(result, shape if None not in shape else graph.shape(self.tensor()))
        self.write(result)

    def __getitem__(self, key):
        if self.is_known and not _holds_graph_value(key):
            return self.value[key]
        return graph.getitem(self.tensor(), key)

    def __setitem__(self, key, value) -> None:
        if self._changes_in_place(key, value):
            self.value[key] = np.asarray(value) if isinstance(value, MutableArray) else value
        else:
            if _holds_graph_value(value) and graph.convert(value).dtype != self.dtype:
                value = graph.cast(graph.convert(value), self.dtype)  # numpy's item assignment casts
            self.write(graph.set_item(self.tensor(), key, value))

    def copy(self) -> "MutableArray":
        """`a.copy()`: a new array with the same contents."""
        return MutableArray(self.value.copy() if self.is_known else self.value)

    def __array__(self, dtype=None, copy=None):
        if self.is_known:
            return self.value if dtype is None else self.value.astype(dtype)
        return numpy_api.array(self.value, dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if not _holds_graph_value(inputs) and (out is None or not _holds_graph_value(out) and not _staged()):
            return getattr(ufunc, method)(*_contents(inputs), out=_contents(out), **kwargs) if out is not None \
                else getattr(ufunc, method)(*_contents(inputs), **kwargs)
        result = numpy_api.array_ufunc(None, ufunc, method, *inputs, **kwargs)
        if out is None:
            return result
        if len(out) != 1:
            raise TypeError(f"np.{ufunc.__name__} with several out= arrays is not supported on graph values")
        return write_into(out[0], result, f"np.{ufunc.__name__}(..., out=...)")

    def __array_function__(self, func, types, args, kwargs):
        out = kwargs.pop("out", None)
        if not _holds_graph_value((args, kwargs)) and (out is None or not _holds_graph_value(out) and not _staged()):
            if out is not None:
                kwargs["out"] = _contents(out)
            result = func(*_contents(args), **_contents(kwargs))
            return out if out is not None else new_array(func, result, args)
        result = numpy_api.array_function(None, func, types, args, kwargs)
        if out is not None:
            return write_into(out, result, f"np.{func.__name__}(..., out=...)")
        return new_array(func, result, args)

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
        return f"<MutableArray {self.value.dtype}{graph.shapes.format_shape(self.value.shape)} {self.value.name}>"

    __hash__ = object.__hash__


def _operator(name: str):
    graph_op = tensor_methods.OPERATORS[name]

    def method(self, *args):
        if self.is_known and not _holds_graph_value(args):
            return getattr(self.value, name)(*_contents(args))
        return graph_op(self.tensor(), *args)
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
                                 np.full, np.eye})


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


def set_array_item(target, key, value):
    """`target[key] = value` for a numpy array or MutableArray `target`; returns the array written.

    A numpy array that would receive a graph value (or a graph index), or that is written while a
    graph branch or loop body is traced (it must keep its contents on the other path), becomes a
    MutableArray holding a copy of its contents, with the item written; that is refused where other
    references to the numpy array would not see the write (array_aliases).
    """
    if isinstance(target, np.ndarray) and (_staged() or _holds_graph_value((key, value))):
        refuse_if_shared(target, "`{name}[...] = ...`")
        target = MutableArray(target.copy())
    target[key] = value
    return target


def _staged() -> bool:
    """Whether a graph branch or loop body is being traced."""
    return trace_state().tracing > 0 and graph.get_default_graph().context is not None


def _holds_graph_value(x) -> bool:
    if isinstance(x, (tuple, list)):
        return any(_holds_graph_value(v) for v in x)
    if isinstance(x, dict):
        return any(_holds_graph_value(v) for v in x.values())
    if isinstance(x, MutableArray):
        return not x.is_known
    return isinstance(x, Tensor) or hasattr(type(x), "_as_graph_tensor")


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
        if old is not _CREATED:
            array.value = old


def written_since(mark: int) -> list:
    """The arrays made before `mark` and written since, each once, in order of their first write."""
    seen, out = set(), []
    for array, old in trace_state().writes[mark:]:
        if id(array) not in seen:
            seen.add(id(array))
            if old is not _CREATED:
                out.append(array)
    return out
