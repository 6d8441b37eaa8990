"""Python operators and numpy-style methods on graph tensors (and on Variables, via their reads).

`+ - * / // % ** @` (and reflected), unary `- + abs ~`, comparisons, `& | ^`,
indexing, and methods such as `.T`, `.reshape`, `.sum(axis=)`, `.astype`,
`.clip`. `==` and `!=` build Equal / NotEqual like numpy; hashing stays by
identity so tensors remain usable as dict keys (e.g. in feed_dict).
"""
from __future__ import annotations

import numpy as _np

from graph import shapes as _sh
from graph.errors import SymbolicIndexError, SymbolicValueError
from graph.node import Tensor
from graph.ops import array as _array
from graph.ops import indexing as _indexing
from graph.ops import math as _math
from graph.ops import nn as _nn
from graph.ops import numpy_api as _numpy_api
from graph.ops import python_math as _python_math
from graph.ops import reduce as _reduce
from graph.ops import shape_ops as _shape_ops
from graph.ops.conversion import convert, convert_pair, python_number_type


def _forward(fn):
    def op(self, other):
        return fn(self, other)
    return op


def _reflected(fn):
    def op(self, other):
        return fn(other, self)
    return op


def _multiply(reflected: bool):
    """`*`, refusing a Python sequence times an integer scalar tensor: Python would repeat the sequence
    (`[0] * n`, n a Python int argument, which becomes such a tensor), numpy would multiply its items."""
    def op(self, other):
        x = convert(self)
        if isinstance(other, (list, tuple, str)) and x.shape == () and x.dtype.kind in "iu":
            raise SymbolicIndexError(
                f"{type(other).__name__} * {x.describe()} (an integer graph scalar): Python repeats a "
                "sequence an int number of times, numpy multiplies its items, and a graph scalar's value is "
                "only known when the graph runs. Write np.asarray(seq) * n to multiply the items, or make n "
                "a Python int (an argument named in transpile.function's static_argnames) to repeat it")
        return _math.mul(other, x) if reflected else _math.mul(x, other)
    return op


def _logical_or_bitwise(logical, bitwise):
    def build(a, b):
        a, b = convert_pair(a, b)
        if a.dtype.kind == "b" and b.dtype.kind == "b":
            return logical(a, b)
        return bitwise(a, b)
    return build


_and = _logical_or_bitwise(_math.logical_and, _math.bitwise_and)
_or = _logical_or_bitwise(_math.logical_or, _math.bitwise_or)
_xor = _logical_or_bitwise(_math.logical_xor, _math.bitwise_xor)


def _pow(self, other, modulo=None):
    if modulo is not None:
        raise TypeError("pow() with a modulus is not supported on graph tensors")
    return _math.pow(self, other)


def _invert(self):
    x = convert(self)
    return _math.logical_not(x) if x.dtype.kind == "b" else _math.invert(x)


def _eq(self, other):
    if other is None:
        return NotImplemented  # `t == None` is False, as for any object
    return _math.equal(self, other)


def _ne(self, other):
    if other is None:
        return NotImplemented
    return _math.not_equal(self, other)


def _setitem(self, key, value):
    raise SymbolicValueError(
        "graph tensors are immutable: `x[i] = v` cannot change one. Use `x = graph.set_item(x, i, v)` "
        "(a new tensor), `variable.assign_at(i, v)` for a Variable, or decorate the function with "
        "@transpile.function, which converts such assignments")


# --------------------------------------------------------------------------- numpy-style methods

def _shape_args(args):
    """`t.reshape(2, 3)` and `t.reshape((2, 3))` both mean shape (2, 3)."""
    if len(args) == 1 and (isinstance(args[0], (list, tuple)) or isinstance(args[0], Tensor)
                           or hasattr(args[0], "_as_graph_tensor")):
        return args[0]
    return args


def _reshape(self, *shape, order: str = "C"):
    if order != "C":
        raise ValueError("graph tensors only support C-order reshape")
    return _array.reshape(self, _shape_args(shape))


def _transpose(self, *axes):
    axes = _shape_args(axes) if axes else None
    return _array.transpose(self, axes)


def _astype(self, dtype, copy: bool = True):
    return _math.cast(self, dtype)


def _method(fn):
    def method(self, axis=None, dtype=None, out=None, keepdims=False):
        if out is not None:
            raise TypeError(f"{fn.__name__}(out=...) is not supported on graph tensors; use the returned tensor")
        return fn(self, axis, keepdims, dtype) if dtype is not None else fn(self, axis, keepdims)
    method.__name__ = fn.__name__
    return method


def _arg_method(fn):
    def method(self, axis=None, out=None, keepdims=False):
        if out is not None:
            raise TypeError(f"{fn.__name__}(out=...) is not supported on graph tensors; use the returned tensor")
        return fn(self, axis, keepdims)
    return method


def _minmax_method(fn):
    def method(self, axis=None, out=None, keepdims=False):
        if out is not None:
            raise TypeError(f"{fn.__name__}(out=...) is not supported on graph tensors; use the returned tensor")
        return fn(self, axis, keepdims)
    return method


def _clip(self, min=None, max=None):
    return _nn.clip(self, min, max)


def _round(self, decimals=0, out=None):
    return _numpy_api.round_(self, decimals, out)


def _round_builtin(self, ndigits=None):
    """`round(t)` and `round(t, n)` of a graph scalar: an int64 for `round(t)` (half to even, as Python and numpy),
    and to n decimals as the number t stands for rounds: a Python float as Python does (correctly: round(1.85, 1)
    is 1.9), a numpy scalar as numpy does (scaled: np.round(1.85, 1) is 1.8). numpy's arrays define no round(),
    and nor does a tensor of rank >= 1."""
    x = convert(self)
    if x.ndim:
        raise TypeError(f"round() of {x._typed()}: numpy arrays do not define round(); use np.round(t, decimals)")
    if ndigits is None:
        return _math.cast(_numpy_api.round_(x), _np.int64) if x.dtype.kind == "f" else x
    if x.dtype.kind == "f" and python_number_type(x) is float:
        return _python_math.python_round(x, ndigits)
    return _numpy_api.round_(x, ndigits)


def _item(self, *args):
    """`t.item()`: the one element of t as a graph scalar (its value exists only when the graph runs);
    `t.item(i)` the element at flat index i, `t.item(i, j)` at index (i, j)."""
    x = convert(self)
    if len(args) > 1:
        return _indexing.getitem(x, tuple(args))
    if args:
        return _indexing.getitem(_array.reshape(x, [-1]), args[0])
    n = _sh.num_elements(x.shape)
    if n is not None and n != 1:
        raise ValueError(f"t.item() of {x._typed()}: can only convert an array of size 1 to a scalar (as numpy)")
    return x if x.shape == () else _array.reshape(x, [])


_TOLIST_LIMIT = 64


def _tolist(self):
    """`t.tolist()`: nested Python lists of graph scalars, for a tensor of known and small shape; a 0-d
    tensor gives itself (numpy gives the Python number). Other tensors: a clear error."""
    x = convert(self)
    n = _sh.num_elements(x.shape)
    if n is None or n > _TOLIST_LIMIT:
        raise SymbolicValueError(
            f"t.tolist() of {x._typed()}: a Python list of its elements needs their number when the graph is built "
            f"(a known shape of at most {_TOLIST_LIMIT} elements). Index the tensor (t[i]), use graph.unstack or "
            "np.split, or run the graph and call .tolist() on the value it returns")
    return _nested_items(x, ())


def _nested_items(x, index):
    if len(index) == len(x.shape):
        return _indexing.getitem(x, index) if index else x
    return [_nested_items(x, (*index, i)) for i in range(x.shape[len(index)])]


def _dot(self, other):
    return _numpy_api.dot(self, other)


def _size(self):
    """`t.size`: the number of elements, a Python int when the shape is known, else a scalar tensor."""
    n = _sh.num_elements(self.shape)
    return n if n is not None else _shape_ops.size(self)


def _flatten(self, order: str = "C"):
    if order != "C":
        raise ValueError("graph tensors only support C-order flatten")
    return _array.reshape(self, [-1])


def _var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    x = self if dtype is None else _math.cast(self, dtype)
    return _reduce.var(x, axis, keepdims, ddof)


def _std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    x = self if dtype is None else _math.cast(self, dtype)
    return _reduce.std(x, axis, keepdims, ddof)


OPERATORS = {
    "__add__": _forward(_math.add), "__radd__": _reflected(_math.add),
    "__sub__": _forward(_math.sub), "__rsub__": _reflected(_math.sub),
    "__mul__": _multiply(reflected=False), "__rmul__": _multiply(reflected=True),
    "__truediv__": _forward(_math.truediv), "__rtruediv__": _reflected(_math.truediv),
    "__floordiv__": _forward(_math.floordiv), "__rfloordiv__": _reflected(_math.floordiv),
    "__mod__": _forward(_math.mod), "__rmod__": _reflected(_math.mod),
    "__divmod__": lambda a, b: (_math.floordiv(a, b), _math.mod(a, b)),
    "__rdivmod__": lambda a, b: (_math.floordiv(b, a), _math.mod(b, a)),
    "__pow__": _pow, "__rpow__": _reflected(_math.pow),
    "__matmul__": _forward(_math.matmul), "__rmatmul__": _reflected(_math.matmul),
    "__and__": _forward(_and), "__rand__": _reflected(_and),
    "__or__": _forward(_or), "__ror__": _reflected(_or),
    "__xor__": _forward(_xor), "__rxor__": _reflected(_xor),
    "__lt__": _forward(_math.less), "__le__": _forward(_math.less_equal),
    "__gt__": _forward(_math.greater), "__ge__": _forward(_math.greater_equal),
    "__eq__": _eq, "__ne__": _ne,
    "__neg__": lambda self: _math.neg(self), "__pos__": lambda self: convert(self),
    "__abs__": lambda self: _math.abs(self), "__invert__": _invert,
    "__getitem__": lambda self, key: _indexing.getitem(self, key), "__setitem__": _setitem,
    "__round__": _round_builtin,
}

METHODS = {
    "T": property(lambda self: _array.transpose(self)),
    "size": property(_size),
    "reshape": _reshape, "transpose": _transpose, "astype": _astype,
    "flatten": _flatten, "ravel": _flatten,
    "squeeze": lambda self, axis=None: _array.squeeze(self, axis),
    "sum": _method(_reduce.reduce_sum), "mean": _method(_reduce.reduce_mean),
    "prod": _method(_reduce.reduce_prod),
    "max": _minmax_method(_reduce.reduce_max), "min": _minmax_method(_reduce.reduce_min),
    "any": _minmax_method(_reduce.reduce_any), "all": _minmax_method(_reduce.reduce_all),
    "argmax": _arg_method(_reduce.argmax), "argmin": _arg_method(_reduce.argmin),
    "var": _var, "std": _std,
    "dot": _dot, "clip": _clip, "round": _round,
    "copy": lambda self: convert(self), "item": _item, "tolist": _tolist,
    # what np.cumsum(t) etc. build (graph.ops.numpy_api); `sort` is left out: ndarray.sort sorts in place
    "cumsum": _numpy_api.cumsum, "cumprod": _numpy_api.cumprod, "argsort": _numpy_api.argsort,
}


def install(cls, methods: bool = True) -> None:
    """Puts the operators (and, unless told otherwise, the numpy-style methods) on `cls`."""
    for name, fn in OPERATORS.items():
        setattr(cls, name, fn)
    if methods:
        for name, fn in METHODS.items():
            setattr(cls, name, fn)
    cls.__hash__ = object.__hash__  # defining __eq__ must not make tensors unhashable


install(Tensor)

__all__: list[str] = []
