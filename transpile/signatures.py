"""The signature of a call of a `transpile.function`: how each argument enters a trace (a graph input
of some dtype and shape, or a value fixed by value or identity), the keys traces are cached under, and
the report of what changed when a call needs a new trace."""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

import graph
from graph import nest
from graph.node import Tensor
from transpile.operators import is_composite


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """How one argument leaf enters a trace: a graph input (dtype, shape) or a fixed value."""

    kind: str           # "input", "static", "object", "variable"
    dtype: object = None
    shape: tuple = ()
    value: object = None
    # an input's Python form: "python" (a Python number: weak beside arrays, as in numpy), "scalar" (a
    # numpy scalar) or "array" (an array, written in place by the function as Python would)
    form: str = ""

    def describe(self) -> str:
        if self.kind == "input" and self.form == "python":
            return f"Python {type(np.zeros((), self.dtype).item()).__name__}"
        if self.kind == "input":
            return f"{self.dtype}[{','.join('?' if d is None else str(d) for d in self.shape)}]"
        if self.kind == "static":
            return f"static {self.value!r}"
        if self.kind == "variable":
            return f"Variable {self.value.name!r}" if hasattr(self.value, "name") else "Variable"
        return f"object {type(self.value).__name__} at {id(self.value):#x}"

    def key(self):
        if self.kind == "input":
            return ("input", str(self.dtype), self.shape, self.form)
        if self.kind == "static":
            return ("static", type(self.value).__name__, self.value)
        return (self.kind, id(self.value))


def _leaf_kind(value, static: bool) -> tuple:
    """(kind, dtype, shape, form) of an argument leaf: how it enters a trace (see ArgSpec)."""
    if isinstance(value, Tensor):
        raise TypeError("a graph tensor cannot be passed to a transpile.function from outside a trace")
    if getattr(value, "is_variable", False):
        return "variable", None, (), ""
    if not static:
        if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
            return "input", graph.dtypes.dtype_of_python_scalar(value), (), "python"
        if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "biufc":
            return "input", value.dtype, tuple(value.shape), "array" if isinstance(value, np.ndarray) else "scalar"
    try:
        hash(value)
    except TypeError:
        return "object", None, (), ""
    return "static", None, (), ""


def _leaf_spec(value, static: bool) -> ArgSpec:
    kind, dtype, shape, form = _leaf_kind(value, static)
    return ArgSpec(kind, dtype, shape, form=form) if kind == "input" else ArgSpec(kind, value=value)


def _structure_specs(value, static: bool):
    """(structure, leaf specs) of one argument; containers are walked, leaves classified."""
    if isinstance(value, (list, tuple, dict)) and not static:
        leaves = nest.flatten(value)
        return value, [_leaf_spec(v, False) for v in leaves]
    return None, [_leaf_spec(value, static)]


def _structure_key(structure):
    if structure is None:
        return None
    if isinstance(structure, dict):
        return ("dict", tuple((k, _structure_key(v)) for k, v in sorted(structure.items(), key=lambda kv: str(kv[0]))))
    if isinstance(structure, (list, tuple)):
        return (type(structure).__name__, tuple(_structure_key(v) for v in structure))
    return "*"


@dataclass
class CallSignature:
    """Per argument: its label, its container structure (None for a leaf) and its leaves' ArgSpecs;
    `key` identifies the signature among a function's traces."""

    names: list                 # parameter names (with *args / **kwargs expanded)
    structures: list
    specs: list                 # per parameter: list of ArgSpec
    key: tuple = ()

    @classmethod
    def build(cls, arguments: list, static_argnames) -> "CallSignature":
        """The signature of `arguments`, (parameter name, label, value) as `expand_arguments` lists them."""
        names, structures, specs = [], [], []
        for name, label, v in arguments:
            structure, leaf_specs = _structure_specs(v, name in static_argnames)
            names.append(label)
            structures.append(structure)
            specs.append(leaf_specs)
        sig = cls(names, structures, specs)
        sig.key = tuple((n, _structure_key(s), tuple(x.key() for x in sp))
                        for n, s, sp in zip(names, structures, specs, strict=True))
        return sig

    def accepts(self, other: "CallSignature") -> bool:
        """Whether a call with signature `other` can run this trace (its unknown dims match anything)."""
        if self.names != other.names or len(self.key) != len(other.key):
            return False
        for mine, theirs, s1, s2 in zip(self.specs, other.specs, self.structures, other.structures, strict=True):
            if _structure_key(s1) != _structure_key(s2) or len(mine) != len(theirs):
                return False
            for a, b in zip(mine, theirs, strict=True):
                if a.kind == "input" and b.kind == "input":
                    if a.dtype != b.dtype or a.form != b.form or len(a.shape) != len(b.shape) or \
                            any(x is not None and x != y for x, y in zip(a.shape, b.shape)):
                        return False
                elif a.key() != b.key():
                    return False
        return True

    def relaxed_with(self, other: "CallSignature") -> "CallSignature | None":
        """This signature with the dims that differ from `other` unknown (None: they differ otherwise)."""
        if self.names != other.names:
            return None
        specs = []
        for mine, theirs, s1, s2 in zip(self.specs, other.specs, self.structures, other.structures, strict=True):
            if _structure_key(s1) != _structure_key(s2) or len(mine) != len(theirs):
                return None
            row = []
            for a, b in zip(mine, theirs, strict=True):
                if a.kind == "input" and b.kind == "input" and a.dtype == b.dtype and a.form == b.form \
                        and len(a.shape) == len(b.shape):
                    row.append(ArgSpec("input", a.dtype, tuple(x if x == y else None for x, y in zip(a.shape, b.shape)),
                                       form=a.form))
                elif a.key() == b.key():
                    row.append(a)
                else:
                    return None
            specs.append(row)
        sig = CallSignature(list(self.names), list(self.structures), specs)
        sig.key = tuple((n, _structure_key(s), tuple(x.key() for x in sp))
                        for n, s, sp in zip(sig.names, sig.structures, specs, strict=True))
        return sig

    def with_unknown_dims(self, unknown: dict[tuple[int, int], set[int]]) -> "CallSignature":
        """This signature with the dims `unknown[(k, i)]` of leaf i of argument k unknown: a trace of it serves
        every size there (an ONNX export's dynamic axes)."""
        specs = [[ArgSpec("input", a.dtype, tuple(None if j in unknown.get((k, i), ()) else d
                                                   for j, d in enumerate(a.shape)), form=a.form)
                  if a.kind == "input" else a for i, a in enumerate(row)] for k, row in enumerate(self.specs)]
        sig = CallSignature(list(self.names), list(self.structures), specs)
        sig.key = tuple((n, _structure_key(s), tuple(x.key() for x in sp))
                        for n, s, sp in zip(sig.names, sig.structures, specs, strict=True))
        return sig

    def describe(self, i: int) -> str:
        structure, specs = self.structures[i], self.specs[i]
        if structure is None:
            return specs[0].describe()
        return f"{nest.structure_description(structure)} of ({', '.join(s.describe() for s in specs)})"


def expand_arguments(bound: inspect.BoundArguments) -> list:
    """(parameter name, label, value) per argument, *args and **kwargs expanded: `args[0]`, `kw['k']`."""
    out = []
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out.extend((name, f"{name}[{i}]", v) for i, v in enumerate(value))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out.extend((name, f"{name}[{k!r}]", v) for k, v in value.items())
        else:
            out.append((name, name, value))
    return out


# Python scalars enter a trace as graph inputs of numpy's default dtype for their type
_PYTHON_SCALAR_KEYS = {t: ("input", graph.dtypes.dtype_of_python_scalar(t()), (), "python")
                       for t in (bool, int, float, complex)}


def call_key(values, static) -> tuple | None:
    """A key for a call's argument values (with `static[i]` for a static argument) that is cheap to
    build from the values themselves; None where it does not know them (the call then builds its
    CallSignature). Calls with equal keys have equal CallSignature keys: a key is finer, if anything (it
    tells the types of static values and containers apart, and the order of a dict's keys)."""
    key = []
    for value, is_static in zip(values, static):
        leaf = _leaf_key(value, is_static) if is_static or not isinstance(value, (list, tuple, dict)) \
            else _container_key(value)
        if leaf is None:
            return None
        key.append(leaf)
    return tuple(key)


def _leaf_key(value, static: bool):
    """What `_leaf_spec(value, static).key()` tells, without building the spec; arrays and scalars first."""
    cls = type(value)
    if not static:
        if cls is np.ndarray or isinstance(value, np.generic):
            if value.dtype.kind in "biufc":
                return ("input", value.dtype, value.shape, "array" if cls is np.ndarray else "scalar")
        else:
            known = _PYTHON_SCALAR_KEYS.get(cls)
            if known is not None:
                return known
    kind, dtype, shape, form = _leaf_kind(value, static)
    if kind == "input":
        return (kind, dtype, shape, form)
    if kind == "static":
        return (kind, cls, value)
    return (kind, id(value))   # kept alive by the signature stored with the key


def _container_key(value):
    """`_leaf_key` for a list, tuple or dict argument: its type and, walked as nest.flatten walks it,
    its items' keys (with a dict's keys and their types, which decide the order nest.flatten takes)."""
    if is_composite(value):
        return None
    items = []
    for k, v in (value.items() if isinstance(value, dict) else enumerate(value)):
        # nest.flatten walks into containers and composites (a composite gives None)
        item = _container_key(v) if isinstance(v, (list, tuple, dict)) or is_composite(v) \
            else _leaf_key(v, False)
        if item is None:
            return None
        items.append((type(k), k, item))
    return (type(value), tuple(items))


def retrace_report(fn_name: str, old: CallSignature, new: CallSignature) -> str:
    changes = []
    old_by_name = {n: i for i, n in enumerate(old.names)}
    for i, name in enumerate(new.names):
        j = old_by_name.get(name)
        if j is None:
            changes.append(f"{name}: (absent) -> {new.describe(i)}")
        elif old.key[j] != new.key[i]:
            changes.append(f"{name}: {old.describe(j)} -> {new.describe(i)}")
    for name in old.names:
        if name not in set(new.names):
            changes.append(f"{name}: {old.describe(old_by_name[name])} -> (absent)")
    hints = []
    if any("static" in c.split("->")[-1] for c in changes):
        hints.append("a static argument changed value: pass it as a numpy array to make it a graph input")
    return f"retracing {fn_name}: " + "; ".join(changes) + (f" ({'; '.join(hints)})" if hints else "")
