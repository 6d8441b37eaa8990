"""`ag.call`: calls from converted code, converting user functions on first use, and the `ag`
namespace that converted code runs against.

The three are one recursion: converted code calls `ag.call(f, ...)`, which
converts `f` into code that runs against `ag` in turn.
"""
from __future__ import annotations

import functools
import threading
import time
import types
import weakref

import numpy as np

import graph
import graph.ops.numpy_random
from graph.logs import get_logger
from graph.node import Tensor
from transpile import conversion
from transpile.code_cache import CodeMap
from transpile.converters.call_trees import is_library_object
from transpile.errors import ConversionError
from transpile.operators.arrays import NEW_ARRAY_FUNCTIONS, new_array
from transpile.operators.conditionals import if_exp, if_stmt
from transpile.operators.data_structures import TensorList, list_append, set_attribute_item, set_item
from transpile.operators.facts import BranchFacts, IfFacts, LoopFacts
from transpile.operators.formatting import fmt, format_, format_method, fstr, join, percent, repr_, str_
from transpile.operators.graph_lists import GraphList
from transpile.operators.iterables import enumerate_, range_, zip_
from transpile.operators.leaves import mark_weak_type
from transpile.operators.list_items import append_at
from transpile.operators.logical import and_, not_, or_
from transpile.operators.loops import for_stmt, while_stmt
from transpile.operators.py_builtins import (
    BUILTIN_FUNCTIONS,
    abs_,
    bool_,
    float_,
    int_,
    isinstance_,
    len_,
    max_,
    min_,
    sum_,
)
from transpile.operators.staging import StagingError
from transpile.operators.statements import assert_stmt, print_
from transpile.operators.trace_state import trace_state
from transpile.operators.values import Undefined, ld, to_global, undefined_return

_MAX_RECURSION = 48
logger = get_logger(__name__)

# conversions per code object (by identity, while it lives: code_cache.py), and their instances per
# function (with its globals, defaults, closure)
_conversions: CodeMap[conversion.Converted] = CodeMap()
_instances: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_cache_lock = threading.RLock()


def conversion_of(fn: types.FunctionType) -> conversion.Converted:
    """The conversion of Python function `fn`'s code (converted once per code object)."""
    with _cache_lock:
        converted = _conversions.get(fn.__code__)
        if converted is None:
            start = time.perf_counter()
            converted = conversion.convert_function(fn)
            _conversions[fn.__code__] = converted
            logger.debug("converted %s (%s:%d) in %.1f ms", fn.__qualname__, fn.__code__.co_filename,
                         fn.__code__.co_firstlineno, (time.perf_counter() - start) * 1e3)
        return converted


def converted_function(fn: types.FunctionType) -> types.FunctionType:
    """The converted version of Python function `fn`, running against `ag_namespace` (cached per function)."""
    with _cache_lock:
        cached = _instances.get(fn)
        if cached is not None:
            return cached
        new = conversion_of(fn).instantiate(fn, ag_namespace)
        _instances[fn] = new
        return new


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
        if is_library_object(f):
            return None
        return converted_function(f)
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
_STR_METHODS = {"format": format_method, "join": join}


def _random_draw(f):
    """The graph builder of np.random function `f` while a graph is traced, else None."""
    if not trace_state().tracing:
        return None
    try:
        return graph.ops.numpy_random.BUILDERS.get(f)
    except TypeError:  # an unhashable callable
        return None


def call(f, *args, **kwargs):
    """`f(*args, **kwargs)`, converting `f` first when it is user code (recursively, cached)."""
    builtin = BUILTIN_FUNCTIONS.get(f) if isinstance(f, types.BuiltinFunctionType) or isinstance(f, type) else None
    if builtin is not None:
        return builtin(*args, **kwargs)
    text = _STR_METHODS.get(getattr(f, "__name__", None)) if isinstance(getattr(f, "__self__", None), str) else None
    if text is not None:  # "{}".format(x), ", ".join(items): graph strings of graph values
        return text(f.__self__, *args, **kwargs)
    if any(f is g for g in _SEQUENCE_FUNCTIONS) and args and isinstance(args[0], (Tensor, TensorList, GraphList)):
        t = args[0].stack() if isinstance(args[0], TensorList) else \
            args[0].items if isinstance(args[0], GraphList) else args[0]
        return new_array(f, _stack_like(f, t, dict(kwargs)), args)
    draw = _random_draw(f)
    if draw is not None:  # np.random.rand(3) while a graph is traced: drawn when the graph runs
        return draw(*args, **kwargs)
    built = graph.ops.numpy_api.constructor_call(f, args, kwargs)  # np.zeros(n), np.float32(t), math.exp(t)...
    if built is not NotImplemented:
        if f in graph.ops.python_math.RESULT_TYPES:  # math.exp(t) stands for the Python float math gives
            mark_weak_type(built, graph.ops.python_math.RESULT_TYPES[f])
        return new_array(f, built, args)
    if f in NEW_ARRAY_FUNCTIONS:  # np.zeros(3), np.copy(x): arrays the function may write in place
        return new_array(f, f(*args, **kwargs), args)
    try:
        target = _convert_callable(f)
    except ConversionError as e:
        return _call_unconverted(f, e, args, kwargs)
    if target is None:
        return f(*args, **kwargs)
    state = trace_state()
    if state.captures is not None:  # the arrays in its globals and closure become graph inputs
        state.captures.add_callable(f)
    depth = state.call_depth
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
    except graph.errors.SymbolicValueError as e:
        e.add_note(f"note: {getattr(f, '__qualname__', f)} runs unconverted: {error.bare_message}")
        raise


# The object converted code calls `ag`: each helper under the name the converters emit (a builtin's
# tensor-aware version under the builtin's own name: `len(x)` becomes `ag.len(x)`).
ag_namespace = types.SimpleNamespace(
    if_stmt=if_stmt, if_exp=if_exp, while_stmt=while_stmt, for_stmt=for_stmt,
    IfFacts=IfFacts, BranchFacts=BranchFacts, LoopFacts=LoopFacts,
    and_=and_, or_=or_, not_=not_,
    Undefined=Undefined, undefined_return=undefined_return, ld=ld, to_global=to_global,
    list_append=list_append, append_at=append_at, set_item=set_item, set_attribute_item=set_attribute_item,
    assert_stmt=assert_stmt, call=call, fstr=fstr, fmt=fmt, percent=percent,
    print=print_, range=range_, len=len_, enumerate=enumerate_, zip=zip_, abs=abs_, min=min_, max=max_,
    sum=sum_, int=int_, float=float_, bool=bool_, isinstance=isinstance_, str=str_, repr=repr_, format=format_,
)
