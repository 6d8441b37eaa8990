"""What a trace reads from and writes to the Python state at each call of a `transpile.function`:
the checks of what it assumed (its guards), the arrays it feeds, and the writes it replays after the
run. Built by captured_state.StateCapture while the trace is built.

The checks and feeds run at every call, so they are written out as one
generated function per trace (`CapturedInputs.read`): straight code that reads
each source and tests it, returning the arrays to feed or None when an
assumption no longer holds (the call then needs another trace). The Check
objects stay for the slow path: saying what changed in a retrace report.
"""
from __future__ import annotations

import itertools
import linecache

import numpy as np

from transpile.sources import ValueSource

_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic)
_serial = itertools.count(1)


def describe_value(v) -> str:
    """A value as a retrace report shows it: `float64[3,2]`, `0.5`, `list of 3`, `Box at 0x...`."""
    if isinstance(v, np.ndarray):
        return f"{v.dtype}[{','.join(str(d) for d in v.shape)}]"
    if isinstance(v, _SCALARS):
        return repr(v)
    if isinstance(v, (list, dict)):
        return f"{type(v).__name__} of {len(v)}"
    return f"{type(v).__name__} at {id(v):#x}"


def is_number(value) -> bool:
    """A real number or bool, Python's or numpy's (what a graph scalar input can stand for)."""
    return isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating))


# --------------------------------------------------------------------------- checks

class Check:
    """One assumption of a trace about a source. `failure(v, env)` is a Python condition, true when the
    value in variable `v` breaks it (objects it needs go in `env`); `expected` describes what held."""

    expected = ""

    def __init__(self, source: ValueSource):
        self.source = source
        self.read = source.reader()

    def failure(self, v: str, env: dict) -> str:
        raise NotImplementedError

    def holds(self, args) -> bool:
        env: dict = {}
        test = eval(f"lambda v: not ({self.failure('v', env)})", env)  # (slow path only)
        try:
            return bool(test(self.read(args)))
        except Exception:
            return False

    def change(self, args) -> str:
        try:
            now = describe_value(self.read(args))
        except Exception as e:
            now = f"({type(e).__name__})"
        return f"{self.source.describe()}: {self.expected} -> {now}"

    @staticmethod
    def bind(env: dict, value, prefix: str) -> str:
        name = f"{prefix}{len(env)}"
        env[name] = value
        return name


class ValueCheck(Check):
    """A number, string or None the trace took as it was: the same value (and type) at the source."""

    def __init__(self, source: ValueSource, value):
        super().__init__(source)
        self.value, self.expected = value, repr(value)

    def failure(self, v, env):
        value, cls = self.bind(env, self.value, "value_"), self.bind(env, type(self.value), "type_")
        return f"{v} is not {value} and (type({v}) is not {cls} or {v} != {value})"

    @property
    def becomes_input(self) -> bool:
        """Whether a change of it makes the source a graph input (a number does)."""
        return is_number(self.value)


class IdentityCheck(Check):
    """An object the trace took as it was: the very same object at the source."""

    def __init__(self, source: ValueSource, value):
        super().__init__(source)
        self.value, self.expected = value, describe_value(value)

    def failure(self, v, env):
        return f"{v} is not {self.bind(env, self.value, 'object_')}"


class LengthCheck(Check):
    """A list (its length) or dict (its keys, in order) whose items the trace walked."""

    def __init__(self, source: ValueSource, container):
        super().__init__(source)
        self.cls = type(container)
        self.keys = list(container) if isinstance(container, dict) else None
        self.length = len(container)
        self.expected = f"dict with keys {self.keys}" if self.keys is not None else f"{self.cls.__name__} of " \
                                                                                     f"{self.length}"

    def failure(self, v, env):
        cls = self.bind(env, self.cls, "type_")
        if self.keys is not None:
            return f"type({v}) is not {cls} or list({v}) != {self.bind(env, self.keys, 'keys_')}"
        return f"type({v}) is not {cls} or len({v}) != {self.length}"

    def change(self, args) -> str:
        if self.keys is None:
            return super().change(args)
        try:
            now = f"dict with keys {list(self.read(args))}"
        except Exception as e:
            now = f"({type(e).__name__})"
        return f"{self.source.describe()}: {self.expected} -> {now}"


class TypeCheck(Check):
    """An object whose attributes the trace walked: of the same class."""

    def __init__(self, source: ValueSource, value):
        super().__init__(source)
        self.cls, self.expected = type(value), type(value).__name__

    def failure(self, v, env):
        return f"type({v}) is not {self.bind(env, self.cls, 'type_')}"


class AliasCheck(Check):
    """An object the trace reached through two sources: still one object at both."""

    expected = "the same object as before"

    def __init__(self, source: ValueSource, first: ValueSource):
        super().__init__(source)
        self.first = first

    def failure(self, v, env):
        return f"{v} is not {self.first.code(env)}"


class ArrayCheck(Check):
    """A numpy array the trace feeds: of the traced dtype and shape (None: a dim relaxed to any size)."""

    def __init__(self, source: ValueSource, dtype, shape):
        super().__init__(source)
        self.dtype, self.shape = np.dtype(dtype), tuple(shape)
        self.expected = f"{self.dtype}[{','.join('?' if d is None else str(d) for d in self.shape)}]"

    def failure(self, v, env):
        dtype = self.bind(env, self.dtype, "dtype_")
        test = f"type({v}) is not ndarray or ({v}.dtype is not {dtype} and {v}.dtype != {dtype})"
        if None not in self.shape:
            return f"{test} or {v}.shape != {self.bind(env, self.shape, 'shape_')}"
        dims = "".join(f" or {v}.shape[{i}] != {d}" for i, d in enumerate(self.shape) if d is not None)
        return f"{test} or {v}.ndim != {len(self.shape)}{dims}"


class ScalarCheck(Check):
    """A number fed as a graph input (one whose value changed between calls): of the same kind."""

    def __init__(self, source: ValueSource, dtype):
        super().__init__(source)
        self.dtype, self.shape = np.dtype(dtype), ()
        self.expected = f"a {self.dtype} number"

    def failure(self, v, env):
        kind = self.dtype.kind
        if kind == "b":
            return f"type({v}) is not bool and type({v}) is not bool_"
        if kind in "iu":
            return f"not isinstance({v}, (int, integer)) or isinstance({v}, bool)"
        return f"not isinstance({v}, (int, float, integer, floating)) or isinstance({v}, bool)"


# --------------------------------------------------------------------------- the reader of a call

def _compile_reader(checks: list, arrays: list):
    """`read(args)`: None when a check fails, else the arrays to feed (straight code, see the module).
    Each source is read once, from its base's value (`s3 = s1.layers`), where a check first needs it."""
    env = {"ndarray": np.ndarray, "bool_": np.bool_, "integer": np.integer, "floating": np.floating}
    lines = ["def read(args):", "    try:"]
    read: dict = {}  # id(source) -> the local its value is in

    def value_of(source) -> str:
        local = read.get(id(source))
        if local is None:
            step = getattr(source, "step", None)
            code = step(value_of(source.base), env) if step is not None else source.code(env)
            local = read[id(source)] = f"s{len(read)}"
            lines.append(f"        {local} = {code}")
        return local

    for check in checks:
        v = value_of(check.source)
        if isinstance(check, AliasCheck):
            condition = f"{v} is not {value_of(check.first)}"
        else:
            condition = check.failure(v, env)
        lines += [f"        if {condition}:", "            return None"]
    fed = []
    for check in arrays:
        v = value_of(check.source)
        fed.append(v)
        lines += [f"        if {check.failure(v, env)}:", "            return None"]
    lines += [f"        return [{', '.join(fed)}]",
              "    except Exception:  # a source that no longer resolves (a missing key, attribute, item)",
              "        return None"]
    source = "\n".join(lines) + "\n"
    filename = f"<captured state reader #{next(_serial)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), env)
    return env["read"]


class CapturedInputs:
    """What a trace reads from and writes to the Python state at each call.

    `read(args)` checks the guards and returns the arrays to feed (None when a
    guard fails: the call needs another trace); `apply(results, fed, args)`
    makes the function's writes after the run, with `results` the run's values
    of `fetches`.
    """

    def __init__(self, checks: list, arrays: list, fetches: list, write_backs: list, replays: list):
        self.checks = checks                # Checks that hold for this trace
        self.arrays = arrays                # an ArrayCheck (or ScalarCheck) per fed value, in feeding order
        self.fetches = fetches              # tensors the trace fetches for write-backs and replays
        self.write_backs = write_backs      # (index into the fed arrays, index into fetches)
        self.replays = replays              # Replays, in the order the function made the writes
        self.read = _compile_reader(checks, arrays) if checks or arrays else _nothing_to_read

    def failing(self, args) -> Check | None:
        """The first guard that does not hold at this call, or None."""
        return next((check for check in (*self.checks, *self.arrays) if not check.holds(args)), None)

    def change(self, args) -> str | None:
        """What broke a guard at this call (for the retrace report), or None."""
        check = self.failing(args)
        return None if check is None else check.change(args)

    def arrays_now(self, args):
        """(source description, traced dtype, traced shape, value now) of each fed array."""
        for check in self.arrays:
            try:
                now = check.read(args)
            except Exception:
                now = None
            yield check.source.describe(), check.dtype, check.shape, now

    def apply(self, results, fed: list, args) -> None:
        for array_index, fetch_index in self.write_backs:
            fed[array_index][...] = results[fetch_index]
        # each write goes to the object the function found at its source when the call started (a later
        # write may rebind the source, as `self.xs = []` after `self.xs.append(x)`)
        targets = [replay.read(args) for replay in self.replays]
        for replay, target in zip(self.replays, targets):
            replay.apply(target, results, fed)

    def __bool__(self) -> bool:
        return bool(self.checks or self.arrays or self.fetches or self.replays)


def _nothing_to_read(args) -> list:
    return []


NONE = CapturedInputs([], [], [], [], [])


# --------------------------------------------------------------------------- replays

def build(template, results, fed):
    """The value a template stands for after a run (see captured_state's templates)."""
    kind = template[0]
    if kind == "const":
        return template[1]
    if kind == "fetch":
        return results[template[1]]
    if kind == "fetch_finished":   # a list or Python number made of the fetched value
        return template[2].finish(results[template[1]])
    if kind == "capture":
        return fed[template[1]]
    items = [build(t, results, fed) for t in template[1]]
    if kind == "list":
        return items
    if kind == "tuple":
        return template[2](*items) if hasattr(template[2], "_fields") else template[2](items)
    return dict(zip(template[2], items))


class Replay:
    """One write of the function to Python state, applied after each run: `target` is a ValueSource (state
    that existed before the trace), an object made by the trace, or a module's globals (`global g;
    g = ...`)."""

    def __init__(self, target, kind: str, key, template):
        self.target, self.kind, self.key, self.template = target, kind, key, template
        self.read = target.reader() if isinstance(target, ValueSource) else (lambda args, obj=target: obj)

    def apply(self, obj, results, fed) -> None:
        """Makes the write on `obj` (the target, read from its source at the start of the call)."""
        if self.kind == "setattr":
            setattr(obj, self.key, build(self.template, results, fed))
        elif self.kind == "delattr":
            delattr(obj, self.key)
        elif self.kind == "setglobal":   # obj: a module's globals
            obj[self.key] = build(self.template, results, fed)
        elif self.kind == "list":
            obj[:] = build(self.template, results, fed)
        else:
            obj.clear()
            obj.update(build(self.template, results, fed))
