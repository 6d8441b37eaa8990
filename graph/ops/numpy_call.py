"""NumpyCall: a numpy function that the graph calls on the concrete arrays when it runs (as TensorFlow's
`tf.numpy_function`), for the numpy functions and ufuncs that have no graph op of their own.

The node keeps the function by its qualified numpy name ("numpy.linalg.eigh", a ufunc method as the
ufunc's name and the method: "numpy.maximum" and "accumulate") and the call's other arguments as they
were given, with the tensors' places recorded as paths; its kernel calls numpy with the values, so the
results and their dtypes are numpy's own. What the outputs are (how many, their dtypes and shapes, and
the structure numpy returns them in: a tuple, a list, a named tuple) is found when the node is built, by
calling the function on small example arrays of the inputs' dtypes and shapes:

- inputs of fully known shapes (and few elements): the examples have those shapes, filled three ways
  (identity matrices, small distinct numbers, zeros); an output dimension that differs between them
  depends on the values (np.unique, np.nonzero) and is unknown, as every dimension of the functions
  in DATA_DEPENDENT is;
- other inputs: unknown dimensions (and ranks) are filled in three ways (sizes 1, 2 and 3); the outputs'
  ranks are kept where all agree, and their dimensions are unknown.

A function whose result dtype depends on the values (np.linalg.eig of a real matrix is real or complex)
is refused unless its inputs are complex, and the kernel checks every result against the inferred dtype
and shape. Only numpy's own functions are called (a saved graph naming anything else does not load);
functions with effects (writing into an argument or a file) and np.random are refused. NumpyCall has no
gradient (grad raises, naming the function) and no ONNX form (the export fails naming it), but for
np.nonzero, where(cond), flatnonzero and argwhere (graph/onnx/numpy_ops.py).
"""
from __future__ import annotations

import importlib
import math
import types
import warnings
from dataclasses import dataclass

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import make_op
from graph.errors import DTypeError, OpValueError, UnsupportedError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops.conversion import convert, is_tensor_like
from graph.ops.strings import STRING

# numpy functions that write into an argument or a file: an effect the graph cannot express this way
EFFECTS = frozenset({"numpy.copyto", "numpy.place", "numpy.put", "numpy.put_along_axis", "numpy.putmask",
                     "numpy.fill_diagonal", "numpy.save", "numpy.savetxt", "numpy.savez", "numpy.savez_compressed"})
# results whose dimensions depend on the values, whatever the examples show
DATA_DEPENDENT = frozenset({
    "numpy.unique", "numpy.unique_all", "numpy.unique_counts", "numpy.unique_inverse", "numpy.unique_values",
    "numpy.nonzero", "numpy.flatnonzero", "numpy.argwhere", "numpy.where", "numpy.extract", "numpy.compress",
    "numpy.trim_zeros", "numpy.setdiff1d", "numpy.intersect1d", "numpy.union1d", "numpy.setxor1d",
    "numpy.bincount", "numpy.roots", "numpy.polydiv",
})
# results whose dtype depends on the values: real or complex, unless the inputs are complex already
COMPLEX_UNLESS_REAL = frozenset({"numpy.linalg.eig", "numpy.linalg.eigvals", "numpy.roots"})
VALUE_DTYPES = frozenset({"numpy.real_if_close"})
# examples at the inputs' own shapes up to this many elements in all (beyond, only ranks are inferred)
_EXAMPLE_ELEMENTS = 4096
_DISPATCHED = type(np.concatenate)


# --------------------------------------------------------------------------- functions by name

def qualified_name(func) -> tuple[str, str]:
    """(numpy's qualified name, ufunc method or "") of a numpy function, ufunc or ufunc method."""
    owner = getattr(func, "__self__", None)
    if isinstance(owner, np.ufunc):
        return f"numpy.{owner.__name__}", func.__name__
    if isinstance(func, np.ufunc):
        return f"numpy.{func.__name__}", ""
    return f"{getattr(func, '__module__', None) or ''}.{getattr(func, '__name__', '?')}", ""


def display_name(qualname: str, method: str = "") -> str:
    """How messages name it: `np.linalg.eigh`, `np.maximum.accumulate`."""
    name = "np" + qualname[len("numpy"):] if qualname.startswith("numpy") else qualname
    return f"{name}.{method}" if method else name


def numpy_function(qualname: str, method: str = ""):
    """The numpy function named `qualname` ("numpy.linalg.eigh"; with `method`, that method of the ufunc);
    a ValueError for anything that is not one of numpy's public functions, or one with effects."""
    parts = qualname.split(".")
    if parts[0] != "numpy" or len(parts) < 2 or not all(p.isidentifier() and not p.startswith("_") for p in parts):
        raise ValueError(f"{qualname!r} is not a public numpy function: NumpyCall calls numpy's functions only")
    if qualname in EFFECTS or parts[1] == "random":
        raise ValueError(f"{display_name(qualname)} has effects (it writes into an argument, a file or numpy's "
                         "global random state): NumpyCall calls functions of their arguments only")
    obj = importlib.import_module("numpy")
    for k, part in enumerate(parts[1:], start=2):
        module = ".".join(parts[:k])
        try:  # a submodule numpy does not import by itself (numpy.lib.stride_tricks)
            obj = getattr(obj, part) if hasattr(obj, part) else importlib.import_module(module)
        except ImportError:
            raise ValueError(f"numpy has no function {qualname!r}") from None
        if k < len(parts) and not isinstance(obj, types.ModuleType):
            raise ValueError(f"{qualname!r} is not a public numpy function")
    if not _is_numpy_callable(obj):
        raise ValueError(f"{qualname!r} is not a numpy function")
    if method:
        if not isinstance(obj, np.ufunc) or method not in ("reduce", "accumulate", "reduceat", "outer"):
            raise ValueError(f"{display_name(qualname, method)} is not a ufunc method NumpyCall calls")
        obj = getattr(obj, method)
    return obj


def _is_numpy_callable(obj) -> bool:
    if isinstance(obj, (np.ufunc, _DISPATCHED)):
        return True
    return isinstance(obj, types.FunctionType) and (obj.__module__ or "").split(".")[0] == "numpy"


# --------------------------------------------------------------------------- the call's arguments

@dataclass(frozen=True)
class CallTemplate:
    """A call's arguments with each tensor replaced by None, and where the tensors go (`slots`: paths
    from ("args", i) or ("kwargs", name) through the lists, tuples and dicts that hold them)."""

    args: tuple
    kwargs: dict
    slots: tuple


def split_arguments(args, kwargs) -> tuple[CallTemplate, list[Tensor]]:
    """The template of a call and its tensors, in the order of the template's slots."""
    slots: list[tuple] = []
    tensors: list[Tensor] = []

    def strip(value, path):
        if is_tensor_like(value):
            slots.append(path)
            tensors.append(convert(value))
            return None
        if isinstance(value, list) or type(value) is tuple:
            items = [strip(v, (*path, i)) for i, v in enumerate(value)]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, dict):
            return {k: strip(v, (*path, k)) for k, v in value.items()}
        return _as_dtype(value)

    template_args = tuple(strip(v, ("args", i)) for i, v in enumerate(args))
    template_kwargs = {k: strip(v, ("kwargs", k)) for k, v in kwargs.items()}
    return CallTemplate(template_args, template_kwargs, tuple(slots)), tensors


def _as_dtype(value):
    """numpy scalar types and Python number types given as dtypes, as np.dtype (which a saved graph keeps)."""
    if isinstance(value, type) and (issubclass(value, np.generic) or value in (bool, int, float, complex)):
        return np.dtype(value)
    return value


def template_of(attrs: dict) -> CallTemplate:
    """The call template a NumpyCall node keeps in its attributes."""
    return CallTemplate(tuple(attrs["args"]), dict(attrs["kwargs"]), tuple(tuple(p) for p in attrs["slots"]))


def fill(template: CallTemplate, values) -> tuple[tuple, dict]:
    """(args, kwargs) of the call with `values` in the template's slots."""
    table = dict(zip(template.slots, values, strict=True))
    args = tuple(_substitute(v, ("args", i), table) for i, v in enumerate(template.args))
    kwargs = {k: _substitute(v, ("kwargs", k), table) for k, v in template.kwargs.items()}
    return args, kwargs


def _substitute(value, path, table):
    if path in table:
        return table[path]
    if isinstance(value, list):
        return [_substitute(v, (*path, i), table) for i, v in enumerate(value)]
    if type(value) is tuple:
        return tuple(_substitute(v, (*path, i), table) for i, v in enumerate(value))
    if isinstance(value, dict):
        return {k: _substitute(v, (*path, k), table) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- results

def flatten_result(result) -> list:
    """The arrays numpy returned, in order, from its tuples, lists and named tuples."""
    if isinstance(result, (list, tuple)):
        return [x for r in result for x in flatten_result(r)]
    return [result]


def _structure(result, counter):
    """The nesting of a result: a leaf's position, or (kind, items) for a list, tuple or named tuple."""
    if isinstance(result, list):
        return ("list", [_structure(r, counter) for r in result])
    if isinstance(result, tuple):
        kind = type(result) if hasattr(result, "_fields") else "tuple"
        return (kind, [_structure(r, counter) for r in result])
    k = counter[0]
    counter[0] += 1
    return k


def _pack(structure, outputs):
    if isinstance(structure, int):
        return outputs[structure]
    kind, items = structure
    packed = [_pack(s, outputs) for s in items]
    if kind == "list":
        return packed
    return tuple(packed) if kind == "tuple" else kind(*packed)


def leaf_spec(value, name: str) -> tuple:
    """(dtype, shape) of one result numpy gave."""
    if isinstance(value, str):
        return STRING, ()
    if isinstance(value, (np.ndarray, np.generic, bool, int, float, complex)):
        arr = np.asarray(value)
        if arr.dtype.kind in "biufc":
            return arr.dtype, arr.shape
    raise UnsupportedError(f"{name} returns a {type(value).__name__} ({value!r:.60}), not arrays: it cannot be "
                           "a graph value. Run the graph and apply numpy to the result")


# --------------------------------------------------------------------------- inference from examples

@dataclass(frozen=True)
class Analysis:
    """What examples showed: the outputs' (dtype, shape) and the structure numpy returns them in."""

    outputs: tuple
    structure: object


def _example(dtype, shape, fill_kind: str) -> np.ndarray:
    """An example input: identity matrices (ones below rank 2), small distinct numbers, or zeros."""
    if dtype == STRING:
        return np.full(shape, "a", dtype=object)
    if fill_kind == "zeros":
        return np.zeros(shape, dtype)
    if fill_kind == "eye":
        if len(shape) < 2:
            return np.ones(shape, dtype)
        return np.broadcast_to(np.eye(shape[-2], shape[-1], dtype=dtype), shape).copy()
    n = math.prod(shape)
    values = np.arange(n) % 2 == 0 if dtype.kind == "b" else np.arange(n) % 7 + 1
    return values.astype(dtype).reshape(shape)


def _example_shapes(tensors: list[Tensor]) -> tuple[bool, list[list[tuple]]]:
    """(exact, one list of input shapes per variant): the inputs' own shapes when all are known and small,
    else unknown dimensions (and ranks) filled in three ways."""
    shapes = [t.shape for t in tensors]
    if all(s is not None and _sh.is_fully_defined(s) for s in shapes) \
            and sum(math.prod(s) for s in shapes) <= _EXAMPLE_ELEMENTS:
        return True, [[tuple(s) for s in shapes]]
    variants = []
    for size, rank in ((1, 1), (2, 1), (3, 2)):  # sizes of 1 too: numpy squeezes them (np.cov of one variable)
        variants.append([(size,) * rank if s is None else
                         tuple(size if d is None or math.prod(x or 1 for x in s) > _EXAMPLE_ELEMENTS else d
                               for d in s) for s in shapes])
    return False, variants


def _try_examples(func, template: CallTemplate, tensors: list[Tensor], name: str):
    """[(variant, result)] of the example calls that numpy answered, and the first error it raised."""
    exact, variants = _example_shapes(tensors)
    results, first_error = [], None
    for v, shapes in enumerate(variants):
        for fill_kind in ("eye", "distinct", "zeros"):
            values = [_example(t.dtype, s, fill_kind) for t, s in zip(tensors, shapes, strict=True)]
            args, kwargs = fill(template, values)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:  # numpy decides what it accepts: an example it refuses (a singular matrix) is skipped
                    results.append((v, func(*args, **kwargs)))
                except Exception as e:
                    first_error = first_error or e
    return exact, results, first_error


def analyse(func, template: CallTemplate, tensors: list[Tensor], name: str) -> Analysis:
    """The outputs of `func` called with `tensors` in `template`, from example calls (see module doc)."""
    exact, results, error = _try_examples(func, template, tensors, name)
    if not results:
        raise _refused(name, tensors, error)
    structures = {repr(_structure(r, [0])) for _, r in results}
    if len(structures) > 1:
        raise UnsupportedError(f"{name}: the number of results depends on the inputs' shapes or values; give the "
                               "graph tensors fully known shapes")
    per_example = [[leaf_spec(x, name) for x in flatten_result(r)] for _, r in results]
    qualname = qualified_name(func)[0]
    outputs = []
    for k, specs in enumerate(zip(*per_example, strict=True)):
        dtypes = {d for d, _ in specs}
        if len(dtypes) > 1:
            raise UnsupportedError(f"{name}: the dtype of result {k} depends on the values ("
                                   f"{', '.join(sorted(str(d) for d in dtypes))}), which the graph must know "
                                   "when it is built")
        outputs.append((dtypes.pop(), _merged_shape([s for _, s in specs], exact and qualname not in DATA_DEPENDENT)))
    return Analysis(tuple(outputs), _structure(results[0][1], [0]))


def _merged_shape(shapes: list[tuple], exact: bool):
    """The shape every example agrees on: dims that differ (or all, unless exact) unknown; None when ranks differ."""
    if len({len(s) for s in shapes}) > 1:
        return None
    if not exact:
        return (None,) * len(shapes[0])
    return tuple(d if all(s[i] == d for s in shapes) else None for i, d in enumerate(shapes[0]))


def _refused(name: str, tensors: list[Tensor], error: Exception | None) -> Exception:
    inputs = ", ".join(t.describe() for t in tensors)
    message = f"{name} of {inputs}: numpy refuses every example of these dtypes and shapes: {error}"
    return DTypeError(message) if isinstance(error, TypeError) else OpValueError(message)


# --------------------------------------------------------------------------- the op

def _infer(inputs, attrs):
    numpy_function(attrs["function"], attrs["method"])  # a saved graph naming anything else is refused
    if len(inputs) != len(attrs["slots"]):
        raise ValueError(f"NumpyCall of {attrs['function']} has {len(inputs)} inputs for {len(attrs['slots'])} "
                         "places in its arguments")
    if any(t.dtype is _dt.variant for t in inputs):
        raise TypeError("NumpyCall takes arrays, not TensorArray or other handles")
    return [(dtype, shape) for dtype, shape in attrs["outputs"]]


register_op("NumpyCall", _infer)


def numpy_call(func, *args, **kwargs):
    """`func(*args, **kwargs)` of a numpy function (a ufunc method too: `np.maximum.accumulate`), computed
    by numpy on the values when the graph runs; graph tensors among the arguments, also in lists, tuples
    and dicts, are its inputs. Returns a tensor, or numpy's structure of them (a tuple, a list, a named
    tuple). The results are numpy's exactly; they have no gradient and no ONNX form (see the module doc)."""
    qualname, method = qualified_name(func)
    name = display_name(qualname, method)
    try:
        resolved = numpy_function(qualname, method)
    except ValueError as e:
        raise UnsupportedError(f"{name} cannot run on graph tensors: {e}") from None
    if kwargs.get("out") is not None:
        raise UnsupportedError(f"{name}(..., out=...) is not supported on graph tensors: graph values are "
                               "immutable; use the returned tensor")
    template, tensors = split_arguments(args, kwargs)
    _check_dtypes(qualname, name, tensors)
    analysis = analyse(resolved, template, tensors, name)
    attrs = {"function": qualname, "method": method, "args": template.args, "kwargs": template.kwargs,
             "slots": template.slots, "outputs": analysis.outputs}
    node = make_op("NumpyCall", tensors, attrs, name=qualname.rsplit(".", 1)[-1] + (f"_{method}" if method else ""))
    return _pack(analysis.structure, node.outputs)


# numpy functions of dtypes alone (of an array's dtype): answered when the graph is built, as Python values
STATIC_QUERIES = frozenset({"numpy.result_type", "numpy.can_cast", "numpy.common_type", "numpy.iscomplexobj",
                            "numpy.isrealobj", "numpy.min_scalar_type"})


def static_query(func, *args, **kwargs):
    """`func(*args, **kwargs)` for a numpy function of dtypes (np.result_type, np.can_cast, ...): numpy's answer
    for arrays of the tensors' dtypes, a Python value when the graph is built."""
    name = display_name(*qualified_name(func))
    template, tensors = split_arguments(args, kwargs)
    if func is np.min_scalar_type and any(t.ndim != 1 and (t.shape is None or t.ndim == 0) for t in tensors):
        raise UnsupportedError(f"{name} of a 0-d array depends on its value, which a graph tensor has only when "
                               "the graph runs; use its dtype (t.dtype)")
    values = [np.empty((0,) * max(t.ndim or 1, 1), t.dtype) for t in tensors]
    args, kwargs = fill(template, values)
    return func(*args, **kwargs)


def _check_dtypes(qualname: str, name: str, tensors: list[Tensor]) -> None:
    if qualname in VALUE_DTYPES:
        raise UnsupportedError(f"{name} returns real or complex arrays depending on the values, and the graph "
                               "must know the dtype when it is built: use np.real(t) or keep t complex")
    if qualname in COMPLEX_UNLESS_REAL and not all(t.dtype.kind == "c" for t in tensors):
        raise UnsupportedError(f"{name} of real arrays returns real or complex arrays depending on the values, "
                               f"and the graph must know the dtype when it is built: pass complex values "
                               f"({name}(t.astype(complex))), or use np.linalg.eigh / eigvalsh for symmetric "
                               "matrices")


__all__ = ["numpy_call"]  # graph.numpy_call
