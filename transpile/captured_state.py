"""The Python state a `transpile.function` reads and writes outside its arguments: numpy arrays in its
globals, closures and objects fed like arguments at every call, guards on the rest, and the writes
the function makes to them applied after every run.

While a function is traced, each numpy array it can reach through a source
(transpile/sources.py: its globals, its closure cells, the objects among its
arguments, and the attributes and items of those) is replaced by a stand-in, a
`MutableArray` whose contents are a graph input: the converted code reads it
like the array, and the trace reads the array's contents when the graph runs,
at every call (the array itself is fed: no copy). Everything else the walk
meets is assumed: numbers and strings by value, other objects by identity,
lists and dicts by length and keys, objects by type. Those assumptions are the
trace's guards; a call that breaks one is traced again. Writes are found by
comparing the state after the trace with the state before: an array written in
place (`W += dW`, `W[i] = v`, `np.clip(W, a, b, out=W)`) gets the new contents
copied into it after each run; attributes assigned and lists or dicts changed
get their new values, with graph values replaced by what the run computed,
as if the function had run eagerly. The state is then put back as it was.
After torch.compile's Dynamo (sources, guards, side effects replayed after the
graph runs), which tf.function and jax.jit do not do: they keep the arrays a
function captured as constants.
"""
from __future__ import annotations

import dis
import functools
import sys
import types

import numpy as np

import graph
from graph.node import Tensor
from transpile import conversion, operators
from transpile.captured_inputs import (
    NONE,
    AliasCheck,
    ArrayCheck,
    CapturedInputs,
    Check,
    IdentityCheck,
    LengthCheck,
    Replay,
    ScalarCheck,
    TypeCheck,
    ValueCheck,
    is_number,
)
from transpile.converters.call_trees import LIBRARY_ROOTS, is_library_object
from transpile.operators.outputs import Finished, output_value
from transpile.sources import (
    ArgumentSource,
    AttrSource,
    CellSource,
    GlobalSource,
    ItemSource,
    ObjectSource,
    ValueSource,
)

# how far the walk goes from a global, closure variable or argument, and how big a container it walks
MAX_DEPTH = 5
MAX_ITEMS = 65536

_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic)

__all__ = ["StateCapture", "CapturedInputs", "ValueCheck", "NONE", "DYNAMIC", "output_value"]

# `relaxed[source]` of a Python number that changed between calls: it is a graph input in later traces
DYNAMIC = "dynamic"


def _defined_by_running_code(f: types.FunctionType) -> bool:
    """Whether `f` was defined inside a converted function running on this thread's stack (a local
    function, or a method of a local class), whose closure cells are that function's own local
    variables: its code is among the code objects nested in that function's."""
    if ".<locals>." not in f.__qualname__:
        return False
    frame = sys._getframe(1)
    while frame is not None:
        if conversion.is_converted_code(frame.f_code) and _nests(frame.f_code, f.__code__):
            return True
        frame = frame.f_back
    return False


def _nests(outer: types.CodeType, code: types.CodeType) -> bool:
    todo = [outer]
    while todo:
        c = todo.pop()
        for k in c.co_consts:
            if k is code:
                return True
            if isinstance(k, types.CodeType):
                todo.append(k)
    return False


def _in_graph(t) -> bool:
    """Whether tensor `t` (a placeholder) is still in its graph (a rollback removes what was built after
    its checkpoint)."""
    return not isinstance(t, Tensor) or graph.get_default_graph().has_node(t.node)


def _input_name(source: ValueSource) -> str:
    """A placeholder name for what is read from `source`."""
    return "".join(c if c.isalnum() else "_" for c in source.describe()).strip("_") or "captured"


_GLOBAL_NAMES: dict = {}  # code object -> the names it may read as globals (code objects never change)
_STORED_GLOBALS: dict = {}  # code object -> the names it assigns with `global` (its nested code's too)


def _stored_globals(code: types.CodeType) -> tuple:
    """The names `code` (and the functions nested in it) assign as globals."""
    names = _STORED_GLOBALS.get(code)
    if names is None:
        found = {ins.argval for ins in dis.get_instructions(code) if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")}
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                found.update(_stored_globals(const))
        names = _STORED_GLOBALS[code] = tuple(sorted(found))
    return names


def _global_names(code: types.CodeType) -> tuple:
    """The names `code` (and the functions nested in it) may read as globals."""
    names = _GLOBAL_NAMES.get(code)
    if names is None:
        found = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                found.update(_global_names(const))
        names = _GLOBAL_NAMES[code] = tuple(sorted(found))
    return names


def _is_frozen_record(value) -> bool:
    """A frozen dataclass instance whose fields are numbers, strings, None or tuples of those."""
    params = getattr(type(value), "__dataclass_params__", None)
    if params is None or not params.frozen:
        return False

    def immutable(v) -> bool:
        return isinstance(v, _SCALARS) or isinstance(v, tuple) and all(immutable(x) for x in v)
    return all(immutable(v) for v in vars(value).values()) if hasattr(value, "__dict__") else False


def _is_user_object(value) -> bool:
    """An instance of a class of the user's code, whose attributes the walk visits."""
    if not hasattr(value, "__dict__") or getattr(value, "is_variable", False) or isinstance(
            value, (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        return False
    cls = type(value)
    module = sys.modules.get(cls.__module__)
    if module is None or getattr(module, "__file__", None) is None:
        # a class of code run from a string or a module not imported: the user's, unless named as ours
        return cls.__module__.split(".")[0] not in LIBRARY_ROOTS
    return not is_library_object(cls)


# --------------------------------------------------------------------------- while tracing

class StateCapture:
    """The state a trace reads, while it is traced: stand-ins installed, snapshots to compare and restore.

    `args` are the call's argument values; `relaxed` maps a source's
    description to the shape its array is traced with (None for the dims that
    differed between calls, under relax_shapes), or to DYNAMIC for a Python
    number that changed between calls (a graph input from then on).
    """

    def __init__(self, args: list, relaxed: dict):
        self.args = args
        self.relaxed = relaxed
        self.checks: list[Check] = []
        self.captures: list = []        # (source, stand-in, placeholder, the check of what is fed)
        self.by_id: dict = {}           # id(value) -> (source, value, what the trace sees) of what was walked
        self.installed: list = []       # (source, original) of the stand-ins put at a global or cell
        self.objects: list = []         # (source, object, its __dict__ before)
        self.containers: list = []      # (source, list or dict, a shallow copy before)
        self.functions: dict = {}       # function -> the places (globals and cells) walked for it
        self.places: set = set()        # the globals and cells walked, by namespace and name or by cell
        self.place_inputs: dict = {}    # place -> the placeholders made walking it
        self.assigned_globals: list = []  # (namespace, name, value before) of globals the functions assign

    # -- what the trace reads ---------------------------------------------------------------
    def add_argument(self, index: int, name: str, value) -> None:
        """An argument that is an object (passed by identity): its attributes are walked."""
        if _is_user_object(value):
            self._visit(ArgumentSource(index, name), value, 0)

    def add_bound_object(self, obj) -> None:
        """The object the traced function is bound to (a bound method or callable object given to
        transpile.function): its attributes are walked."""
        if _is_user_object(obj):
            self._visit(ObjectSource(obj), obj, 0)

    def add_callable(self, f) -> None:
        """The globals and closure of a user function the trace calls (a function, method, partial or
        callable object)."""
        f = getattr(f, "python_function", f)  # a transpile.function called from the one being traced
        while isinstance(f, (types.MethodType, functools.partial)):
            f = f.__func__ if isinstance(f, types.MethodType) else f.func
        if not isinstance(f, types.FunctionType):
            f = getattr(type(f), "__call__", None)
            if not isinstance(f, types.FunctionType):
                return
        if f in self.functions and all(self._captured(place) for place in self.functions[f]):
            return  # (walked already, and not inside a cond or loop that was then built again)
        places = self.functions[f] = []
        namespace = f.__globals__
        for name in _stored_globals(f.__code__):  # (before a stand-in is installed there)
            if not any(ns is namespace and n == name for ns, n, _ in self.assigned_globals):
                self.assigned_globals.append((namespace, name, namespace.get(name, _ABSENT)))
        for name in _global_names(f.__code__):
            if name in namespace:
                places.append(self._install(GlobalSource(namespace, name), namespace[name]))
        if _defined_by_running_code(f):
            return  # its closure cells are variables of the function being traced, not state around it
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or (), strict=True):
            try:
                value = cell.cell_contents
            except ValueError:  # not assigned yet
                continue
            places.append(self._install(CellSource(cell, name), value))

    def _captured(self, place) -> bool:
        """Whether what was captured at `place` is still in the graph: a graph cond or loop that is built
        again rolls back the placeholders made while it was traced."""
        return all(_in_graph(ph) for ph in self.place_inputs.get(place, ()))

    def _install(self, source: ValueSource, value):
        """Walks the global or cell `source` holding `value`, puts what the trace sees there; its place."""
        place = (id(source.namespace), source.name) if isinstance(source, GlobalSource) else id(source.cell)
        if place in self.places:  # (functions of one module share its globals)
            if self._captured(place):
                return place
            value = self._forget(place, source)  # captured inside a cond or loop that was built again
        self.places.add(place)
        first = len(self.captures)
        seen = self._visit(source, value, 0)
        self.place_inputs[place] = [placeholder for _, _, placeholder, _ in self.captures[first:]]
        if seen is not value:
            source.write(seen, self.args)
            self.installed.append((source, value))
        return place

    def _forget(self, place, source: ValueSource):
        """Forgets what was captured at `place` while a graph cond or loop was built that was then rolled
        back and built again (its placeholders are gone from the graph), putting back the value it held;
        returns that value, to be captured again."""
        dead = {id(ph) for ph in self.place_inputs.pop(place)}
        stand_ins = {id(stand_in) for _, stand_in, placeholder, _ in self.captures if id(placeholder) in dead}
        self.places.discard(place)
        self.captures = [c for c in self.captures if id(c[2]) not in dead]
        self.by_id = {k: v for k, v in self.by_id.items() if id(v[2]) not in stand_ins}
        for k, (src, original) in enumerate(self.installed):
            if src.describe() == source.describe():
                source.write(original, self.args)
                del self.installed[k]
                return original
        return source.reader()(self.args)

    def _visit(self, source: ValueSource, value, depth: int):
        """Walks `value`, found at `source`; returns what the trace sees there (a stand-in for an array)."""
        if isinstance(value, _SCALARS):
            if is_number(value) and self.relaxed.get(source.describe()) is DYNAMIC:
                return self._capture_scalar(source, value)
            self.checks.append(ValueCheck(source, value))
            return value
        seen = self.by_id.get(id(value))
        if seen is not None and seen[1] is value:
            self.checks.append(AliasCheck(source, seen[0]))
            return seen[2]
        if getattr(value, "is_variable", False):
            self.checks.append(IdentityCheck(source, value))  # (the graph reads its value itself)
            return value
        if isinstance(value, (operators.MutableArray, Tensor)):
            return value  # a graph value (of a trace that calls this one)
        if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
            stand_in = self._capture(source, value)
        elif isinstance(value, (list, dict, tuple)) and depth < MAX_DEPTH and len(value) <= MAX_ITEMS:
            stand_in = self._visit_container(source, value, depth)
        elif _is_frozen_record(value):
            self.checks.append(IdentityCheck(source, value))  # its fields cannot change: the object is enough
            stand_in = value
        elif _is_user_object(value) and depth < MAX_DEPTH:
            self.by_id[id(value)] = (source, value, value)
            self.checks.append(TypeCheck(source, value))
            attributes = vars(value)
            self.objects.append((source, value, dict(attributes)))
            for name, item in list(attributes.items()):
                seen = self._visit(AttrSource(source, name), item, depth + 1)
                if seen is not item:
                    attributes[name] = seen  # in its __dict__: not through a __setattr__ of its class
            return value
        else:
            self.checks.append(IdentityCheck(source, value))
            stand_in = value
        self.by_id[id(value)] = (source, value, stand_in)
        return stand_in

    def _visit_container(self, source: ValueSource, value, depth: int):
        self.checks.append(LengthCheck(source, value))
        self.by_id[id(value)] = (source, value, value)
        if isinstance(value, tuple):
            items = [self._visit(ItemSource(source, i), v, depth + 1) for i, v in enumerate(value)]
            if all(a is b for a, b in zip(items, value)):
                return value
            return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)
        self.containers.append((source, value, value.copy()))
        for key, item in list(value.items() if isinstance(value, dict) else enumerate(value)):
            seen = self._visit(ItemSource(source, key), item, depth + 1)
            if seen is not item:
                value[key] = seen
        return value

    def _capture(self, source: ValueSource, array: np.ndarray):
        shape = self.relaxed.get(source.describe(), array.shape)
        placeholder = graph.placeholder(array.dtype, shape, name=_input_name(source))
        stand_in = operators.MutableArray(placeholder)
        self.captures.append((source, stand_in, placeholder, ArrayCheck(source, array.dtype, placeholder.shape)))
        return stand_in

    def _capture_scalar(self, source: ValueSource, value):
        """A Python number whose value changed between calls: a graph input from now on."""
        dtype = value.dtype if isinstance(value, np.generic) else graph.dtypes.dtype_of_python_scalar(value)
        placeholder = graph.placeholder(dtype, (), name=_input_name(source))
        self.captures.append((source, placeholder, placeholder, ScalarCheck(source, dtype)))
        return placeholder

    def walked_objects(self) -> list:
        """The objects whose attributes the trace reads (graph conds and loops carry what they change)."""
        return [obj for _, obj, _ in self.objects]

    # -- what the trace wrote ---------------------------------------------------------------
    def finish(self, g, outputs: list) -> tuple[CapturedInputs, list]:
        """The trace's CapturedInputs and the placeholders it feeds (in order), from the state now
        (after tracing) compared with before; then puts the state back. `outputs` are the tensors
        the trace returns."""
        try:
            fetches: list = []
            write_backs, replays = [], []
            captured = {id(stand_in): k for k, (_, stand_in, _, _) in enumerate(self.captures)
                        if isinstance(stand_in, operators.MutableArray)}
            for k, (_, stand_in, placeholder, _) in enumerate(self.captures):
                if isinstance(stand_in, operators.MutableArray) and stand_in.value is not placeholder:
                    write_backs.append((k, len(fetches)))
                    fetches.append(output_value(stand_in))
            templates = _Templates(captured, fetches)
            for source, obj, before in self.objects:
                now = vars(obj)
                for name, value in now.items():
                    original = before.get(name, _ABSENT)
                    if original is not value and self.by_id.get(id(original), (None, None, None))[2] is not value:
                        replays.append(Replay(source, "setattr", name,
                                              templates.of(value, f"{source.expression()}.{name}")))
                for name in before:
                    if name not in now:
                        replays.append(Replay(source, "delattr", name, None))
            for source, container, before in self.containers:
                if self._changed(container, before):
                    kind = "list" if isinstance(container, list) else "dict"
                    items = list(container) if kind == "list" else dict(container)
                    replays.append(Replay(source, kind, None, templates.of(items, source.describe())))
            for namespace, name, before in self.assigned_globals:
                now = namespace.get(name, _ABSENT)
                if now is not _ABSENT and now is not before and self._seen(before) is not now:
                    replays.append(Replay(namespace, "setglobal", name, templates.of(now, f"global '{name}'")))
            replays.extend(templates.new_object_replays)
            # the arrays fed at each call: those the graph reads, writes back into, or puts somewhere
            used = _used_nodes(g, outputs + fetches)
            needed = sorted({k for k, (_, _, placeholder, _) in enumerate(self.captures)
                             if id(placeholder.node) in used} | {k for k, _ in write_backs} | templates.referenced)
            index = {k: i for i, k in enumerate(needed)}
            arrays = [self.captures[k][3] for k in needed]
            for replay in replays:
                replay.template = _renumber(replay.template, index)
            inputs = CapturedInputs(self.checks, arrays, fetches, [(index[k], f) for k, f in write_backs], replays)
            return inputs, [self.captures[k][2] for k in needed]
        finally:
            self.restore()

    def _seen(self, value):
        """What the trace saw for `value` of the state (its stand-in), or None."""
        seen = self.by_id.get(id(value))
        return seen[2] if seen is not None and seen[1] is value else None

    def _changed(self, container, before) -> bool:
        """Whether the trace changed a list or dict (other than by putting stand-ins in it)."""
        def same(now, was):
            return now is was or self.by_id.get(id(was), (None, None, None))[2] is now
        if len(container) != len(before):
            return True
        if isinstance(container, dict):
            return list(container) != list(before) or any(not same(container[k], before[k]) for k in container)
        return any(not same(a, b) for a, b in zip(container, before))

    def restore(self) -> None:
        """Puts back the state as it was before the trace (stand-ins and the trace's writes undone)."""
        for source, obj, before in reversed(self.objects):
            attributes = vars(obj)
            attributes.clear()
            attributes.update(before)
        for source, container, before in reversed(self.containers):
            if isinstance(container, list):
                container[:] = before
            else:
                container.clear()
                container.update(before)
        for source, original in reversed(self.installed):
            source.write(original, self.args)
        for namespace, name, before in reversed(self.assigned_globals):  # as before the trace assigned them
            if before is _ABSENT:
                namespace.pop(name, None)
            else:
                namespace[name] = before
        self.objects, self.containers, self.installed, self.assigned_globals = [], [], [], []


def _renumber(template, index: dict):
    if template is None or template[0] in ("const", "fetch", "fetch_finished"):
        return template
    if template[0] == "capture":
        return ("capture", index[template[1]])
    return (template[0], [_renumber(t, index) for t in template[1]], *template[2:])


_ABSENT = object()


class _Templates:
    """How a value the function left in Python state is rebuilt after each run (see Replay)."""

    def __init__(self, captured: dict, fetches: list):
        self.captured = captured
        self.fetches = fetches
        self.new_object_replays: list = []
        self.seen_objects: set = set()
        self.referenced: set = set()    # captures put somewhere by the function (`self.prev = W`)

    def of(self, value, where: str):
        """The template of `value`, which the function left at `where` (named in errors)."""
        if isinstance(value, operators.MutableArray) and id(value) in self.captured:
            self.referenced.add(self.captured[id(value)])
            return ("capture", self.captured[id(value)])
        value = output_value(value) if not isinstance(value, (list, tuple, dict)) else value
        if isinstance(value, Finished):
            _check_not_staged(value.tensor, where)
            self.fetches.append(value.tensor)
            return ("fetch_finished", len(self.fetches) - 1, value)
        if isinstance(value, Tensor):
            _check_not_staged(value, where)
            self.fetches.append(value)
            return ("fetch", len(self.fetches) - 1)
        if isinstance(value, list):
            return ("list", [self.of(v, f"{where}[{i}]") for i, v in enumerate(value)])
        if isinstance(value, tuple):
            return ("tuple", [self.of(v, f"{where}[{i}]") for i, v in enumerate(value)], type(value))
        if isinstance(value, dict):
            return ("dict", [self.of(v, f"{where}[{k!r}]") for k, v in value.items()], list(value))
        if _is_user_object(value) and id(value) not in self.seen_objects:
            # an object the trace made (or reached only through its own values): its graph values are
            # replaced after each run, the object itself stays the same
            self.seen_objects.add(id(value))
            for name, item in vars(value).items():
                template = self.of(item, f"{where}.{name}")
                if _has_graph_parts(template):
                    self.new_object_replays.append(Replay(value, "setattr", name, template))
        return ("const", value)


def _check_not_staged(t: Tensor, where: str) -> None:
    """Refuses a value of a graph branch or loop body left in Python state: it exists only inside it."""
    context = t.node.context
    if context is not None:
        raise operators.StagingError(
            f"{where} is left holding a value computed in {context.describe()}, which exists only there: a graph "
            "branch or loop cannot hand values to Python objects that it changes through calls. Assign the "
            "attribute (or append to the list) in the function itself, whose converted code carries it out of "
            "the branch or loop, or return the value", t.node.source)


def _has_graph_parts(template) -> bool:
    if template[0] in ("fetch", "fetch_finished", "capture"):
        return True
    if template[0] in ("list", "tuple", "dict"):
        return any(_has_graph_parts(t) for t in template[1])
    return False


def _used_nodes(g, fetched: list) -> set:
    """Ids of the nodes whose outputs some node of `g` takes, or that are fetched."""
    used = {id(t.node) for t in fetched if isinstance(t, Tensor)}
    for node in g.nodes:
        for t in node.inputs:
            used.add(id(t.node))
    return used
