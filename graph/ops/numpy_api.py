"""numpy interop: ufuncs and common numpy functions applied to graph tensors build graph ops.

`np.tanh(t)`, `np.sum(t, axis=1)`, `np.where(c, a, b)`, `np.concatenate([t, u])`
go through `Tensor.__array_ufunc__` / `__array_function__` (NEP 13 / NEP 18),
so numpy-style code runs unchanged on tensors. Anything else raises a TypeError
naming the function and listing what is supported.
"""
from __future__ import annotations

import numpy as np

from graph import shapes as _sh
from graph.errors import SymbolicValueError, UnsupportedError
from graph.node import Tensor
from graph.ops import along_axis as L
from graph.ops import array as A
from graph.ops import creation as C
from graph.ops import einsum as E
from graph.ops import indexing as I
from graph.ops import math as M
from graph.ops import nn as N
from graph.ops import numpy_arrays, numpy_linalg, numpy_stats, python_math
from graph.ops import padding as P
from graph.ops import reduce as R
from graph.ops import shape_ops as S
from graph.ops import ufuncs as U
from graph.ops.axes import normalize_axis
from graph.ops.conversion import convert, convert_pair
from graph.ops.numpy_call import EFFECTS, STATIC_QUERIES, numpy_call, qualified_name, static_query


def _same_values(ufunc):
    """np.positive, and np.conjugate of real values: x itself, in numpy's dtype for it (a TypeError where numpy
    has none: np.positive of bools); np.conjugate of complex values is numpy's."""
    def impl(x):
        x = convert(x)
        if x.dtype.kind == "c":
            return numpy_call(ufunc, x)
        return M.cast(x, M._ufunc_dtype(ufunc, x.dtype))
    return impl


UFUNCS = {
    np.add: M.add, np.subtract: M.sub, np.multiply: M.mul, np.true_divide: M.truediv,
    np.floor_divide: M.floordiv, np.remainder: M.mod, np.power: M.pow, np.maximum: M.maximum,
    np.minimum: M.minimum, np.arctan2: M.atan2, np.equal: M.equal, np.not_equal: M.not_equal,
    np.less: M.less, np.less_equal: M.less_equal, np.greater: M.greater, np.greater_equal: M.greater_equal,
    np.logical_and: M.logical_and, np.logical_or: M.logical_or, np.logical_xor: M.logical_xor,
    np.bitwise_and: M.bitwise_and, np.bitwise_or: M.bitwise_or, np.bitwise_xor: M.bitwise_xor,
    np.negative: M.neg, np.positive: _same_values(np.positive), np.absolute: M.abs, np.exp: M.exp,
    np.log: M.log, np.sqrt: M.sqrt, np.square: M.square, np.tanh: M.tanh, np.sign: M.sign,
    np.floor: M.floor, np.ceil: M.ceil, np.rint: M.round, np.sin: M.sin, np.cos: M.cos,
    np.log1p: M.log1p, np.expm1: M.expm1, np.reciprocal: M.reciprocal, np.logical_not: M.logical_not,
    np.invert: M.invert, np.isnan: M.isnan, np.isfinite: M.isfinite, np.matmul: M.matmul,
    **U.UFUNCS, **numpy_linalg.UFUNCS,
    np.conjugate: _same_values(np.conjugate),
    np.divmod: lambda a, b: (M.floordiv(a, b), M.mod(a, b)),
}
# ufunc methods as graph ops where they are one (else NumpyCall): impl(ufunc, inputs, kwargs) -> tensor or None
UFUNC_METHODS = {
    "reduce": lambda ufunc, inputs, kwargs: U.ufunc_reduce(U.REDUCTIONS.get(ufunc), inputs, kwargs),
    "accumulate": U.ufunc_accumulate,
    "outer": lambda ufunc, inputs, kwargs: None if ufunc not in UFUNCS else U.ufunc_outer(UFUNCS[ufunc], inputs,
                                                                                        kwargs),
}


def _np_name(func) -> str:
    module = getattr(func, "__module__", None) or "numpy"
    prefix = "np" + module[len("numpy"):] if module.startswith("numpy") else module
    return f"{prefix}.{func.__name__}"


def _no_out(name, out):
    if out is not None:
        raise UnsupportedError(f"{name}(..., out=...) is not supported on graph tensors: graph values are "
                               "immutable; use the returned tensor")


_MISSING = object()

# Called as hook(array, ufunc) before numpy array `array` is rebound to the result of an in-place
# ufunc it cannot hold (`a += t`): a library tracing user code (transpile) can refuse it there, where
# other references to the array would keep its old contents.
IN_PLACE_REBIND_HOOKS: list = []


def _unsupported_kwargs(name, kwargs, allowed_defaults):
    for k, v in kwargs.items():
        if not _is_default(v, allowed_defaults.get(k, _MISSING)):
            raise UnsupportedError(f"{name}: argument {k}={v!r} is not supported on graph tensors")


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    name = _np_name(ufunc)
    out = kwargs.pop("out", None)
    if out is not None and _writes_elsewhere(out):
        return NotImplemented
    if out is not None and any(o is not None for o in out):
        if method == "__call__" and len(out) == 1 and isinstance(out[0], np.ndarray) and inputs \
                and out[0] is inputs[0]:
            # `a += t` on a numpy array `a`: it cannot hold a graph value, so `a` is rebound to the result
            for hook in IN_PLACE_REBIND_HOOKS:
                hook(out[0], ufunc)
            return _in_place_result(array_ufunc(self, ufunc, method, *inputs, **kwargs), out[0], name)
        _no_out(name, out)
    if method == "__call__":
        return _ufunc_call(ufunc, name, inputs, kwargs)
    if method == "at":
        raise UnsupportedError(f"{name}.at writes into its first argument in place, and graph values are immutable: "
                               "compute the new value as a tensor (for np.add.at(a, i, v): a = graph.add_at(a, i, v))")
    method_impl = UFUNC_METHODS.get(method)
    native = None if method_impl is None else method_impl(ufunc, inputs, kwargs)
    if native is not None:
        return native
    return numpy_call(getattr(ufunc, method), *inputs, **kwargs)


def _ufunc_call(ufunc, name, inputs, kwargs):
    """`ufunc(*inputs)`: its graph op, or numpy's ufunc itself on the values (NumpyCall)."""
    if kwargs.get("where", True) is not True:
        raise UnsupportedError(f"{name}(..., where=...) without out= leaves the other elements uninitialized in "
                               "numpy; use np.where(mask, ufunc(x), other) on graph tensors")
    builder = UFUNCS.get(ufunc)
    if builder is None or not _defaults_only(kwargs, _UFUNC_DEFAULTS):
        return numpy_call(ufunc, *inputs, **kwargs)
    dtype = kwargs.get("dtype")
    if dtype is not None:
        inputs = [M.cast(convert(x), dtype) for x in inputs]
    return builder(*inputs)


_UFUNC_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "where": True, "dtype": None}


def _defaults_only(kwargs, defaults) -> bool:
    """Whether every keyword argument is one of `defaults` with its default value (dtype: any)."""
    return all(k in defaults and (k == "dtype" or _is_default(v, defaults[k])) for k, v in kwargs.items())


def _is_default(value, default) -> bool:
    return value is default or (isinstance(value, (bool, int, float, str)) and type(value) is type(default)
                                and value == default)


def _in_place_result(result: Tensor, array: np.ndarray, name: str) -> Tensor:
    """The result of an in-place operation on numpy array `array`, with its dtype (numpy's same-kind
    casting) and shape."""
    if result.dtype != array.dtype:
        if not np.can_cast(result.dtype, array.dtype, "same_kind"):
            raise TypeError(f"{name}(..., out=...): cannot cast the result from {result.dtype} to the array's "
                            f"dtype {array.dtype} with casting rule 'same_kind' (as numpy)")
        result = M.cast(result, array.dtype)
    if result.shape != array.shape:
        result = A.broadcast_to(result, array.shape)
    return result


# --------------------------------------------------------------------------- numpy functions

def _reduction(builder, has_dtype=True):
    def impl(a, axis=None, *args, out=None, keepdims=False, dtype=None, **kwargs):
        if args:  # positional dtype / out, as numpy's signatures allow
            if has_dtype:
                dtype, *args = args
            if args:
                out = args[0]
        _no_out(builder.__name__, out)
        _unsupported_kwargs(f"np.{builder.__name__}", kwargs, {"where": True})
        if has_dtype and dtype is not None:
            return builder(a, axis, keepdims, dtype)
        return builder(a, axis, keepdims)
    return impl


def _arg(builder):
    def impl(a, axis=None, out=None, *, keepdims=False):
        _no_out(builder.__name__, out)
        return builder(a, axis, keepdims)
    return impl


def _stat(builder):
    def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
        _no_out(builder.__name__, out)
        _unsupported_kwargs(f"np.{builder.__name__}", kwargs, {"where": True})
        x = convert(a) if dtype is None else M.cast(a, dtype)
        return builder(x, axis, keepdims, ddof)
    return impl


def dot(a, b, out=None) -> Tensor:
    """`np.dot` for scalars, vectors and matrices (where it equals matmul or multiplication)."""
    _no_out("np.dot", out)
    a, b = convert_pair(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return M.mul(a, b)
    if a.ndim is None or b.ndim is None or a.ndim > 2 or b.ndim > 2:
        raise TypeError("np.dot on graph tensors supports operands of rank <= 2 (of known rank); "
                        "use np.matmul / @ for batched products")
    return M.matmul(a, b)


def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _no_out("np.concatenate", out)
    ts = [convert(a) for a in arrays]
    if axis is None:
        ts = [A.reshape(t, [-1]) for t in ts]
        axis = 0
    if dtype is not None:
        ts = [M.cast(t, dtype) for t in ts]
    return A.concat(ts, axis)


def _stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _no_out("np.stack", out)
    ts = [convert(a) for a in arrays]
    if dtype is not None:
        ts = [M.cast(t, dtype) for t in ts]
    return A.stack(ts, axis)


def _stack_rows(arrays, dtype=None, casting="same_kind"):
    """`np.vstack`: 1-D arrays become rows (scalars 1x1), then concatenated along the first axis."""
    ts = [convert(a) for a in arrays]
    if any(t.ndim is None for t in ts):
        raise UnsupportedError("np.vstack needs graph tensors of known rank")
    ts = [A.reshape(t, [1, 1]) if t.ndim == 0 else A.reshape(t, [1, -1]) if t.ndim == 1 else t for t in ts]
    return A.concat([M.cast(t, dtype) if dtype is not None else t for t in ts], 0)


def _stack_columns(arrays, dtype=None, casting="same_kind"):
    """`np.hstack`: 1-D arrays (scalars as 1-D) are concatenated, others along their second axis."""
    ts = [convert(a) for a in arrays]
    if any(t.ndim is None for t in ts):
        raise UnsupportedError("np.hstack needs graph tensors of known rank")
    ts = [A.reshape(t, [1]) if t.ndim == 0 else t for t in ts]
    ts = [M.cast(t, dtype) if dtype is not None else t for t in ts]
    return A.concat(ts, 0 if all(t.ndim == 1 for t in ts) else 1)


def _flip(m, axis=None):
    """`np.flip`: the items of the given axes (all without `axis`) in reverse order."""
    t = convert(m)
    if t.ndim is None:
        raise UnsupportedError("np.flip needs a graph tensor of known rank")
    axes = range(t.ndim) if axis is None else [normalize_axis(a, t.shape) for a in
                                               (axis if isinstance(axis, (tuple, list)) else (axis,))]
    return I.getitem(t, tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(t.ndim)))


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C":
        raise TypeError("np.reshape on graph tensors supports only order='C'")
    return A.reshape(a, shape if shape is not None else newshape)


def _like(builder):
    def impl(a, dtype=None, order="K", subok=True, shape=None, **kwargs):
        if shape is not None:
            return builder(shape, dtype if dtype is not None else convert(a).dtype)
        return (C.zeros_like if builder is C.zeros else C.ones_like)(a, dtype)
    return impl


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    if shape is not None:
        return C.fill(shape, fill_value, dtype if dtype is not None else convert(a).dtype)
    return C.full_like(a, fill_value, dtype)


def _clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    _no_out("np.clip", out)
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    return N.clip(a, lo, hi)


def _take(a, indices, axis=None, out=None, mode="raise"):
    _no_out("np.take", out)
    if mode != "raise":
        raise TypeError(f"np.take(mode={mode!r}) is not supported on graph tensors")
    if axis is None:
        return A.gather(A.reshape(a, [-1]), indices, 0)
    return A.gather(a, indices, axis)


def _shape(a):
    t = convert(a)
    return t.shape if _sh.is_fully_defined(t.shape) else S.shape(t)


def _size(a, axis=None):
    t = convert(a)
    if axis is not None:
        return _shape(t)[axis] if _sh.is_fully_defined(t.shape) else S.shape(t)[axis]
    n = _sh.num_elements(t.shape)
    return n if n is not None else S.size(t)


def _ndim(a):
    t = convert(a)
    if t.ndim is None:
        raise SymbolicValueError(f"np.ndim of {t.describe()}: its rank is unknown when the graph is built; "
                                "use graph.rank(t)")
    return t.ndim


def _swapaxes(a, axis1, axis2):
    t = convert(a)
    if t.ndim is None:
        raise TypeError("np.swapaxes needs a graph tensor of known rank")
    perm = list(range(t.ndim))
    i, j = normalize_axis(axis1, t.shape), normalize_axis(axis2, t.shape)
    perm[i], perm[j] = perm[j], perm[i]
    return A.transpose(t, perm)


def _moveaxis(a, source, destination):
    t = convert(a)
    if t.ndim is None:
        raise TypeError("np.moveaxis needs a graph tensor of known rank")
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [normalize_axis(s, t.shape) for s in src]
    dst = [normalize_axis(d, t.shape) for d in dst]
    order = [i for i in range(t.ndim) if i not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return A.transpose(t, order)


def _outer(a, b, out=None):
    _no_out("np.outer", out)
    return M.mul(A.reshape(a, [-1, 1]), A.reshape(b, [1, -1]))


def round_(a, decimals=0, out=None):
    """`np.round(a, decimals)`: numpy's rounding (half to even), integers kept integral."""
    _no_out("np.round", out)
    a = convert(a)
    if a.dtype.kind == "b" and decimals != 0:
        raise TypeError(f"np.round of booleans with decimals={decimals}: numpy cannot cast the scaled result back to "
                        "bool; round a numeric array (t.astype(float))")
    if a.dtype.kind in "iu":  # numpy keeps integers: unchanged, or rounded to tens, hundreds, ...
        if decimals >= 0:
            return a
        scale = 10.0 ** -decimals
        return M.cast(M.mul(M.round(M.truediv(a, scale)), scale), a.dtype)
    if decimals > 0:  # numpy's: x * 10^d, rounded half to even, / 10^d (the reverse for d < 0)
        scale = 10.0 ** decimals
        return M.truediv(M.round(M.mul(a, scale)), scale)
    if decimals < 0:
        scale = 10.0 ** -decimals
        return M.mul(M.round(M.truediv(a, scale)), scale)
    return M.round(a)


def _count_nonzero(a, axis=None, *, keepdims=False):
    return R.reduce_sum(M.cast(M.not_equal(a, 0), np.int64), axis, keepdims)


def _where(condition, x=_MISSING, y=_MISSING):
    if x is _MISSING and y is _MISSING:  # np.nonzero(condition): how many, only the values tell
        return numpy_call(np.where, condition)
    if x is _MISSING or y is _MISSING:
        raise ValueError("either both or neither of x and y should be given")
    return A.where(condition, x, y)


def _pad(array, pad_width, mode="constant", **kwargs):
    constant_values = kwargs.pop("constant_values", 0)
    _unsupported_kwargs(f"np.pad(mode={mode!r})", kwargs, {"reflect_type": "even"})
    return P.pad(array, pad_width, mode, constant_values)


def _einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    _no_out("np.einsum", out)
    return E.einsum(*operands, dtype=dtype, casting=casting, optimize=optimize)


def _cumulative(builder, name):
    def impl(a, axis=None, dtype=None, out=None):
        _no_out(name, out)
        return builder(a, axis, dtype)
    return impl


cumsum = _cumulative(L.cumsum, "np.cumsum")
cumprod = _cumulative(L.cumprod, "np.cumprod")


def _sorting(builder, name):
    def impl(a, axis=-1, kind=None, order=None, *, stable=None):
        if order is not None:
            raise UnsupportedError(f"{name}(order=...) sorts structured arrays; graph tensors have no fields")
        if stable:
            kind = "stable"
        return builder(a, axis, kind)
    return impl


argsort = _sorting(L.argsort, "np.argsort")


FUNCTIONS = {
    np.sum: _reduction(R.reduce_sum), np.mean: _reduction(R.reduce_mean), np.prod: _reduction(R.reduce_prod),
    np.max: _reduction(R.reduce_max, False), np.min: _reduction(R.reduce_min, False),
    np.amax: _reduction(R.reduce_max, False), np.amin: _reduction(R.reduce_min, False),
    np.any: _reduction(R.reduce_any, False), np.all: _reduction(R.reduce_all, False),
    np.argmax: _arg(R.argmax), np.argmin: _arg(R.argmin),
    np.var: _stat(R.var), np.std: _stat(R.std),
    np.dot: dot, np.where: _where, np.concatenate: _concatenate, np.stack: _stack, np.vstack: _stack_rows,
    np.hstack: _stack_columns, np.flip: _flip,
    np.reshape: _reshape, np.transpose: lambda a, axes=None: A.transpose(a, axes),
    np.expand_dims: lambda a, axis: A.expand_dims(a, axis),
    np.squeeze: lambda a, axis=None: A.squeeze(a, axis),
    np.zeros_like: _like(C.zeros), np.ones_like: _like(C.ones), np.full_like: _full_like,
    np.clip: _clip, np.take: _take, np.tile: lambda A_, reps: A.tile(A_, reps),
    np.broadcast_to: lambda array, shape, subok=False: A.broadcast_to(array, shape),
    np.shape: _shape, np.size: _size, np.ndim: _ndim,
    np.split: lambda ary, indices_or_sections, axis=0: A.split(ary, indices_or_sections, axis),
    np.ravel: lambda a, order="C": A.reshape(a, [-1]), np.copy: lambda a, order="K", subok=False: convert(a),
    np.swapaxes: _swapaxes, np.moveaxis: _moveaxis, np.outer: _outer,
    np.round: round_, np.around: round_, np.count_nonzero: _count_nonzero,
    np.pad: _pad, np.einsum: _einsum,
    np.cumsum: cumsum, np.cumprod: cumprod, np.sort: _sorting(L.sort, "np.sort"), np.argsort: argsort,
    **numpy_arrays.FUNCTIONS, **numpy_linalg.FUNCTIONS, **numpy_stats.FUNCTIONS,
}


# --------------------------------------------------------------------------- constructors
# numpy functions that make arrays from shapes, bounds or nested lists do not dispatch on tensor
# arguments (NEP 18 covers array arguments only), so `np.zeros(n)` with a tensor `n` cannot reach
# the graph by itself: converted code routes such calls through `constructor_call`.

def _from_object(obj, dtype=None, copy=True, order="K", ndmin=0, **kwargs):
    _unsupported_kwargs("np.array", kwargs, {"subok": False, "like": None})
    t = convert(obj)  # a nested list holding tensors is stacked (numpy's promotion)
    if ndmin > (t.ndim or 0):
        t = A.reshape(t, [1] * (ndmin - t.ndim) + [-1 if d is None else d for d in t.shape])
    return M.cast(t, dtype) if dtype is not None else t


def _filled(value):
    def impl(shape, dtype=float, order="C", **kwargs):
        _unsupported_kwargs("np.zeros", kwargs, {"like": None})
        return C.fill(shape, np.zeros((), dtype if dtype is not None else float) + value)
    return impl


def _full(shape, fill_value, dtype=None, order="C", **kwargs):
    _unsupported_kwargs("np.full", kwargs, {"like": None})
    return C.fill(shape, fill_value, dtype)


def _arange(*args, dtype=None, like=None, **kwargs):
    names = ("start", "stop", "step")
    if len(args) > 3 or any(k not in names for k in kwargs):
        raise TypeError("np.arange on graph tensors takes start, stop, step and dtype")
    bounds = dict(zip(names if len(args) > 1 else ("stop",), args)) | kwargs
    return C.range(bounds.get("start", 0), bounds["stop"], bounds.get("step", 1), dtype=dtype)


def _eye(N, M=None, k=0, dtype=float, order="C", **kwargs):
    if M is not None or k != 0 or kwargs:
        raise TypeError("np.eye with a graph tensor size supports only np.eye(n, dtype=...)")
    return C.one_hot(C.range(N), N, dtype=dtype)


def _scalar_type(dtype):
    return lambda x=0: M.cast(convert(x), dtype)


CONSTRUCTORS = {
    np.array: _from_object, np.asarray: _from_object, np.asanyarray: _from_object,
    np.ascontiguousarray: _from_object,
    np.zeros: _filled(0), np.ones: _filled(1), np.empty: _filled(0), np.full: _full,
    np.arange: _arange, np.eye: _eye,
    **{t: _scalar_type(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                    np.uint32, np.uint64, np.float16, np.float32, np.float64)},
}


def constructor_call(func, args, kwargs):
    """`func(*args, **kwargs)` as graph ops where numpy's dispatch cannot route the call to the graph by
    itself (NotImplemented elsewhere): a numpy constructor given a tensor (`np.zeros(n)`), a numpy
    function whose array argument is a list or tuple holding tensors (`np.sum([a, b])`), or a function of
    Python's math module given a graph scalar (`math.exp(t)`, graph/ops/python_math.py)."""
    if func in python_math.RESULT_TYPES:  # math.exp(t): math's functions call float() on their arguments
        return python_math.math_call(func, args, kwargs)
    impl = CONSTRUCTORS.get(func)
    if impl is None:
        return list_call(func, args, kwargs)
    if not any(_holds_tensor(v) for v in (*args, *kwargs.values())):
        return NotImplemented
    return impl(*args, **kwargs)


# functions of a sequence of arrays: numpy's dispatch sees the tensors in it (NEP 18)
_OF_SEQUENCES = frozenset({np.concatenate, np.stack, np.vstack, np.hstack})


def list_call(func, args, kwargs):
    """`func(*args, **kwargs)` for a numpy function of FUNCTIONS whose array argument (the first) is a
    list or tuple holding tensors: the list becomes a tensor as `np.asarray` would make it an array (the
    items stacked, numpy's dtype promotion); NotImplemented for any other call. numpy's dispatch looks
    for tensors in the array arguments, not inside lists, and would ask each tensor for an array."""
    impl = FUNCTIONS.get(func)
    if impl is None or not args or not isinstance(args[0], (list, tuple)) or not _holds_tensor(args[0]):
        return NotImplemented
    if func in _OF_SEQUENCES:
        return impl(*args, **kwargs)
    return impl(convert(args[0]), *args[1:], **kwargs)


def _holds_tensor(v) -> bool:
    if isinstance(v, Tensor) or hasattr(v, "_as_graph_tensor"):
        return True
    return isinstance(v, (list, tuple)) and any(_holds_tensor(x) for x in v)


def _writes_elsewhere(out) -> bool:
    """Whether an out= argument is an array of another kind that handles numpy calls itself (NEP 13/18:
    numpy then asks it, when this type returns NotImplemented)."""
    outs = out if isinstance(out, tuple) else (out,)
    return any(o is not None and not isinstance(o, (Tensor, np.ndarray)) and hasattr(type(o), "__array_function__")
               for o in outs)


def array_function(self, func, types, args, kwargs):
    if _writes_elsewhere(kwargs.get("out")):
        return NotImplemented
    impl = FUNCTIONS.get(func)
    if impl is not None:
        return impl(*args, **kwargs)
    qualname, _ = qualified_name(func)
    if qualname in EFFECTS:
        raise UnsupportedError(_effect_message(_np_name(func)))
    if qualname in STATIC_QUERIES:
        return static_query(func, *args, **kwargs)
    return numpy_call(func, *args, **kwargs)  # numpy's own function, on the values when the graph runs


_WRITES_FILES = ("np.save", "np.savetxt", "np.savez", "np.savez_compressed")


def _effect_message(name: str) -> str:
    if name in _WRITES_FILES:
        return (f"{name} writes a file when it is called, and a graph tensor has no value until the graph runs: "
                "run the graph (Session.run, or call the transpile.function) and save its result")
    return (f"{name} writes into its argument in place, and graph tensors are immutable: compute the new value as "
            "a tensor (np.where(mask, values, t) for np.putmask / np.place / np.copyto(where=), "
            "graph.set_item(t, index, values) for np.put / np.put_along_axis / np.fill_diagonal)")


def array(self, dtype=None, copy=None):
    t = convert(self)
    raise SymbolicValueError(
        f"{t.describe()} is a graph tensor: it has no value while the graph is being built, so numpy cannot "
        "convert it to an array. Run the graph (Session.run) to get its value, or use graph ops / numpy "
        "functions that accept tensors. A list holding graph tensors is such a conversion (np.array([a, b]), "
        "np.sum([a, b])): numpy looks for tensors in its array arguments, not inside lists. Stack them first, "
        "np.stack([a, b]) or graph.stack([a, b]), and apply the function to that (in a transpile.function, "
        "np.sum([a, b]) itself works)")


def install(cls) -> None:
    cls.__array_ufunc__ = array_ufunc
    cls.__array_function__ = array_function
    cls.__array__ = array


install(Tensor)

__all__: list[str] = []
