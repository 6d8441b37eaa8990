"""`Variable`: named state that owns its numpy value, read and assigned by ordered graph ops.

A Variable is not part of any graph: it holds its current value itself (like a
resource variable), so the value persists across runs, sessions and graphs.
`v.read()` builds a ReadVariable op in the current default graph; `assign`,
`assign_add`, `assign_sub` and `assign_at` build ops that replace the value
when they run. All of them are ordered effects: they happen in program order.
Values are never mutated in place (each assignment stores a new read-only
array), so a value read earlier stays what it was.

`variable_creator_scope(creator)` lets code that runs a function (a tracer)
decide what `Variable(...)` inside it gives: a new Variable, or one it already has.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import threading
from typing import Callable, Iterator

import numpy as np

from graph import dtypes as _dt
from graph import shapes as _sh
from graph.core import Graph, get_default_graph, make_op
from graph.errors import DTypeError, GraphError, ShapeError, SymbolicBoolError
from graph.node import Tensor
from graph.op_registry import register_op
from graph.ops import numpy_api as _numpy_api
from graph.ops import tensor_methods as _tensor_methods
from graph.ops.conversion import constant, convert
from graph.ops.indexing import indexed_shape, parse_index
from graph.ops.math import cast

_names: dict[str, itertools.count] = {}
_names_lock = threading.Lock()


def _unique_name(base: str) -> str:
    with _names_lock:
        counter = _names.get(base)
        if counter is None:
            _names[base] = itertools.count(1)
            return base
        while True:
            name = f"{base}_{next(counter)}"
            if name not in _names:
                _names[name] = itertools.count(1)
                return name


def _frozen(value: np.ndarray) -> np.ndarray:
    value.flags.writeable = False
    return value


def _value_infer(inputs, attrs):
    v = attrs["variable"]
    return [(v.dtype, v.shape)]


def _assign_infer(inputs, attrs):
    v, x = attrs["variable"], inputs[0]
    v._check_value(x.dtype, x.shape, "assign")
    return [(v.dtype, v.shape)]


def _assign_item_infer(inputs, attrs):
    v, x, dyn = attrs["variable"], inputs[0], inputs[1:]
    target = indexed_shape(v.shape, attrs["index"], dyn)
    if target is not None and x.shape is not None:
        try:
            _sh.broadcast(x.shape, target)
        except ValueError:
            raise ShapeError(f"cannot assign a value of shape {_sh.format_shape(x.shape)} to "
                             f"{v.name}{attrs['index']}, of shape {_sh.format_shape(target)}") from None
    return [(v.dtype, v.shape)]


_FLAGS = dict(stateful=True, ordered=True)
register_op("ReadVariable", _value_infer, **_FLAGS)
register_op("AssignVariable", _assign_infer, differentiable=False, **_FLAGS)
register_op("AssignAddVariable", _assign_infer, differentiable=False, **_FLAGS)
register_op("AssignSubVariable", _assign_infer, differentiable=False, **_FLAGS)
register_op("AssignItemVariable", _assign_item_infer, differentiable=False, **_FLAGS)


# --------------------------------------------------------------------------- creation through creator scopes

class _CreatorStack(threading.local):
    """The creators of the open variable_creator_scopes of this thread, outermost first."""

    def __init__(self):
        self.creators: list[Callable] = []


_creator_stack = _CreatorStack()


@contextlib.contextmanager
def variable_creator_scope(creator: Callable) -> Iterator[None]:
    """Inside, `Variable(...)` returns what `creator(next_creator, **kwargs)` returns.

    `kwargs` are the constructor's arguments by name (initial_value, name,
    trainable, dtype); `next_creator(**kwargs)` makes the Variable through the
    creators of the enclosing scopes (the innermost creator is called first). A
    creator may record what it makes, change the arguments, or return an existing
    Variable instead of making one. Scopes are per thread, like the default graph
    (TensorFlow's `tf.variable_creator_scope`).
    """
    _creator_stack.creators.append(creator)
    try:
        yield
    finally:
        _creator_stack.creators.pop()


class _CreatedThroughScopes(type):
    """Metaclass of Variable: constructing one goes through the open variable_creator_scopes."""

    def __call__(cls, *args, **kwargs):
        creators = _creator_stack.creators
        if not creators:
            return super().__call__(*args, **kwargs)
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        del arguments["self"]
        make = functools.partial(type.__call__, cls)
        for creator in creators:
            make = functools.partial(creator, make)
        return make(**arguments)


# --------------------------------------------------------------------------- Variable

class Variable(metaclass=_CreatedThroughScopes):
    """`Variable(initial_value, name=None, trainable=True, dtype=None)`: persistent state.

    Arithmetic, indexing and numpy functions on a Variable act on its current
    value (a ReadVariable op built where it is used). `Session.run(v)` gives
    the value after the run; `v.value` is the current value at any time.
    """

    is_variable = True
    __array_priority__ = 1000

    def __init__(self, initial_value, name: str | None = None, trainable: bool = True, dtype=None):
        if isinstance(initial_value, Tensor) or hasattr(initial_value, "_as_graph_tensor"):
            raise TypeError("a Variable's initial value must be a concrete value (a numpy array or Python "
                            "number), not a graph tensor: Variables own their values outside any graph")
        value = np.array(initial_value, dtype=None if dtype is None else _dt.as_dtype(dtype))
        if value.dtype == object or value.dtype.kind not in "biufc":
            raise DTypeError(f"a Variable holds a numeric array, got {type(initial_value).__name__} "
                             f"{initial_value!r}")
        self.name = _unique_name(name or "Variable")
        self.dtype = value.dtype
        self.shape = value.shape
        self.trainable = bool(trainable)
        self.initial_value = _frozen(value)
        self.value = self.initial_value
        # held by whatever reads the value, changes it and writes it back (exec's assign kernels, `load`):
        # runs on several threads update a Variable atomically, as TF's assign_add does
        self.update_lock = threading.Lock()
        # a writable view of `value` that exec's assign kernels keep while the Variable alone holds the array,
        # so that an update in place writes through it instead of unfreezing and freezing the array each time;
        # and whether such an update is under way, for the reads that do not take the lock
        # (exec/kernels/variables.py)
        self.writer = None
        self.writing = False

    # -- Python-side access ------------------------------------------------------------------
    def load(self, value) -> None:
        """Sets the value from Python (a copy of `value`, same shape, castable dtype)."""
        arr = np.asarray(value)
        self._check_value(arr.dtype, arr.shape, "load")
        new = _frozen(np.array(np.broadcast_to(arr, self.shape), dtype=self.dtype))
        with self.update_lock:
            self.value, self.writer = new, None

    assign_value = load

    def reset(self) -> None:
        """Back to the initial value."""
        with self.update_lock:
            self.value, self.writer = self.initial_value, None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def _check_value(self, dtype, shape, what: str) -> None:
        if dtype is _dt.variant or not np.can_cast(dtype, self.dtype, casting="same_kind"):
            raise DTypeError(f"cannot {what} a {dtype} value to Variable {self.name!r} of dtype {self.dtype}; "
                             "cast it first")
        if shape is None:
            return
        try:
            joined = _sh.broadcast(self.shape, shape)
        except ValueError:
            joined = None
        if joined is None or len(shape) > len(self.shape) or not _sh.compatible(joined, self.shape):
            raise ShapeError(f"cannot {what} a value of shape {_sh.format_shape(shape)} to Variable "
                             f"{self.name!r} of shape {_sh.format_shape(self.shape)} (a Variable's shape is fixed)")

    # -- graph ops ---------------------------------------------------------------------------
    def read(self, name: str | None = None) -> Tensor:
        """The current value, read when the op runs (in program order with this variable's writes).

        Inside a loop that never assigns this variable, that is the value read once before the loop.
        """
        g = self._register(get_default_graph())
        hoisted = g.context.hoisted_read(self) if g.context is not None else None
        if hoisted is not None:
            return hoisted
        return g.create_node("ReadVariable", [], {"variable": self}, name or f"{self.name}/read").outputs[0]

    def _as_graph_tensor(self) -> Tensor:
        return self.read()

    def _register(self, g: Graph) -> Graph:
        other = g.variables.get(self.name)
        if other is not None and other is not self:
            raise GraphError(f"two different Variables named {self.name!r} are used in one graph")
        g.variables[self.name] = self
        return g

    def _operand(self, value, what: str) -> Tensor:
        if isinstance(value, Tensor) or hasattr(value, "_as_graph_tensor"):
            t = convert(value)
            self._check_value(t.dtype, t.shape, what)
            return cast(t, self.dtype)
        arr = np.asarray(value)
        if isinstance(value, (bool, int, float)):
            arr = arr.astype(_dt.dtype_of_python_scalar(value, self.dtype))
        self._check_value(arr.dtype, arr.shape, what)
        return constant(arr.astype(self.dtype))

    def _write(self, op: str, value, what: str, name) -> Tensor:
        x = self._operand(value, what)
        self._register(get_default_graph())
        return make_op(op, [x], {"variable": self}, name=name or f"{self.name}/{what}").outputs[0]

    def assign(self, value, name: str | None = None) -> Tensor:
        """`v = value`; returns the new value."""
        return self._write("AssignVariable", value, "assign", name)

    def assign_add(self, delta, name: str | None = None) -> Tensor:
        """`v += delta`; returns the new value."""
        return self._write("AssignAddVariable", delta, "assign_add", name)

    def assign_sub(self, delta, name: str | None = None) -> Tensor:
        """`v -= delta`; returns the new value."""
        return self._write("AssignSubVariable", delta, "assign_sub", name)

    def assign_at(self, index, value, name: str | None = None) -> Tensor:
        """`v[index] = value` (numpy assignment; `index` may hold tensors); returns the new value."""
        spec, dyn = parse_index(index)
        if isinstance(value, (bool, int, float)):
            x = constant(value, _dt.dtype_of_python_scalar(value, self.dtype))
        else:
            x = convert(value)
        if x.dtype is _dt.variant or not np.can_cast(x.dtype, self.dtype, casting="same_kind"):
            raise DTypeError(f"cannot assign a {x.dtype} value into Variable {self.name!r} of dtype {self.dtype}; "
                             "cast it first")
        x = cast(x, self.dtype)
        self._register(get_default_graph())
        return make_op("AssignItemVariable", [x, *dyn], {"variable": self, "index": spec},
                       name=name or f"{self.name}/assign_at").outputs[0]

    def scatter_update(self, indices, updates, name: str | None = None) -> Tensor:
        """`v[indices] = updates` along the first axis; returns the new value."""
        return self.assign_at(indices, updates, name=name)

    # -- Python protocol ---------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<Variable {self.name!r} {self.dtype}{_sh.format_shape(self.shape)}>"

    def __bool__(self):
        raise SymbolicBoolError(f"the truth value of Variable {self.name!r} inside a graph is only known when the "
                                "graph runs; use v.value for its current value in Python")

    def __iter__(self):
        raise SymbolicBoolError(f"cannot iterate over Variable {self.name!r} while building a graph; use "
                                "graph.unstack(v) or a transpiled loop")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError(f"len() of scalar Variable {self.name!r}")
        return self.shape[0]


_tensor_methods.install(Variable)
_numpy_api.install(Variable)


def variable_uses(nodes) -> tuple[dict, set]:
    """What `nodes` do with Variables: {id: (Variable, device of its first read)} of those read, and
    the ids of those assigned."""
    read, written = {}, set()
    for n in nodes:
        v = n.attrs.get("variable")
        if not isinstance(v, Variable):
            continue
        if n.op == "ReadVariable":
            read.setdefault(id(v), (v, n.device))
        else:  # every other op naming a Variable writes it
            written.add(id(v))
    return read, written


def trainable_variables(g: Graph | None = None) -> list[Variable]:
    """The trainable Variables used in graph `g` (default graph), in the order they were first used."""
    g = g if g is not None else get_default_graph()
    return [v for v in g.variables.values() if v.trainable]


def global_variables(g: Graph | None = None) -> list[Variable]:
    """All Variables used in graph `g` (default graph), in the order they were first used."""
    g = g if g is not None else get_default_graph()
    return list(g.variables.values())


__all__ = ["Variable", "trainable_variables", "global_variables", "variable_creator_scope"]
