"""Python's builtins that accept tensors (`len`, `abs`, `min`, `max`, `sum`, `int`, `float`, `bool`,
`isinstance`), and the map from each builtin to its tensor-aware version."""
from __future__ import annotations

import builtins
import numbers

import numpy as np

import graph
from graph.node import Tensor
from transpile.operators.arrays import MutableArray
from transpile.operators.data_structures import TensorList, list_truth
from transpile.operators.formatting import format_, repr_, str_
from transpile.operators.graph_lists import GraphList
from transpile.operators.iterables import GraphRange, RangeSource, enumerate_, range_, zip_
from transpile.operators.leaves import is_tensor, is_weak, mark_weak_type
from transpile.operators.staging import predicate
from transpile.operators.statements import print_
from transpile.operators.values import MaybeDefined


def len_(x):
    """`len(x)`: the static length when known, else a scalar tensor."""
    if isinstance(x, MaybeDefined):
        x = x.read()
    if isinstance(x, (TensorList, GraphList, graph.TensorArray)):
        return x.size()
    if isinstance(x, GraphRange):
        return RangeSource(x.start, x.stop, x.step).n()
    if is_tensor(x):
        t = graph.convert(x)
        if t.shape is not None and len(t.shape) == 0:
            raise TypeError(f"len() of a scalar: {t.describe()} has shape []")
        if t.shape is not None and t.shape[0] is not None:
            return t.shape[0]
        return graph.shape(t)[0]
    return builtins.len(x)


def abs_(x):
    """`abs(x)`."""
    return graph.abs(x) if is_tensor(x) else builtins.abs(x)


def _extremum(py_fn, reduce_fn, pair_fn, args, kwargs):
    args = tuple(a.items if isinstance(a, GraphList) else a for a in args)
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
    return _extremum(builtins.min, graph.reduce_min, graph.minimum, args, kwargs)


def max_(*args, **kwargs):
    """`max(...)`: of one tensor, over its first axis; of several values, elementwise."""
    return _extremum(builtins.max, graph.reduce_max, graph.maximum, args, kwargs)


def sum_(iterable, start=0):
    """`sum(iterable, start)`: of a tensor, over its first axis."""
    if isinstance(iterable, TensorList):
        iterable = iterable.stack()
    if isinstance(iterable, GraphList):
        iterable = iterable.items
    if is_tensor(iterable):
        total = graph.reduce_sum(graph.convert(iterable), axis=0)
        return total + start if not (is_weak(start) and start == 0) else total
    return builtins.sum(iterable, start)


def _scalar_cast(x, dtype, what):
    t = graph.convert(x)
    if t.shape is not None and len(t.shape) and not all(d == 1 for d in t.shape):
        raise TypeError(f"{what}() of a tensor of shape {graph.shapes.format_shape(t.shape)}: only a tensor "
                        "with one element converts to a scalar")
    if t.shape != () and t.shape is not None:
        t = graph.reshape(t, ())
    return graph.cast(t, dtype)


def int_(x, *args):
    """`int(x)`: truncation toward zero, as an int64 tensor for a tensor (one that stands for a Python
    int: weak beside arrays, as the int is)."""
    if is_tensor(x) and not args:
        return _python_number(_scalar_cast(x, np.int64, "int"), int)
    return builtins.int(x, *args)


def float_(x=0.0):
    """`float(x)`: a float64 tensor for a tensor (one that stands for a Python float)."""
    return _python_number(_scalar_cast(x, np.float64, "float"), float) if is_tensor(x) else builtins.float(x)


def bool_(x=False):
    """`bool(x)`: a bool tensor for a tensor (one that stands for a Python bool)."""
    x = list_truth(x)
    return _python_number(predicate(x, "bool()"), bool) if is_tensor(x) else builtins.bool(x)


def _python_number(t: Tensor, kind: type) -> Tensor:
    mark_weak_type(t, kind)
    return t


def isinstance_(obj, classinfo):
    """`isinstance(obj, classinfo)`; a tensor counts as the Python or numpy value it stands for, and an
    array of converted code (a MutableArray) as a numpy array."""
    if isinstance(obj, MutableArray):
        classes = classinfo if isinstance(classinfo, tuple) else (classinfo,)
        return any(c is np.ndarray or builtins.isinstance(obj, c) for c in classes)
    if not isinstance(obj, Tensor):
        return builtins.isinstance(obj, classinfo)
    classes = classinfo if isinstance(classinfo, tuple) else (classinfo,)
    return any(_tensor_is(obj, c) for c in classes)


def _tensor_is(t: Tensor, cls) -> bool:
    if builtins.isinstance(t, cls):
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
    if builtins.isinstance(cls, type) and issubclass(cls, np.generic):
        return np.issubdtype(t.dtype, cls)
    return False


# Each builtin with a tensor-aware version, for calls that reach one through a value (`f = len; f(x)`):
# converted code calls the versions by name (`ag.len(x)`).
BUILTIN_FUNCTIONS = {builtins.range: range_, builtins.len: len_, builtins.enumerate: enumerate_,
                     builtins.zip: zip_, builtins.abs: abs_, builtins.min: min_, builtins.max: max_,
                     builtins.sum: sum_, builtins.int: int_, builtins.float: float_, builtins.bool: bool_,
                     builtins.print: print_, builtins.isinstance: isinstance_, builtins.str: str_,
                     builtins.repr: repr_, builtins.format: format_}
