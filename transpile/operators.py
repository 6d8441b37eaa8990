"""Runtime helpers that converted code calls (as `ag.<name>`): control flow, logic, lists, builtins.

Each helper's docstring gives its meaning as the plain Python it replaces. With
Python values a helper runs exactly that Python; when a condition or an
iterable is a graph tensor it builds graph control flow instead (graph.cond,
graph.while_loop), so that the decision is made when the graph runs.

Sections: values (maybe-defined values, lists built in graph loops,
placeholders), conditionals (if_stmt, if_exp, and_, or_, not_), loops
(while_stmt, for_stmt), variables, lists, statements (assert, print), calls,
builtins. It is one module because the layering keeps every graph-touching
part of transpile/ here and in api.py.
"""
from __future__ import annotations

import builtins as _py
import dis
import sys
import threading
import types
import warnings
import weakref

import numpy as np

import graph
from graph import nest
from graph.core import Tensor
from graph.errors import GraphError, SourceLocation, user_location
from transpile import conversion
from transpile.values import ConditionallyDefinedError, PartiallyDefined, Undefined, UndefinedReturn, \
    one_sided_message

_MAX_ATTEMPTS = 12  # rebuilds of one cond/loop while learning dtypes, placeholders, accumulators
_tls = threading.local()


def _loop_frames() -> list:
    frames = getattr(_tls, "loops", None)
    if frames is None:
        frames = _tls.loops = []
    return frames


class _Retry(BaseException):
    """Rebuild one cond or loop with adjusted inputs (never seen by user code)."""

    def __init__(self, token, changes: dict):
        super().__init__("internal: rebuild a graph construct")
        self.token = token
        self.changes = changes


class StagingError(GraphError):
    """Converted code asked for something graph control flow cannot express."""


# --------------------------------------------------------------------------- values

def is_tensor(x) -> bool:
    """A graph tensor, or something that reads as one (a Variable)."""
    return isinstance(x, Tensor) or hasattr(type(x), "_as_graph_tensor")


def _is_composite(x) -> bool:
    return hasattr(x, "_flat_tensors") and hasattr(x, "_with_flat_tensors")


def _has_graph_values(x) -> bool:
    return any(is_tensor(v) or _is_composite(v) for v in nest.flatten(x)) or _is_composite(x)


def _is_weak(x) -> bool:
    return type(x) in (bool, int, float)


class MaybeDefined:
    """A graph value that exists only if `defined` holds when the graph runs.

    The value of a variable first assigned inside a graph loop (which may run
    zero times). Reading it (`ag.ld`) adds a run-time check.
    """

    def __init__(self, name: str, value, defined: Tensor, where: str):
        self.name = name
        self.value = value
        self.defined = defined
        self.where = where

    def _flat_tensors(self):
        return nest.flatten(self.value) + [self.defined]

    def _with_flat_tensors(self, tensors):
        return MaybeDefined(self.name, nest.pack_as(self.value, tensors[:-1]), tensors[-1], self.where)

    def read(self):
        loc = user_location()
        at = f" at {loc}" if loc else ""
        check = graph.assert_(self.defined, f"variable '{self.name}' is used{at} but was never assigned: "
                                            f"{self.where}")
        with graph.control_dependencies([check]):
            return nest.map_structure(lambda t: graph.identity(t) if isinstance(t, Tensor) else t, self.value)

    def __repr__(self) -> str:
        return f"<maybe-defined {self.name}>"


class TensorList:
    """A Python list appended to in a graph loop: a TensorArray that behaves like the list."""

    def __init__(self, array):
        self.array = array

    @classmethod
    def from_list(cls, items, name: str = "list"):
        ta = graph.TensorArray(name=name)
        for i, v in enumerate(items):
            ta = ta.write(i, v)
        return cls(ta)

    def _flat_tensors(self):
        return self.array._flat_tensors()

    def _with_flat_tensors(self, tensors):
        return TensorList(self.array._with_flat_tensors(tensors))

    def append(self, value) -> "TensorList":
        return TensorList(self.array.write(self.array.size(), value))

    def size(self) -> Tensor:
        return self.array.size()

    def stack(self) -> Tensor:
        return self.array.stack()

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.stack()[index]
        if _is_weak(index) and index < 0 or is_tensor(index):
            index = graph.where(index < 0, self.size() + index, index) if is_tensor(index) else \
                self.size() + index
        return self.array.read(index)

    def __repr__(self) -> str:
        return f"<TensorList {self.array!r}>"


class _Spec:
    """The structure, dtypes and shapes of a value (compared without touching its tensors)."""

    __slots__ = ("structure", "leaves")

    def __init__(self, structure, leaves):
        self.structure, self.leaves = structure, leaves

    def __eq__(self, other):
        return isinstance(other, _Spec) and self.leaves == other.leaves and \
            nest.same_structure(self.structure, other.structure)

    __hash__ = None

    def __iter__(self):
        return iter((self.structure, self.leaves))


# A list a graph loop built is a stacked tensor after the loop; appending to it again continues the list.
# (keyed by id: tensors compare elementwise, so they cannot be dict keys by value)
_stacked_lists: dict[int, tuple] = {}


def _stacked(tl: "TensorList"):
    if tl.array.dtype is None:
        return []  # nothing is ever appended to it: the list is empty whenever the graph runs
    t = tl.stack()
    key = id(t)
    _stacked_lists[key] = (weakref.ref(t, lambda _: _stacked_lists.pop(key, None)), tl)
    return t


def _as_list_builder(value):
    """The TensorList behind a list value (a TensorList, or a tensor stacked from one), else None."""
    if isinstance(value, TensorList):
        return value
    if isinstance(value, Tensor):
        entry = _stacked_lists.get(id(value))
        if entry is not None and entry[0]() is value:
            return entry[1]
    return None


def _spec(value) -> _Spec:
    """(structure, [(dtype, shape)]) of a value, for placeholders of the same kind."""
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
    return _Spec(value, leaves)


def _zeros_like_spec(spec, what: str):
    """A placeholder with the spec's structure, dtypes and shapes: zeros, and empty arrays."""
    return _placeholder(spec.structure, what)


def _placeholder(value, what: str):
    builder = _as_list_builder(value)
    if builder is not None:  # a list a graph loop built: an empty list of the same elements
        return TensorList(_empty_like(builder.array))
    if isinstance(value, graph.TensorArray):
        return _empty_like(value)
    if isinstance(value, MaybeDefined):
        return MaybeDefined(value.name, _placeholder(value.value, what), graph.constant(False), value.where)
    if _is_composite(value):
        raise StagingError(f"{what} holds a {type(value).__name__}, which has no placeholder value; give it a "
                           "value before the loop or branch")
    if isinstance(value, (list, tuple, dict)):
        return nest.pack_as(value, [_placeholder(v, what) for v in nest.flatten(value)]) \
            if not any(_is_composite(v) for v in _children(value)) else _rebuild(value, what)
    if value is None:
        return None
    if not _numeric(value):
        return value
    dtype = _leaf_dtype(value)
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


def _empty_like(array):
    """An empty array standing for `array` on a path where it is not built: they share their spec, so
    what is learned about the elements later holds for both."""
    ta = graph.TensorArray(array.dtype, element_shape=array.element_shape, name="placeholder")
    ta._spec = array._spec
    ta.handle.node.attrs["spec"] = array._spec
    return ta


def _array_of(value):
    if isinstance(value, graph.TensorArray):
        return value
    builder = _as_list_builder(value)
    return builder.array if builder is not None else None


def _unify_arrays(t, f) -> None:
    """Arrays that meet in a cond output teach each other their element dtype and shape (an array
    nothing was written to yet learns them from the other, so that either works at run time)."""
    a, b = _array_of(t), _array_of(f)
    if a is not None and b is not None:
        for dst, src in ((a, b), (b, a)):
            if dst._spec.dtype is None and src._spec.dtype is not None:
                dst._spec.learn(_ElementLike(src._spec.dtype, src._spec.element_shape, src._spec.name), "merge")
        return
    if isinstance(t, MaybeDefined) or isinstance(f, MaybeDefined):
        _unify_arrays(t.value if isinstance(t, MaybeDefined) else t, f.value if isinstance(f, MaybeDefined) else f)
    elif isinstance(t, dict) and isinstance(f, dict):
        for k in set(t) & set(f):
            _unify_arrays(t[k], f[k])
    elif isinstance(t, (list, tuple)) and isinstance(f, (list, tuple)) and len(t) == len(f):
        for x, y in zip(t, f):
            _unify_arrays(x, y)


def _convert_leaf(v, dtype=None):
    if isinstance(v, Tensor):
        return v if dtype is None or v.dtype == dtype else graph.cast(v, dtype)
    if is_tensor(v):
        t = graph.convert(v)
        return t if dtype is None or t.dtype == dtype else graph.cast(t, dtype)
    if v is None:
        return None
    arr = np.asarray(v) if dtype is None else np.asarray(v, dtype=dtype)
    if arr.dtype == object or arr.dtype.kind not in "biufc":
        raise TypeError(type(v).__name__)
    if dtype is None and _is_weak(v):
        arr = np.asarray(v, dtype=graph.dtypes.dtype_of_python_scalar(v))
    return graph.constant(arr)


def _leaf_dtype(v):
    if isinstance(v, Tensor):
        return v.dtype
    if getattr(v, "is_variable", False):
        return np.dtype(v.dtype)
    if is_tensor(v):
        return graph.convert(v).dtype
    if _is_weak(v):
        return graph.dtypes.dtype_of_python_scalar(v)
    if v is None:
        return None
    return np.asarray(v).dtype


def _convertible(v) -> bool:
    for leaf in nest.flatten(v):
        if leaf is None or is_tensor(leaf) or isinstance(leaf, Tensor):
            continue
        if isinstance(leaf, (bool, int, float, complex, np.generic, np.ndarray)):
            if np.asarray(leaf).dtype.kind in "biufc":
                continue
        return False
    return True


def _fresh(values):
    """New containers (lists, dicts) for a state, so a branch's in-place changes stay its own."""
    return tuple(nest.map_structure(lambda x: x, v) if isinstance(v, (list, dict, tuple)) else v
                 for v in values)


def _same_leaves(a, b) -> bool:
    if a is b:
        return True
    if not isinstance(a, (list, tuple, dict)) or not nest.same_structure(a, b):
        return False
    return all(x is y for x, y in zip(nest.flatten(a), nest.flatten(b), strict=True))


def _outputs(out, names) -> tuple:
    if len(names) == 1:
        return (out,)
    if not names:
        return ()
    return tuple(out)


def _result(values, names):
    return values[0] if len(names) == 1 else tuple(values)


def _describe(v) -> str:
    if isinstance(v, Tensor):
        return f"a {v.dtype}{graph.shapes.format_shape(v.shape)} tensor"
    if isinstance(v, (list, tuple, dict)):
        return f"{type(v).__name__} {nest.structure_description(v)}"
    if v is None:
        return "None"
    return f"a {type(v).__name__}"


def _var_label(name, meta) -> str:
    if name in meta.get("return_vars", ()):
        return "the return value"
    if name.startswith("<"):  # the value of an expression, e.g. "<the conditional expression>"
        return name[1:-1]
    return f"variable '{name}'"


def _predicate(value, what: str) -> Tensor:
    """A scalar bool tensor for Python's truth value of a tensor."""
    t = graph.convert(value)
    if t.shape is not None and len(t.shape) > 0:
        if all(d == 1 for d in t.shape):
            t = graph.reshape(t, ())
        else:
            raise StagingError(
                f"the condition of {what} is a tensor of shape {graph.shapes.format_shape(t.shape)}; as with "
                "numpy arrays, the truth value of more than one element is ambiguous. Use np.any(...) or "
                "np.all(...)")
    if t.dtype != np.bool_:
        t = graph.not_equal(t, graph.constant(np.zeros((), t.dtype)))
    return t


# --------------------------------------------------------------------------- conditionals

class _Raised:
    """A branch that raised a Python exception while being traced (a `raise` statement)."""

    def __init__(self, exc: BaseException, location: SourceLocation | None):
        self.exc = exc
        self.location = location


def _user_raise_location(exc: BaseException) -> SourceLocation | None:
    """Where a `raise` statement in converted code raised `exc`, or None for any other error."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None or not conversion.is_converted_code(last.tb_frame.f_code):
        return None
    code = last.tb_frame.f_code
    op = code.co_code[last.tb_lasti] if 0 <= last.tb_lasti < len(code.co_code) else None
    if op is None or dis.opname[op] not in ("RAISE_VARARGS", "RERAISE"):
        return None
    return SourceLocation(code.co_filename, last.tb_lineno, code.co_name)


def _staged_raise(raised: _Raised) -> None:
    """Fails the run, when the current branch is taken, with the exception it raises."""
    g = graph.get_default_graph()
    msg = f"{type(raised.exc).__name__}: {raised.exc}"
    g.create_node("Assert", [graph.constant(False)], {"message": msg}, name="raise", source=raised.location)


def _numeric(leaf) -> bool:
    return is_tensor(leaf) or isinstance(leaf, (bool, int, float, complex, np.generic, np.ndarray))


def _as_is(value) -> tuple:
    """The mode under which a value is passed through a cond unchanged."""
    if isinstance(value, Undefined):
        return ("drop",)
    if isinstance(value, MaybeDefined):
        return ("maybe", [_leaf_dtype(x) if _numeric(x) else None for x in nest.flatten(value.value)])
    if _is_composite(value):
        return ("value", [graph.dtypes.variant] * len(value._flat_tensors()))
    return ("value", [_leaf_dtype(x) if _numeric(x) else None for x in nest.flatten(value)])


def _as_is_keeping_lists(value) -> tuple:
    """Like _as_is, but lists built by graph loops (stacked tensors) leave the cond as lists."""
    paths = tuple(_builder_paths(value)) if not isinstance(value, (MaybeDefined, Undefined)) else ()
    if not paths:
        return _as_is(value)
    flat = nest.flatten(_stand_in(value, paths))
    return ("lists", [graph.dtypes.variant if x is _LIST_HANDLE else (_leaf_dtype(x) if _numeric(x) else None)
                      for x in flat], paths)


def _plan(t, f, name, meta_t, meta_f) -> tuple:
    """How one variable leaves a graph cond: (true mode, false mode, kept value or None).

    Modes: ("drop",) (not a cond output: the value is `kept`), ("value", dtypes),
    ("zeros", spec), ("maybe", dtypes).
    """
    drop = ("drop",)
    if t is f or _same_leaves(t, f):
        return drop, drop, t
    t_raised, f_raised = isinstance(t, _Raised), isinstance(f, _Raised)
    if t_raised or f_raised:
        other = f if t_raised else t
        if (t_raised and f_raised) or isinstance(other, Undefined) or not _has_graph_values(other) \
                and not _convertible(other):
            return drop, drop, (Undefined(name) if t_raised and f_raised else other)
        inner = other.value if isinstance(other, MaybeDefined) else other
        zeros, mode = ("zeros", _spec(inner)), _as_is_keeping_lists(other)
        return (zeros, mode, None) if t_raised else (mode, zeros, None)
    t_undef, f_undef = isinstance(t, Undefined), isinstance(f, Undefined)
    if t_undef and f_undef:
        return drop, drop, (f if isinstance(f, PartiallyDefined) and not isinstance(t, PartiallyDefined) else t)
    if t_undef or f_undef:
        u, d, defined = (t, f, "false") if t_undef else (f, t, "true")
        if type(u) is UndefinedReturn and not isinstance(d, MaybeDefined):
            zeros, mode = ("zeros", _spec(d)), _as_is_keeping_lists(d)
            return (zeros, mode, None) if t_undef else (mode, zeros, None)
        if isinstance(d, PartiallyDefined):
            return drop, drop, d
        like = d.value if isinstance(d, MaybeDefined) else d
        m_def, m_other = (meta_f, meta_t) if t_undef else (meta_t, meta_f)
        message = one_sided_message(name, defined, m_def, m_other, meta_t.get("if_line"), meta_t.get("filename"))
        return drop, drop, PartiallyDefined(name, like, message)
    _unify_arrays(t, f)
    if isinstance(t, MaybeDefined) or isinstance(f, MaybeDefined):
        tv = t.value if isinstance(t, MaybeDefined) else t
        fv = f.value if isinstance(f, MaybeDefined) else f
        mode = ("maybe", _merged_dtypes(tv, fv, name, meta_t, meta_f))
        return mode, mode, None
    if _is_composite(t) and _is_composite(f) and type(t) is type(f):
        mode = ("value", [graph.dtypes.variant] * len(t._flat_tensors()))
        return mode, mode, None
    paths = tuple(_list_paths(t, f))
    frames = _loop_frames()
    if frames and frames[-1].promotable and any(
            isinstance(_value_at(t, p), list) and isinstance(_value_at(f, p), list) for p, *_ in paths):
        raise _Promote(frames[-1].token)  # the list can grow in a graph loop instead
    if paths:
        # lists a graph loop built (TensorArrays) facing Python lists or other built lists: all become
        # TensorArrays inside their branch, merged into one list each
        mode = ("lists", _merged_dtypes(_stand_in(t, paths), _stand_in(f, paths), name, meta_t, meta_f), paths)
        return mode, mode, None
    mode = ("value", _merged_dtypes(t, f, name, meta_t, meta_f))
    return mode, mode, None


class _ListSlot:
    """Stands for a list that leaves a cond as a TensorArray (for comparing branch structures)."""

    def _flat_tensors(self):
        return [_LIST_HANDLE]

    def _with_flat_tensors(self, tensors):
        return self


_LIST_HANDLE = object()


def _list_paths(t, f, path=()):
    """(path, dtype, element_shape, stack after) of each list that must leave a cond as a TensorArray."""
    tb, fb = _as_list_builder(t), _as_list_builder(f)
    if tb is not None or fb is not None:
        if isinstance(t, TensorList) and isinstance(f, TensorList):
            return
        if all(b is not None or (isinstance(v, list) and _convertible(v)) for v, b in ((t, tb), (f, fb))):
            like = next((b.array for b in (tb, fb) if b is not None and b.array.dtype is not None), (tb or fb).array)
            yield path, like.dtype, like.element_shape, not (isinstance(t, TensorList) or isinstance(f, TensorList))
        return
    if isinstance(t, list) and isinstance(f, list) and len(t) != len(f) and _flat_list(t) and _flat_list(f):
        # a Python list that grows in one branch only (e.g. in a loop run in Python there)
        first = (t or f)[0]
        shape = first.shape if isinstance(first, Tensor) else np.shape(first)
        yield path, _leaf_dtype(first), shape, True
        return
    if isinstance(t, dict) and isinstance(f, dict) and set(t) == set(f):
        for k in t:
            yield from _list_paths(t[k], f[k], path + (k,))
    elif isinstance(t, (list, tuple)) and type(t) is type(f) and len(t) == len(f):
        for i, (a, b) in enumerate(zip(t, f)):
            yield from _list_paths(a, b, path + (i,))


def _builder_paths(value, path=()):
    """Paths of the lists inside `value` that are tensors stacked from a graph loop's TensorArray."""
    if isinstance(value, Tensor):
        builder = _as_list_builder(value)
        if builder is not None:
            yield path, builder.array.dtype, builder.array.element_shape, True
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _builder_paths(v, path + (k,))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _builder_paths(v, path + (i,))


def _flat_list(items) -> bool:
    return all(_numeric(v) and _convertible(v) for v in items)


def _replace_at(value, path, fn):
    if not path:
        return fn(value)
    key, rest = path[0], path[1:]
    if isinstance(value, dict):
        return type(value)((k, _replace_at(v, rest, fn) if k == key else v) for k, v in value.items())
    items = [_replace_at(v, rest, fn) if i == key else v for i, v in enumerate(value)]
    return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)


def _value_at(value, path):
    for key in path:
        value = value[key]
    return value


def _stand_in(value, paths):
    for path, *_ in paths:
        value = _replace_at(value, path, lambda v: _ListSlot())
    return value


class _ElementLike:
    def __init__(self, dtype, shape, name):
        self.dtype, self.shape, self.name = dtype, shape, name


def _as_tensor_list(value, dtype, element_shape, name):
    builder = _as_list_builder(value)
    if builder is not None:
        if builder.array.dtype is None and dtype is not None:
            # an array nothing was written to yet meets one that knows its elements: the merged list
            # may be either at run time, so both must know (e.g. to stack an empty one)
            builder.array._spec.learn(_ElementLike(dtype, element_shape, name), "merge")
        return builder
    ta = graph.TensorArray(dtype, element_shape=element_shape, name=name)
    for i, item in enumerate(value):
        ta = ta.write(i, item)
    return TensorList(ta)


def _branch_where(meta_t, meta_f):
    lt, lf = meta_t.get("line"), meta_f.get("line")
    return (f" in the true branch (line {lt})" if lt else " in the true branch",
            f" in the false branch (line {lf})" if lf else " in the false branch")


def _merged_dtypes(t, f, name, meta_t, meta_f) -> list:
    label = _var_label(name, meta_t)
    in_t, in_f = _branch_where(meta_t, meta_f)
    if_at = f" of the `if` at {meta_t.get('filename')}:{meta_t.get('if_line')}" if meta_t.get("if_line") else ""
    if not nest.same_structure(t, f) or _is_composite(t) != _is_composite(f):
        if _grown_list(t, f) or _grown_list(f, t):
            frames = _loop_frames()
            if frames and frames[-1].promotable:
                raise _Promote(frames[-1].token)
            raise StagingError(f"{label} is appended to in one branch only{if_at} ({_describe(t)}{in_t}, "
                               f"{_describe(f)}{in_f}); under a graph-tensor condition that needs a graph loop, "
                               "where the list becomes a TensorArray: put it in a loop over a tensor (or over "
                               "`range(n)` with a tensor n)")
        if label == "the return value" and (t is None or f is None):
            raise StagingError(f"the function returns {_describe(t)}{in_t} but {_describe(f)}{in_f}{if_at}; "
                               "a function that ends without `return` (or with a bare `return`) returns None, and "
                               "under a graph-tensor condition every path must return the same structure: "
                               "return a value on every path")
        raise StagingError(f"{label} is {_describe(t)}{in_t} but {_describe(f)}{in_f}{if_at}; under a graph-"
                           "tensor condition both branches must give it the same structure")
    out = []
    for a, b in zip(nest.flatten(t), nest.flatten(f), strict=True):
        if a is _LIST_HANDLE and b is _LIST_HANDLE:
            out.append(graph.dtypes.variant)
            continue
        if a is b and not _numeric(a):
            out.append(None)
            continue
        if not (_numeric(a) and _numeric(b)) or not _convertible(a) or not _convertible(b):
            raise StagingError(
                f"{label} is {_describe(a)}{in_t} and {_describe(b)}{in_f}{if_at}; under a graph-tensor "
                "condition only tensors and numbers (also in tuples, lists and dicts) can differ between "
                "the branches")
        da, db = _leaf_dtype(a), _leaf_dtype(b)
        out.append(_join_dtypes(da, db, _is_weak(a), _is_weak(b), label, in_t, in_f, if_at))
    return out


def _grown_list(short, long) -> bool:
    return isinstance(short, list) and isinstance(long, list) and len(long) > len(short) and \
        all(a is b for a, b in zip(short, long))


def _join_dtypes(da, db, weak_a, weak_b, label, in_a, in_b, where):
    """One dtype for two branch values. A Python number takes the other side's dtype (numpy's
    weak-scalar rule); two arrays of different dtypes are promoted with a warning."""
    if da == db:
        return da
    if da is graph.dtypes.variant or db is graph.dtypes.variant:
        raise StagingError(f"{label} is a TensorArray{in_a if da is graph.dtypes.variant else in_b} but not "
                           f"in the other branch{where}")
    if weak_a and not weak_b and (db.kind in "fc" or (da.kind in "bi" and db.kind in "iu")):
        return db
    if weak_b and not weak_a and (da.kind in "fc" or (db.kind in "bi" and da.kind in "iu")):
        return da
    joined = np.result_type(da, db)
    if weak_a and weak_b:
        return joined
    if da.kind == "b" or db.kind == "b":
        raise StagingError(f"{label} has dtype {da}{in_a} and {db}{in_b}{where}; cast one of them so that "
                           "both agree")
    _warn(f"{label} has dtype {da}{in_a} and {db}{in_b}{where}; both become {joined}")
    return joined


_warning_registry: dict = {}


def _warn(message: str) -> None:
    """A UserWarning attributed to the user's line that is being traced (not to this package)."""
    loc = user_location()
    if loc is None:
        warnings.warn(message, stacklevel=2)
    else:
        warnings.warn_explicit(message, UserWarning, loc.filename, loc.lineno, registry=_warning_registry)


def _encode(value, mode, name):
    """A branch's value of one variable, as the graph cond returns it (None: not returned)."""
    kind = mode[0]
    if kind == "drop":
        return None
    if kind == "zeros":
        return _zeros_like_spec(mode[1], _var_label(name, {}))
    if kind == "lists":
        for path, dtype, element_shape, _ in mode[2]:
            value = _replace_at(value, path, lambda v: _as_tensor_list(v, dtype, element_shape, name))
        return _cast_leaves(value, mode[1])
    if kind == "maybe":
        if isinstance(value, MaybeDefined):
            inner, flag, where = value.value, value.defined, value.where
        else:
            inner, flag, where = value, graph.constant(True), ""
        return MaybeDefined(name, _cast_leaves(inner, mode[1]), flag, where)
    if _is_composite(value):
        return value
    return _cast_leaves(value, mode[1])


def _cast_leaves(value, dtypes):
    out = []
    for leaf, dt in zip(nest.flatten(value), dtypes, strict=True):
        if dt is None:
            out.append(None)  # the same non-numeric object in both branches: restored after the cond
        elif dt is graph.dtypes.variant:
            out.append(leaf)
        else:
            out.append(_convert_leaf(leaf, dt))
    return out[0] if not isinstance(value, (list, tuple, dict)) and len(out) == 1 and \
        not _is_composite(value) else nest.pack_as(value, out)


def _restore(merged, original):
    """Puts the non-numeric leaves (passed as None) back into a merged value."""
    if merged is None or isinstance(original, Undefined):
        return merged
    if isinstance(merged, MaybeDefined) and isinstance(original, MaybeDefined):
        merged.value = _restore(merged.value, original.value)
        merged.where = original.where or merged.where
        return merged
    if isinstance(merged, MaybeDefined):
        return merged
    if not isinstance(merged, (list, tuple, dict)):
        return original if merged is None else merged
    leaves = [o if m is None else m for m, o in zip(nest.flatten(merged), nest.flatten(original), strict=True)]
    return nest.pack_as(merged, leaves)


def _anchor_effects(g) -> None:
    """Ties the current cond branch or loop body to the effects before it, for what it will nest.

    graph.cond / while_loop order a new branch's or loop's effects after the
    last effect of the *immediately* enclosing context only; when that context
    has none yet (a branch whose only effects are in a nested cond), effects
    further out would be neither ordered before nor kept alive by the nested
    ones. An Identity in this context that waits for the nearest outer effect
    restores the chain.
    """
    ctx = g.context
    if ctx is None or g.last_effect(ctx) is not None:
        return
    outer = ctx.outer
    while True:
        effect = g.last_effect(outer)
        if effect is not None or outer is None:
            break
        outer = outer.outer
    if effect is None:
        return
    anchor = g.create_node("Identity", [graph.constant(np.int32(0))], name="after_outer_effects",
                           control_inputs=[effect])
    g.set_last_effect(ctx, anchor)


def _mode_key(mode):
    """A mode with dtypes as strings: `np.dtype("float64") == None` is True, so dtypes do not compare."""
    if isinstance(mode, (list, tuple)):
        return tuple(_mode_key(m) for m in mode)
    if isinstance(mode, np.dtype) or mode is graph.dtypes.variant:
        return ("dtype", str(mode))
    return mode


def _graph_cond(pred: Tensor, true_fn, false_fn, state, names, what: str):
    """Builds a graph cond for `if pred: state = true_fn(*state) else: state = false_fn(*state)`.

    Both branches are traced; their values are compared variable by variable
    (`_plan`). When the true branch, traced first, was encoded differently from
    what the false branch shows is needed (a placeholder, a dtype), the cond is
    rolled back and built again with that knowledge.
    """
    g = graph.get_default_graph()
    _anchor_effects(g)
    meta_t, meta_f = conversion.metadata_for(true_fn), conversion.metadata_for(false_fn)
    hints: dict[int, tuple] = {}
    token = object()
    for _ in range(_MAX_ATTEMPTS):
        checkpoint = g._checkpoint()
        raw: dict = {}
        used: dict[int, tuple] = {}
        plans: list = []

        def run(side, fn):
            try:
                outs = _outputs(fn(*_fresh(state)), names)
            except Exception as exc:
                location = _user_raise_location(exc)
                if location is None:
                    raise
                outs = _Raised(exc, location)
                _staged_raise(outs)
            raw[side] = outs
            return outs

        def true_branch():
            outs = run("true", true_fn)
            result = []
            for i in range(len(names)):
                value = outs if isinstance(outs, _Raised) else outs[i]
                mode = hints.get(i) or (("drop",) if isinstance(outs, _Raised) else _as_is(value))
                used[i] = mode
                result.append(_encode(value, mode, names[i]))
            return tuple(result)

        def false_branch():
            outs = run("false", false_fn)
            t_outs = raw["true"]
            for i, name in enumerate(names):
                t = t_outs if isinstance(t_outs, _Raised) else t_outs[i]
                f = outs if isinstance(outs, _Raised) else outs[i]
                plans.append(_plan(t, f, name, meta_t, meta_f))
            wanted = {i: p[0] for i, p in enumerate(plans)}
            if any(_mode_key(wanted[i]) != _mode_key(used[i]) for i in range(len(names))):
                raise _Retry(token, wanted)
            return tuple(_encode(outs if isinstance(outs, _Raised) else outs[i], p[1], names[i])
                         for i, p in enumerate(plans))

        try:
            merged = graph.cond(pred, true_branch, false_branch)
        except _Retry as r:
            if r.token is not token:
                raise
            g._rollback(checkpoint)
            hints = dict(r.changes)
            continue
        results = []
        t_outs = raw["true"]
        for i, (t_mode, f_mode, kept) in enumerate(plans):
            if t_mode == ("drop",):
                results.append(kept)
            else:
                original = t_outs[i] if not isinstance(t_outs, _Raised) else raw["false"][i]
                lists = t_mode if t_mode[0] == "lists" else f_mode if f_mode[0] == "lists" else None
                if lists is not None:
                    if isinstance(original, Undefined) and not isinstance(raw["false"], _Raised):
                        original = raw["false"][i]
                    value = _restore(merged[i], _stand_in(original, lists[2]))
                    for path, _, _, stack in lists[2]:
                        if stack:  # outside its loops, a built list reads as a tensor
                            value = _replace_at(value, path, _stacked)
                else:
                    value = _restore(merged[i], original)
                results.append(value)
        return _result(results, names)
    raise StagingError(f"could not build the graph cond for {what}: its branches kept changing")


def if_stmt(test, if_true, if_false, state=(), names=()):
    """Runs one branch, and returns the variables it assigns::

        if test:
            state = if_true(*state)
        else:
            state = if_false(*state)

    A graph-tensor `test` builds a graph cond: both branches are traced and the
    graph runs one of them.
    """
    if not is_tensor(test):
        out = if_true(*state) if test else if_false(*state)
        return out
    meta = conversion.metadata_for(if_true)
    what = f"the `if` at {meta.get('filename')}:{meta.get('if_line')}" if meta else "an `if`"
    return _graph_cond(_predicate(test, what), if_true, if_false, tuple(state), tuple(names), what)


def if_exp(test, if_true, if_false):
    """`if_true() if test else if_false()`; only the chosen side runs."""
    if not is_tensor(test):
        return if_true() if test else if_false()
    return _graph_cond(_predicate(test, "a conditional expression"), if_true, if_false, (),
                       ("<the value of the conditional expression>",),
                       "a conditional expression")


def and_(first, *rest):
    """`first and rest[0]() and rest[1]() ...`: later operands run only while the result is true."""
    value = first
    for i, fn in enumerate(rest):
        if is_tensor(value):
            remaining = rest[i:]
            return _graph_cond(_predicate(value, "`and`"), lambda: and_(remaining[0](), *remaining[1:]),
                               lambda: value, (), ("<the value of the `and` expression>",), "`and`")
        if not value:
            return value
        value = fn()
    return value


def or_(first, *rest):
    """`first or rest[0]() or rest[1]() ...`: later operands run only while the result is false."""
    value = first
    for i, fn in enumerate(rest):
        if is_tensor(value):
            remaining = rest[i:]
            return _graph_cond(_predicate(value, "`or`"), lambda: value,
                               lambda: or_(remaining[0](), *remaining[1:]), (),
                               ("<the value of the `or` expression>",), "`or`")
        if value:
            return value
        value = fn()
    return value


def not_(value):
    """`not value` (a logical not for tensors)."""
    if is_tensor(value):
        t = graph.convert(value)
        if t.dtype == np.bool_ and (t.shape == () or t.shape is None):
            return graph.logical_not(t)
        return graph.logical_not(_predicate(t, "`not`"))
    return not value


# --------------------------------------------------------------------------- loops

_UNROLL_WARNING_ITERATIONS = 1000
_warned_unrolled: set = set()


def _check_unrolling(loop_body, iterations: int, g, nodes_before: int) -> None:
    """Warns once per loop when a Python loop adds many copies of its body to the graph."""
    if iterations != _UNROLL_WARNING_ITERATIONS or len(g.nodes) == nodes_before:
        return
    code = getattr(loop_body, "__code__", None)
    if code in _warned_unrolled:
        return
    _warned_unrolled.add(code)
    meta = conversion.metadata_for(loop_body)
    where = _loop_where(meta, meta.get("kind", "")) if meta else "a loop"
    _warn(f"{where} has run {iterations} iterations in Python while the graph is built, adding "
          f"{len(g.nodes) - nodes_before} nodes so far: its condition or iterable is a Python value, so "
          "it unrolls into the graph. Make it a graph tensor (e.g. a tensor loop bound) for a graph loop")


class _LoopFrame:
    """A loop being traced: a graph loop's body (with the Python lists it carries, for
    list.append), or a Python loop that could become a graph loop (`promotable`)."""

    def __init__(self, token, lists: dict, promotable: bool = False):
        self.token = token
        self.lists = lists  # id(list object) -> index of the loop variable
        self.promotable = promotable


class _Promote(BaseException):
    """Rebuild the innermost Python loop as a graph loop (never seen by user code)."""

    def __init__(self, token):
        super().__init__("internal: make a Python loop a graph loop")
        self.token = token


def _python_loop(promotable: bool):
    """Pushes the frame of a Python loop (remove it when the loop ends)."""
    frame = _LoopFrame(object(), {}, promotable)
    _loop_frames().append(frame)
    return frame


def _initial_mode(value) -> tuple:
    if isinstance(value, UndefinedReturn) or getattr(value, "is_variable", False):
        return ("fixed",)
    if isinstance(value, Undefined):
        return ("fixed",)
    if isinstance(value, (MaybeDefined, TensorList)) or _is_composite(value):
        return ("tensor", None)
    if value is not None and _convertible(value):
        return ("tensor", None)
    return ("fixed",)


def _loop_init(value, mode, name, where):
    kind = mode[0]
    if kind == "tensor":
        paths = mode[2] if len(mode) > 2 else ()
        for path, dtype, element_shape, _ in paths:  # lists the body turns into TensorArrays
            value = _replace_at(value, path, lambda v: _as_tensor_list(v, dtype, element_shape, name))
        if _is_composite(value) and not isinstance(value, (list, tuple, dict)):
            return value
        dtypes = mode[1]
        leaves = nest.flatten(value)
        if dtypes is None or paths:
            dtypes = [None] * len(leaves)
        return nest.pack_as(value, [_convert_leaf(x, dt) for x, dt in zip(leaves, dtypes, strict=True)])
    if kind == "maybe":
        return MaybeDefined(name, _zeros_like_spec(mode[1], f"variable '{name}'"), graph.constant(False), where)
    if kind == "zeros":
        return _zeros_like_spec(mode[1], "the return value")
    if kind == "accumulate":
        return _as_list_builder(value) or TensorList.from_list(value, name=name)
    raise AssertionError(kind)


def _loop_output(v_in, v_out, mode, name, meta, token):
    """The body's new value of a carried variable, in the loop variable's form; or a change request."""
    kind = mode[0]
    label = _var_label(name, meta)
    line = meta.get("line")
    at = f" (loop body at line {line})" if line else ""
    if kind == "probe":
        if v_out is v_in:
            return None, None
        if not (_convertible(v_out) and _numeric(v_out)):
            raise StagingError(f"{label} becomes {_describe(v_out)} in the graph loop body{at}; a graph loop "
                               "can only carry tensors and numbers")
        return None, ("tensor", [None if _is_weak(v_out) else _leaf_dtype(v_out)])
    if kind == "fixed":
        if v_out is v_in or _same_leaves(v_out, v_in):
            return None, None
        if isinstance(v_in, Undefined):
            if isinstance(v_out, Undefined) and not isinstance(v_out, PartiallyDefined):
                return None, None
            if type(v_in) is UndefinedReturn and not isinstance(v_out, (Undefined, MaybeDefined)):
                return None, ("zeros", _spec(v_out))
            like = v_out.like if isinstance(v_out, PartiallyDefined) else \
                (v_out.value if isinstance(v_out, MaybeDefined) else v_out)
            if not _convertible(like):
                raise StagingError(f"{label} is first assigned {_describe(like)} in a graph loop{at}; a "
                                   "graph loop can only carry tensors and numbers")
            return None, ("maybe", _spec(like))
        if isinstance(v_in, list) and isinstance(v_out, list):
            return None, ("accumulate",)
        if getattr(v_in, "is_variable", False) and _numeric(v_out) and _convertible(v_out):
            return None, ("tensor", None)  # a name bound to a Variable, then to values computed from it
        raise StagingError(f"{label} is {_describe(v_in)} before the graph loop and changes in its body{at} "
                           f"(to {_describe(v_out)}); a graph loop can only carry tensors and numbers (also in "
                           "tuples, lists and dicts)")
    if kind == "accumulate" or isinstance(v_in, TensorList):
        builder = _as_list_builder(v_out)
        if builder is not None:
            return builder, None
        if isinstance(v_out, list) and _flat_list(v_out):  # a new list each iteration
            return _as_tensor_list(v_out, v_in.array.dtype, v_in.array.element_shape, name), None
        if not isinstance(v_out, TensorList):
            raise StagingError(f"{label} is a list appended to in the graph loop{at}; it must stay a list "
                               f"(it became {_describe(v_out)})")
        return v_out, None
    if kind == "maybe" or isinstance(v_in, MaybeDefined):
        if isinstance(v_out, MaybeDefined):
            return v_out, None
        if isinstance(v_out, Undefined):
            raise StagingError(f"{label} is deleted or undefined at the end of the graph loop body{at}")
        inner = v_in.value
        if not nest.same_structure(inner, v_out):
            raise StagingError(f"{label} is {_describe(inner)} before the loop and {_describe(v_out)} after "
                               f"one iteration{at}; a loop variable must keep its structure")
        dtypes = [t.dtype for t in nest.flatten(inner)]
        return MaybeDefined(name, _cast_leaves(v_out, dtypes), graph.constant(True), v_in.where), None
    # a plain carried value
    if isinstance(v_out, Undefined):
        if isinstance(v_out, PartiallyDefined):
            raise v_out.error()
        raise StagingError(f"{label} is undefined at the end of the graph loop body{at}")
    if isinstance(v_out, MaybeDefined):
        raise StagingError(f"{label} may be undefined at the end of the graph loop body{at}")
    paths = tuple(_list_paths(v_in, v_out))
    if paths:
        # a list inside the variable became a TensorArray (a list built in a nested loop), or the other way
        grow = tuple(p for p in paths if not isinstance(_value_at(v_in, p[0]), TensorList))
        if grow:
            known = mode[2] if len(mode) > 2 else ()
            return None, ("tensor", None, known + grow)
        for path, dtype, element_shape, _ in paths:
            v_out = _replace_at(v_out, path, lambda v: _as_tensor_list(v, dtype, element_shape, name))
    if not nest.same_structure(v_in, v_out) or _is_composite(v_in) != _is_composite(v_out):
        raise StagingError(f"{label} is {_describe(v_in)} before the loop and {_describe(v_out)} after one "
                           f"iteration{at}; a loop variable must keep its structure (shapes may change)")
    if _is_composite(v_in):
        return v_out, None
    in_leaves, out_leaves = nest.flatten(v_in), nest.flatten(v_out)
    new = []
    for a, b in zip(in_leaves, out_leaves, strict=True):
        if not _numeric(b) or not _convertible(b):
            raise StagingError(f"{label} becomes {_describe(b)} in the graph loop body{at}; a graph loop can "
                               "only carry tensors and numbers")
        new.append(b)
    return nest.pack_as(v_out, new), None


def _weak_fixups(init_state, modes, loop_vars, outs) -> dict:
    """Loop variables that started as Python numbers and come back with another dtype.

    Under numpy's rules a Python number is "weak": `0 + float32` is float32.
    Such a variable is traced once more as a plain Python number ("probe"),
    which gives the dtype Python would end up with; the loop then starts it
    with that dtype.
    """
    changes = {}
    for i, (v0, mode) in enumerate(zip(init_state, modes, strict=True)):
        if mode != ("tensor", None) or i not in loop_vars or i not in outs or not _is_weak(v0):
            continue
        before, after = loop_vars[i], outs[i]
        dtype = _leaf_dtype(after)
        if isinstance(before, Tensor) and dtype is not None and dtype != before.dtype:
            changes[i] = ("probe",)
    return changes


def _graph_loop(cond_fn, body_fn, internal, state, names, meta, kind: str, loop_where: str,
                parallel_iterations: int = 32):
    """`while cond_fn(internal, state): internal, state = body_fn(internal, state)` as a graph loop.

    `internal` are the helper's own loop variables (a counter); `state` the
    user's. Variables undefined before the loop, Python lists appended to in
    it and Python numbers whose dtype the body changes are discovered while
    tracing the body; the loop is then rolled back and built again with them.
    """
    g = graph.get_default_graph()
    _anchor_effects(g)
    state = tuple(state)
    appends = set(meta.get("appends", ()))
    modes = [("accumulate",) if names[i] in appends and (isinstance(v, list) or _as_list_builder(v) is not None)
             else _initial_mode(v) for i, v in enumerate(state)]
    for i, v in enumerate(state):
        inner = tuple(_builder_paths(v)) if modes[i] == ("tensor", None) else ()
        if inner:  # lists built by earlier loops stay lists (TensorArrays) through this one
            modes[i] = ("tensor", None, inner)
    token = object()
    labels = list(names)
    for _ in range(_MAX_ATTEMPTS):
        checkpoint = g._checkpoint()
        carried = [i for i, m in enumerate(modes) if m[0] not in ("fixed", "probe")]
        try:
            init = {i: _loop_init(state[i], modes[i], names[i], loop_where) for i in carried}
        except TypeError as e:
            i = next(i for i in carried if not _convertible(state[i]))
            raise StagingError(f"{_var_label(names[i], meta)} cannot be carried by the graph loop: {e}") from None
        # a graph loop needs a variable: a loop whose state lives in Variables only gets a counter
        extra = () if internal or carried else (graph.constant(np.int64(0)),)
        n_internal = len(internal) + len(extra)
        loop_vars = tuple(internal) + extra + tuple(init[i] for i in carried)
        seen_outs: dict = {}

        def full_state(values):
            current = list(state)
            for i, v in zip(carried, values, strict=True):
                current[i] = v
            return current

        def cond_w(*vs):
            current = full_state(vs[n_internal:])
            return cond_fn(vs[:len(internal)], current)

        def body_w(*vs):
            current = full_state(vs[n_internal:])
            lists = {id(v): i for i, v in enumerate(current) if isinstance(v, list)}
            lengths = {i: len(v) for i, v in enumerate(current) if isinstance(v, list)}
            frames = _loop_frames()
            frame = _LoopFrame(token, lists)
            frames.append(frame)
            try:
                new_internal, out = body_fn(vs[:len(internal)], current)
            finally:
                frames.remove(frame)
            out = _outputs(out, names)
            changes, result = {}, []
            for i, n in lengths.items():
                if out[i] is current[i] and len(out[i]) != n:  # appended in place (not via list_append)
                    changes[i] = ("accumulate",)
            if changes:
                raise _Retry(token, changes)
            for i in range(len(state)):
                v_in = current[i]
                value, change = _loop_output(v_in, out[i], modes[i], names[i], meta, token)
                if change is not None:
                    changes[i] = change
                elif modes[i][0] not in ("fixed", "probe"):
                    result.append(value)
                    seen_outs[i] = value
            changes.update(_weak_fixups(state, modes, init, seen_outs))
            if changes:
                raise _Retry(token, changes)
            return tuple(new_internal) + tuple(v + np.int64(1) for v in vs[len(internal):n_internal]) + \
                tuple(result)

        context, effect_before = g.context, g.last_effect(g.context)
        try:
            outs = graph.while_loop(cond_w, body_w, loop_vars, parallel_iterations=parallel_iterations,
                                    names=[f"<{kind} counter>"] * n_internal + [labels[i] for i in carried])
            if context is not None and g.last_effect(context) is not effect_before:
                context.has_effects = True  # (as for graph.cond, see _graph_cond)
        except _Retry as r:
            if r.token is not token:
                raise
            g._rollback(checkpoint)
            for i, change in r.changes.items():
                modes[i] = change
            continue
        outs = tuple(outs)
        final = full_state(outs[n_internal:])
        for i in carried:
            if modes[i][0] == "accumulate" and not isinstance(state[i], TensorList):
                final[i] = _stacked(final[i])
            for path, *_ in (modes[i][2] if modes[i][0] == "tensor" and len(modes[i]) > 2 else ()):
                if not isinstance(_value_at(state[i], path), TensorList):  # outside its loops: a tensor
                    final[i] = _replace_at(final[i], path, _stacked)
        return outs[:len(internal)], final
    raise StagingError(f"could not build the graph loop {loop_where}: its variables kept changing")


def _loop_where(meta, kind) -> str:
    f, line = meta.get("filename"), meta.get("loop_line")
    return f"the {kind} loop at {f}:{line}" if f and line else f"a {kind} loop"


def while_stmt(loop_test, loop_body, state=(), names=()):
    """Runs the loop, and returns the variables it carries::

        while loop_test(*state):
            state = loop_body(*state)

    When the test is a graph tensor the loop becomes a graph while_loop. A loop
    whose test turns into a tensor after some Python iterations (a `break` that
    depends on a tensor, e.g. in `while True:`) is rebuilt as a graph loop.
    """
    state, names = tuple(state), tuple(names)
    g = graph.get_default_graph()
    checkpoint = g._checkpoint()
    start = _fresh(state)
    nodes_before = len(g.nodes)
    iterations = 0
    frame = _python_loop(promotable=True)
    try:
        test = loop_test(*state)
        while not is_tensor(test):
            if not test:
                return _result(state, names) if names else None
            state = _outputs(loop_body(*state), names)
            iterations += 1
            _check_unrolling(loop_body, iterations, g, nodes_before)
            test = loop_test(*state)
    except _Promote as p:
        if p.token is not frame.token:
            raise
    finally:
        _loop_frames().remove(frame)
    g._rollback(checkpoint)
    meta = conversion.metadata_for(loop_body)
    where = _loop_where(meta, "while")

    def cond_fn(internal, current):
        value = loop_test(*current)
        return _predicate(value, where) if is_tensor(value) else graph.constant(bool(value))

    def body_fn(internal, current):
        return (), loop_body(*current)

    try:
        _, final = _graph_loop(cond_fn, body_fn, (), start, names, meta, "while", f"{where}, which ran zero times")
    except Exception as e:
        if iterations:
            e.add_note(f"note: {where} became a graph loop because its condition became a graph tensor after "
                       f"{iterations} Python iteration(s) (a `break` or `return` that depends on a tensor, or a "
                       "loop variable that became a tensor)")
        raise
    return _result(final, names) if names else None


class _Source:
    """What a graph `for` loop iterates over: a count `n` and the item at index k."""

    def n(self) -> Tensor:
        raise NotImplementedError

    def item(self, k: Tensor):
        raise NotImplementedError


class _RangeSource(_Source):
    def __init__(self, start, stop, step):
        ints = [x for x in (start, stop, step) if is_tensor(x)]
        dtype = np.result_type(*[graph.convert(x).dtype for x in ints]) if ints else np.dtype(np.int64)
        self.start, self.stop, self.step = (_convert_leaf(x, dtype) for x in (start, stop, step))

    def n(self):
        if self.step.node.op != "Const":
            graph.assert_(graph.not_equal(self.step, 0), "range() arg 3 must not be zero")
        elif graph.static_value(self.step) == 0:
            raise ValueError("range() arg 3 must not be zero")
        span = self.stop - self.start
        one = graph.constant(np.ones((), self.step.dtype))
        sign = graph.where(self.step > 0, one, -one)
        count = (span + self.step - sign) // self.step
        return graph.cast(graph.maximum(count, graph.constant(np.zeros((), count.dtype))), np.int64)

    def item(self, k):
        # range(n) is the common case: its item is the loop index itself, not two ops per iteration
        k = graph.cast(k, self.start.dtype)
        if not _static_equals(self.step, 1):
            k = k * self.step
        return k if _static_equals(self.start, 0) else self.start + k


def _static_equals(t: Tensor, value) -> bool:
    v = graph.static_value(t)
    return v is not None and v.shape == () and v == value


class _TensorSource(_Source):
    def __init__(self, t: Tensor):
        if t.shape is not None and len(t.shape) == 0:
            raise StagingError(f"cannot iterate over a scalar tensor ({t.name})")
        self.t = t
        self.array = graph.TensorArray(t.dtype, element_shape=None if t.shape is None else t.shape[1:],
                                       name="for_items").unstack(t)

    def n(self):
        if self.t.shape is not None and self.t.shape[0] is not None:
            return graph.constant(np.int64(self.t.shape[0]))
        return self.array.size()

    def item(self, k):
        return self.array.read(k)


class _ArraySource(_Source):
    def __init__(self, array):
        self.array = array.array if isinstance(array, TensorList) else array

    def n(self):
        return self.array.size()

    def item(self, k):
        return self.array.read(k)


class _EnumerateSource(_Source):
    def __init__(self, inner: _Source, start):
        self.inner, self.start = inner, start

    def n(self):
        return self.inner.n()

    def item(self, k):
        return (k + self.start if self.start else k, self.inner.item(k))


class _ZipSource(_Source):
    def __init__(self, sources):
        self.sources = sources

    def n(self):
        ns = [s.n() for s in self.sources]
        out = ns[0]
        for m in ns[1:]:
            out = graph.minimum(out, m)
        return out

    def item(self, k):
        return tuple(s.item(k) for s in self.sources)


class GraphRange:
    """`range(...)` with tensor bounds: iterated by a graph loop, or used as a tensor."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def _as_graph_tensor(self):
        return graph.range(self.start, self.stop, self.step)

    def __repr__(self) -> str:
        return f"range({self.start}, {self.stop}, {self.step})"


class GraphEnumerate:
    def __init__(self, iterable, start):
        self.iterable, self.start = iterable, start


class GraphZip:
    def __init__(self, iterables):
        self.iterables = iterables


def _graph_source(iterable) -> _Source | None:
    """The graph loop source for an iterable, or None to iterate it in Python."""
    if isinstance(iterable, GraphRange):
        return _RangeSource(iterable.start, iterable.stop, iterable.step)
    if isinstance(iterable, TensorList) or isinstance(iterable, graph.TensorArray):
        return _ArraySource(iterable)
    if isinstance(iterable, GraphEnumerate):
        return _EnumerateSource(_graph_source(iterable.iterable), iterable.start)
    if isinstance(iterable, GraphZip):
        return _ZipSource([_graph_source(x) or _TensorSource(graph.convert(x)) for x in iterable.iterables])
    if is_tensor(iterable):
        return _TensorSource(graph.convert(iterable))
    return None


def for_stmt(iterable, loop_body, state=(), names=(), loop_test=None):
    """Runs the loop, and returns the variables it carries::

        for item in iterable:
            if loop_test is not None and not loop_test(*state):
                break
            state = loop_body(item, *state)

    Iterating over a tensor (its first axis), a TensorArray, `range` with
    tensor bounds, or `enumerate`/`zip` of those builds a graph loop. Other
    iterables run in Python while the graph is built.
    """
    state, names = tuple(state), tuple(names)
    meta = conversion.metadata_for(loop_body)
    where = _loop_where(meta, "for")
    source = _graph_source(iterable)
    if source is not None:
        return _graph_for(source, loop_body, state, names, loop_test, meta, where)
    g = graph.get_default_graph()
    checkpoint = g._checkpoint()
    start = _fresh(state)
    items = iter(iterable)
    nodes_before, iterations = len(g.nodes), 0
    frame = _python_loop(promotable=isinstance(iterable, range))
    try:
        while True:
            if loop_test is not None:
                go = loop_test(*state)
                if is_tensor(go):
                    if isinstance(iterable, range):
                        raise _Promote(frame.token)
                    raise StagingError(
                        f"{where} iterates over {_describe(iterable)}, so it runs in Python while the graph is "
                        "built, but whether it stops early (a `break` or `return` inside it) depends on a graph "
                        "tensor. Iterate over a tensor instead (e.g. `for v in np.asarray(values)` on an array "
                        "argument, or `range(n)` with a tensor n) so that it becomes a graph loop, or make the "
                        "condition a Python value")
                if not go:
                    break
            try:
                item = next(items)
            except StopIteration:
                break
            state = _outputs(loop_body(item, *state), names)
            iterations += 1
            _check_unrolling(loop_body, iterations, g, nodes_before)
        return _result(state, names) if names else None
    except _Promote as p:
        if p.token is not frame.token:
            raise
    finally:
        _loop_frames().remove(frame)
    g._rollback(checkpoint)
    src = _RangeSource(iterable.start, iterable.stop, iterable.step)
    return _graph_for(src, loop_body, start, names, loop_test, meta, where)


def _graph_for(source: _Source, loop_body, state, names, loop_test, meta, where):
    n = source.n()

    def cond_fn(internal, current):
        (k,) = internal
        pred = graph.less(k, n)
        if loop_test is not None:
            go = loop_test(*current)
            go = _predicate(go, where) if is_tensor(go) else graph.constant(bool(go))
            pred = graph.logical_and(pred, go)
        return pred

    def body_fn(internal, current):
        (k,) = internal
        out = loop_body(source.item(k), *current)
        return (k + np.int64(1),), out

    _, final = _graph_loop(cond_fn, body_fn, (graph.constant(np.int64(0)),), state, names, meta, "for",
                           f"{where}, which ran zero times")
    return _result(final, names) if names else None


# --------------------------------------------------------------------------- variables

def undefined_return() -> UndefinedReturn:
    """The return value before any `return` ran."""
    return UndefinedReturn()


def ld(value):
    """`value`, read from a variable that may not be assigned on every path.

    Raises what Python would (UnboundLocalError), or the error of a variable a
    graph `if` assigns in one branch only; a value from a graph loop that may
    have run zero times is checked when the graph runs.
    """
    if isinstance(value, Undefined):
        loc = user_location()
        raise value.error(str(loc) if loc else "")
    if isinstance(value, MaybeDefined):
        return value.read()
    return value


def to_global(names: str, value):
    """`global_name = value`, refusing graph tensors (they exist only while the graph is built)."""
    if _has_graph_values(value) or isinstance(value, (MaybeDefined, TensorList)):
        raise StagingError(f"cannot assign a graph tensor to the global variable {names}: tensors of a converted "
                           "function exist only inside its graph. Return the value instead, or keep state in a "
                           "graph.Variable (assign it with `v.assign(...)`)")
    return value


# --------------------------------------------------------------------------- lists

def list_append(target, value):
    """`target.append(value)`; returns the list.

    A Python list carried by a graph loop becomes a TensorArray (stacked into a
    tensor after the loop).
    """
    builder = _as_list_builder(target)
    if builder is not None:
        try:
            grown = builder.append(value)
        except (TypeError, GraphError) as e:
            raise StagingError(f"cannot append {_describe(value)} to a list built in a graph loop: {e}") from None
        return grown if isinstance(target, TensorList) else _stacked(grown)
    if isinstance(target, list):
        frames = _loop_frames()
        if frames and id(target) in frames[-1].lists:
            raise _Retry(frames[-1].token, {frames[-1].lists[id(target)]: ("accumulate",)})
    target.append(value)
    return target


def set_item(target, key, value, in_place=None):
    """`target[key] = value`; returns the target (a new tensor when the target is a tensor).

    A Variable's item is assigned (`target.assign_at(key, value)`). `in_place` names a
    target the function does not bind (a global or closure variable): it must change in place.
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
    target[key] = value
    return target


# --------------------------------------------------------------------------- statements

def assert_stmt(test, message):
    """`assert test, message` (a graph Assert, checked when the graph runs, for a tensor test)."""
    if not is_tensor(test):
        if not test:
            raise AssertionError(message() if callable(message) else message)
        return None
    text = message() if callable(message) else message
    return graph.assert_(_predicate(test, "an assert"), str(text))


def _tracing() -> bool:
    return getattr(_tls, "tracing", 0) > 0


class tracing:
    """Marks that a graph is being traced (so `print` of Python values prints when the graph runs)."""

    def __enter__(self):
        _tls.tracing = getattr(_tls, "tracing", 0) + 1

    def __exit__(self, *exc):
        _tls.tracing -= 1


class FormattedText:
    """An f-string with tensors in it, as `print` shows it: text and run-time values."""

    def __init__(self, parts):
        self.parts = parts


class _Formatted:
    def __init__(self, value, spec):
        self.value, self.spec = value, spec


def fstr(*parts):
    """`f"..."` in a print: the joined text, or the parts when a tensor is among them."""
    if any(_has_graph_values(p) or isinstance(p, (_Formatted, MaybeDefined, TensorList)) for p in parts):
        return FormattedText(parts)
    return "".join(p if isinstance(p, str) else format(p, "") for p in parts)


def fmt(value, spec="", conversion=-1):
    """`f"{value!conversion:spec}"`; a tensor prints its run-time value (without the spec)."""
    if is_tensor(value) or isinstance(value, (MaybeDefined, TensorList)):
        return _Formatted(value, spec)
    if conversion == ord("r"):
        value = repr(value)
    elif conversion == ord("s"):
        value = str(value)
    elif conversion == ord("a"):
        value = ascii(value)
    return format(value, spec)


def _print_parts(value, out: list) -> None:
    if isinstance(value, FormattedText):
        for p in value.parts:
            if isinstance(p, str):
                out.append(p)
            else:
                _print_parts(p.value if isinstance(p, _Formatted) else p, out)
        return
    if isinstance(value, MaybeDefined):
        value = value.read()
    if isinstance(value, TensorList):
        value = value.stack()
    if is_tensor(value):
        out.append(graph.convert(value))
    elif isinstance(value, (list, tuple)) and _has_graph_values(value):
        out.append("[" if isinstance(value, list) else "(")
        for i, v in enumerate(value):
            if i:
                out.append(", ")
            _print_parts(v, out)
        if isinstance(value, tuple) and len(value) == 1:
            out.append(",")
        out.append("]" if isinstance(value, list) else ")")
    elif isinstance(value, dict) and _has_graph_values(value):
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(", ")
            out.append(f"{k!r}: ")
            _print_parts(v, out)
        out.append("}")
    else:
        out.append(str(value))


def print_(*values, sep=" ", end="\n", file=None, flush=False):
    """`print(*values, sep=sep, end=end)`, when the graph runs, in program order.

    Outside a graph (no tensors, not tracing) it is Python's print.
    """
    if not (_tracing() or any(_has_graph_values(v) or isinstance(v, (MaybeDefined, TensorList, FormattedText))
                              for v in values)):
        return _py.print(*values, sep=sep, end=end, file=file, flush=flush)
    if file not in (None, sys.stdout):
        if any(_has_graph_values(v) for v in values):
            raise StagingError("print(..., file=...) of graph tensors is not supported; graph prints go to the "
                               "session's output")
        return _py.print(*values, sep=sep, end=end, file=file, flush=flush)
    parts: list = []
    for i, v in enumerate(values):
        if i:
            parts.append(sep if sep is not None else " ")
        _print_parts(v, parts)
    merged: list = []
    for p in parts:  # adjacent literal text becomes one part
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        else:
            merged.append(p)
    graph.print_(*merged, sep="", end="\n" if end is None else end, summarize=None)
    return None


# --------------------------------------------------------------------------- calls

_MAX_RECURSION = 48


def _convert_callable(f):
    """The converted form of a user callable, or None to call `f` as it is."""
    inline = getattr(f, "_transpile_inline", None)
    if inline is not None:
        return inline()
    if isinstance(f, types.MethodType):
        inner = _convert_callable(f.__func__)
        return None if inner is None else types.MethodType(inner, f.__self__)
    if isinstance(f, types.FunctionType):
        if conversion.is_converted_code(f.__code__) or getattr(f, "__transpile_do_not_convert__", False):
            return None
        from transpile.converters.call_trees import is_library_object
        if is_library_object(f):
            return None
        from transpile import api
        return api.converted_function(f)
    import functools
    if isinstance(f, functools.partial):
        inner = _convert_callable(f.func)
        return None if inner is None else functools.partial(inner, *f.args, **f.keywords)
    if not isinstance(f, type) and not isinstance(f, types.BuiltinFunctionType):
        method = getattr(type(f), "__call__", None)
        if isinstance(method, types.FunctionType):
            inner = _convert_callable(method)
            return None if inner is None else types.MethodType(inner, f)
    return None


def _stack_like(f, t: Tensor, kwargs):
    """numpy's sequence functions applied to a list that a graph loop built (now a stacked tensor)."""
    axis = kwargs.pop("axis", 0)
    dtype = kwargs.pop("dtype", None)
    if f is np.concatenate or f is np.vstack:
        if t.shape is None or len(t.shape) < 2 or axis != 0:
            raise StagingError(f"np.{f.__name__} of a list built in a graph loop needs its items to have a known "
                               "rank of at least 1 (and axis=0)")
        out = graph.reshape(t, (-1,) + tuple(-1 if d is None else d for d in t.shape[2:]))
    elif f is np.stack and axis != 0:
        if t.shape is None:
            raise StagingError("np.stack(..., axis) of a list built in a graph loop needs items of known rank")
        rank = len(t.shape)
        axis = axis % rank
        perm = list(range(1, axis + 1)) + [0] + list(range(axis + 1, rank))
        out = graph.transpose(t, perm)
    else:
        out = t
    return graph.cast(out, dtype) if dtype is not None else out


_SEQUENCE_FUNCTIONS = (np.stack, np.array, np.asarray, np.concatenate, np.vstack)


def call(f, *args, **kwargs):
    """`f(*args, **kwargs)`, converting `f` first when it is user code (recursively, cached)."""
    builtin = _BUILTINS.get(f) if isinstance(f, types.BuiltinFunctionType) or isinstance(f, type) else None
    if builtin is not None:
        return builtin(*args, **kwargs)
    if any(f is g for g in _SEQUENCE_FUNCTIONS) and args and isinstance(args[0], (Tensor, TensorList)):
        t = args[0].stack() if isinstance(args[0], TensorList) else args[0]
        return _stack_like(f, t, dict(kwargs))
    built = graph.ops.numpy_api.constructor_call(f, args, kwargs)  # np.zeros(n), np.float32(t), ...
    if built is not NotImplemented:
        return built
    from transpile.errors import ConversionError
    try:
        target = _convert_callable(f)
    except ConversionError as e:
        return _call_unconverted(f, e, args, kwargs)
    if target is None:
        return f(*args, **kwargs)
    depth = getattr(_tls, "depth", None)
    if depth is None:
        depth = _tls.depth = {}
    key = getattr(f, "__code__", None) or getattr(getattr(f, "__func__", None), "__code__", None) or id(f)
    depth[key] = depth.get(key, 0) + 1
    try:
        if depth[key] > _MAX_RECURSION:
            raise StagingError(
                f"{getattr(f, '__qualname__', f)} calls itself more than {_MAX_RECURSION} levels deep while the "
                "graph is built: a recursion whose end depends on a graph tensor never ends when traced. "
                "Rewrite it as a loop (a while loop over tensors becomes a graph loop)")
        return target(*args, **kwargs)
    finally:
        depth[key] -= 1


def _call_unconverted(f, error, args, kwargs):
    try:
        return f(*args, **kwargs)
    except graph.errors.SymbolicBoolError as e:
        e.add_note(f"note: {getattr(f, '__qualname__', f)} runs unconverted: {error.bare_message}")
        raise


# --------------------------------------------------------------------------- builtins

def _graph_iterable(x) -> bool:
    return is_tensor(x) or isinstance(x, (GraphRange, TensorList, graph.TensorArray, GraphEnumerate, GraphZip))


def range_(*args):
    """`range(*args)`; with tensor bounds, a range a `for` loop iterates in the graph."""
    if not any(is_tensor(a) for a in args):
        return _py.range(*args)
    for a in args:
        kind = graph.convert(a).dtype.kind if is_tensor(a) else ("i" if isinstance(a, (int, np.integer)) else "f")
        if kind not in "iu":
            raise TypeError(f"range() needs integers, got {_describe(a)}")
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    elif len(args) == 2:
        (start, stop), step = args, 1
    else:
        start, stop, step = args
    return GraphRange(start, stop, step)


def len_(x):
    """`len(x)`: the static length when known, else a scalar tensor."""
    if isinstance(x, MaybeDefined):
        x = x.read()
    if isinstance(x, (TensorList, graph.TensorArray)):
        return x.size()
    if isinstance(x, GraphRange):
        return _RangeSource(x.start, x.stop, x.step).n()
    if is_tensor(x):
        t = graph.convert(x)
        if t.shape is not None and len(t.shape) == 0:
            raise TypeError(f"len() of a scalar tensor ({t.name})")
        if t.shape is not None and t.shape[0] is not None:
            return t.shape[0]
        return graph.shape(t)[0]
    return _py.len(x)


def enumerate_(iterable, start=0):
    """`enumerate(iterable, start)`."""
    if _graph_iterable(iterable):
        return GraphEnumerate(iterable, start)
    return _py.enumerate(iterable, start)


def zip_(*iterables, strict=False):
    """`zip(*iterables)`; over tensors, a graph loop iterates them together."""
    if any(_graph_iterable(x) for x in iterables):
        return GraphZip(iterables)
    return _py.zip(*iterables, strict=strict)


def abs_(x):
    """`abs(x)`."""
    return graph.abs(x) if is_tensor(x) else _py.abs(x)


def _extremum(py_fn, reduce_fn, pair_fn, args, kwargs):
    if kwargs or not any(is_tensor(a) for a in args):
        return py_fn(*args, **kwargs)
    if len(args) == 1:
        return reduce_fn(graph.convert(args[0]), axis=0)
    out = args[0]
    for a in args[1:]:
        out = pair_fn(out, a)
    return out


def min_(*args, **kwargs):
    """`min(...)`: of one tensor, over its first axis; of several values, elementwise."""
    return _extremum(_py.min, graph.reduce_min, graph.minimum, args, kwargs)


def max_(*args, **kwargs):
    """`max(...)`: of one tensor, over its first axis; of several values, elementwise."""
    return _extremum(_py.max, graph.reduce_max, graph.maximum, args, kwargs)


def sum_(iterable, start=0):
    """`sum(iterable, start)`: of a tensor, over its first axis."""
    if isinstance(iterable, TensorList):
        iterable = iterable.stack()
    if is_tensor(iterable):
        total = graph.reduce_sum(graph.convert(iterable), axis=0)
        return total + start if not (_is_weak(start) and start == 0) else total
    return _py.sum(iterable, start)


def _scalar_cast(x, dtype, what):
    t = graph.convert(x)
    if t.shape is not None and len(t.shape) and not all(d == 1 for d in t.shape):
        raise TypeError(f"{what}() of a tensor of shape {graph.shapes.format_shape(t.shape)}: only a tensor "
                        "with one element converts to a scalar")
    if t.shape != () and t.shape is not None:
        t = graph.reshape(t, ())
    return graph.cast(t, dtype)


def int_(x, *args):
    """`int(x)`: truncation toward zero, as an int64 tensor for a tensor."""
    return _scalar_cast(x, np.int64, "int") if is_tensor(x) and not args else _py.int(x, *args)


def float_(x=0.0):
    """`float(x)`: a float64 tensor for a tensor."""
    return _scalar_cast(x, np.float64, "float") if is_tensor(x) else _py.float(x)


def bool_(x=False):
    """`bool(x)`: a bool tensor for a tensor."""
    return _predicate(x, "bool()") if is_tensor(x) else _py.bool(x)


def isinstance_(obj, classinfo):
    """`isinstance(obj, classinfo)`; a tensor counts as the Python or numpy value it stands for."""
    if not isinstance(obj, Tensor):
        return _py.isinstance(obj, classinfo)
    classes = classinfo if isinstance(classinfo, tuple) else (classinfo,)
    return any(_tensor_is(obj, c) for c in classes)


def _tensor_is(t: Tensor, cls) -> bool:
    import numbers
    if _py.isinstance(t, cls):
        return True
    scalar = t.shape == ()
    kind = t.dtype.kind if t.dtype is not graph.dtypes.variant else "V"
    if cls is np.ndarray:
        return not scalar
    if not scalar:
        return False
    if cls is bool:
        return kind == "b"
    if cls is int:
        return kind in "biu"
    if cls is float:
        return t.dtype == np.float64
    if cls is complex:
        return kind == "c"
    if cls is numbers.Number:
        return kind in "biufc"
    if cls is numbers.Complex:
        return kind in "biufc"
    if cls is numbers.Real:
        return kind in "biuf"
    if cls is numbers.Integral:
        return kind in "biu"
    if _py.isinstance(cls, type) and issubclass(cls, np.generic):
        return np.issubdtype(t.dtype, cls)
    return False


_BUILTINS = {_py.range: range_, _py.len: len_, _py.enumerate: enumerate_, _py.zip: zip_, _py.abs: abs_,
             _py.min: min_, _py.max: max_, _py.sum: sum_, _py.int: int_, _py.float: float_, _py.bool: bool_,
             _py.print: print_, _py.isinstance: isinstance_}


# The object converted code calls `ag`.
namespace = types.SimpleNamespace(
    if_stmt=if_stmt, if_exp=if_exp, while_stmt=while_stmt, for_stmt=for_stmt,
    and_=and_, or_=or_, not_=not_,
    Undefined=Undefined, undefined_return=undefined_return, ld=ld, to_global=to_global,
    list_append=list_append, set_item=set_item, assert_stmt=assert_stmt, call=call, fstr=fstr, fmt=fmt,
    print=print_, range=range_, len=len_, enumerate=enumerate_, zip=zip_, abs=abs_, min=min_, max=max_,
    sum=sum_, int=int_, float=float_, bool=bool_, isinstance=isinstance_,
)
