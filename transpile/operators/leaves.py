"""The leaves of a variable's value (tensors, Python numbers, other objects): what each is, its dtype,
its conversion to a tensor, and how error messages describe it."""
from __future__ import annotations

import numpy as np

import graph
from graph import nest
from graph.node import Tensor
from graph.ops import conversion as _conversion
from graph.ops.strings import STRING
from transpile.operators.trace_state import trace_state


def is_tensor(x) -> bool:
    """A graph tensor, or something that reads as one (a Variable)."""
    return isinstance(x, Tensor) or hasattr(type(x), "_as_graph_tensor")


def is_composite(x) -> bool:
    """A value made of tensors that graph control flow carries as a unit (a TensorArray, a list built
    in a graph loop, a maybe-defined value)."""
    return hasattr(x, "_flat_tensors") and hasattr(x, "_with_flat_tensors")


def has_graph_values(x) -> bool:
    """Whether a value holds a tensor or a composite anywhere in it."""
    return any(is_tensor(v) or is_composite(v) for v in nest.flatten(x)) or is_composite(x)


def is_weak(x) -> bool:
    """A Python number: its dtype gives way to an array's, as numpy's weak scalars do."""
    return type(x) in (bool, int, float)


def weak_type(x):
    """The Python number type (bool, int, float) that `x` stands for, else None: a Python number's
    own, or that of the Python numbers a graph cond merged into tensor `x` (`mark_weak`). Such a tensor
    is a Python number in the program the graph was traced from: it takes an array's dtype as numpy's
    weak scalars do (a graph loop that adds float32 values to it learns so, see loop_vars.weak_probes)."""
    if type(x) in (bool, int, float):
        return type(x)
    if isinstance(x, Tensor) and trace_state().weak_numbers:
        return _tensor_weak_type(x, trace_state().weak_numbers, 64)
    return None


# elementwise ops whose result is a Python number when their operands are (`s * 0.5`, `min(s, 1.0)`)
_NUMBER_OPS = frozenset({"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "FloorDiv", "FloorMod", "Mod", "Pow",
                         "Maximum", "Minimum", "Neg", "Abs", "Identity", "PythonRound"})
_PYTHON_DTYPES = frozenset({np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_)})


def _tensor_weak_type(t: Tensor, marked: dict, budget: int):
    """The Python type tensor `t` stands for: marked, or computed by _NUMBER_OPS from marked tensors and
    scalar constants (the Python numbers of the expression)."""
    entry = marked.get(id(t))
    if entry is not None and entry[0] is t:
        return entry[1]
    node = t.node
    if budget <= 0 or not node.inputs or not isinstance(t.dtype, np.dtype):
        return None
    # the same value: from outside a loop, read in its body; from outside a cond, read in a branch
    if node.op == "Switch" or node.op == "Enter" and node.attrs.get("is_constant"):
        return _tensor_weak_type(node.inputs[0], marked, budget - 1)
    # a Cast to a Python number's own dtype is the promotion of `s * 0.5` (s an int): a Python float
    if node.op not in _NUMBER_OPS and not (node.op == "Cast" and t.dtype in _PYTHON_DTYPES):
        return None
    types = []
    for i in node.inputs:
        c = _constant_node(i)
        if c is not None and i.shape == ():
            if c.attrs.get("numpy_scalar"):
                return None  # (np.float32(2) * s is a numpy scalar, as in numpy)
            continue
        kind = _tensor_weak_type(i, marked, budget - 1)
        if kind is None:
            return None
        types.append(kind)
    if not types:
        return None
    kind = float if float in types or t.dtype.kind == "f" else int if int in types else bool
    marked[id(t)] = (t, kind)
    return kind


def _constant_node(t: Tensor):
    """The Const node `t` is, or passes on (a constant in a graph loop's body or cond's branch is made
    outside it and enters it: `k + 1` of a counter `k`), else None."""
    node = t.node
    while node.op in ("Enter", "Switch") and node.inputs:
        node = node.inputs[0].node
    return node if node.op == "Const" else None


def mark_weak(t, *numbers) -> None:
    """Records that tensor `t` stands for a Python number: one of `numbers` (Python numbers or tensors
    that stand for one), whichever the graph picks."""
    types = [weak_type(v) for v in numbers]
    if types and None not in types:
        mark_weak_type(t, float if float in types else int if int in types else bool)


def mark_weak_type(t, kind: type) -> None:
    """Records that tensor `t` stands for a Python number of type `kind`."""
    if isinstance(t, Tensor):
        trace_state().weak_numbers[id(t)] = (t, kind)


def is_numeric(leaf) -> bool:
    """A tensor, a number (Python, numpy scalar or array), or a str: what graph conds and loops can carry
    (a str that differs between branches or iterations is a graph string, graph/ops/strings.py)."""
    return is_tensor(leaf) or isinstance(leaf, (bool, int, float, complex, str, np.generic, np.ndarray))


def is_convertible(v) -> bool:
    """Whether every leaf of `v` is None, a tensor, or a number of a numeric dtype."""
    for leaf in nest.flatten(v):
        if leaf is None or is_tensor(leaf) or isinstance(leaf, (Tensor, str)):
            continue
        if isinstance(leaf, (bool, int, float, complex, np.generic, np.ndarray)):
            if np.asarray(leaf).dtype.kind in "biufc":
                continue
        return False
    return True


def is_flat_numeric_list(items) -> bool:
    """A list of tensors and numbers only (it can become a TensorArray)."""
    return all(is_numeric(v) and is_convertible(v) for v in items)


def leaf_dtype(v):
    """The dtype a leaf has as a tensor (None for None)."""
    if isinstance(v, Tensor):
        return v.dtype
    if getattr(v, "is_variable", False):
        return np.dtype(v.dtype)
    if is_tensor(v):
        return graph.convert(v).dtype
    if is_weak(v):
        return graph.dtypes.dtype_of_python_scalar(v)
    if v is None:
        return None
    if isinstance(v, str):
        return STRING
    return np.asarray(v).dtype


def convert_leaf(v, dtype=None):
    """A leaf as a tensor (of `dtype` when given); None stays None. TypeError for a non-numeric leaf."""
    if isinstance(v, Tensor):
        return v if dtype is None or v.dtype == dtype else graph.cast(v, dtype)
    if is_tensor(v):
        t = graph.convert(v)
        return t if dtype is None or t.dtype == dtype else graph.cast(t, dtype)
    if v is None:
        return None
    if isinstance(v, str):
        return graph.constant(np.array(v, dtype=STRING))
    arr = np.asarray(v) if dtype is None else np.asarray(v, dtype=dtype)
    if arr.dtype == object or arr.dtype.kind not in "biufc":
        raise TypeError(type(v).__name__)
    if dtype is None and is_weak(v):
        arr = np.asarray(v, dtype=graph.dtypes.dtype_of_python_scalar(v))
    return graph.constant(arr)


def cast_leaves(value, dtypes):
    """`value` with each leaf a tensor of its dtype in `dtypes`.

    A None dtype marks a non-numeric leaf that is the same object on both
    sides of a cond: it becomes None here and is put back after the cond. A
    `variant` dtype marks a TensorArray, passed as it is.
    """
    out = []
    for leaf, dt in zip(nest.flatten(value), dtypes, strict=True):
        if dt is None:
            out.append(None)
        elif dt is graph.dtypes.variant:
            out.append(leaf)
        else:
            out.append(convert_leaf(leaf, dt))
    return out[0] if not isinstance(value, (list, tuple, dict)) and len(out) == 1 and \
        not is_composite(value) else nest.pack_as(value, out)


def same_leaves(a, b) -> bool:
    """Whether `a` and `b` are one value, or containers of the same structure holding the same objects."""
    if a is b:
        return True
    if not isinstance(a, (list, tuple, dict)) or not nest.same_structure(a, b):
        return False
    return all(x is y for x, y in zip(nest.flatten(a), nest.flatten(b), strict=True))


def describe(v) -> str:
    """A value as an error message names it: `a float32[3] tensor`, `list [value, value]`, `a str`."""
    if isinstance(v, Tensor):
        return f"a {v.dtype}{graph.shapes.format_shape(v.shape)} tensor"
    if isinstance(v, (list, tuple, dict)):
        return f"{type(v).__name__} {nest.structure_description(v)}"
    if v is None:
        return "None"
    return f"a {type(v).__name__}"


_conversion.WEAK_TYPE_HOOKS.append(weak_type)   # graph ops give such tensors numpy's weak-scalar dtypes
