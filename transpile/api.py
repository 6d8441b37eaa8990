"""Public API: `function` (convert, trace per signature, run), `convert`, `to_code`."""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import threading
import time
import types
import warnings
import weakref
from dataclasses import dataclass, field

import numpy as np

import graph
import graph.errors
import graph.onnx
from exec import Session
from exec.compiled import MODES
from exec.profiler import profile  # noqa: F401  (transpile.profile: traces of calls, exec/profiler.py)
from graph import nest
from graph.logs import get_logger
from graph.node import Tensor
from graph.saving import Output, Signature, load_saved
from transpile import captured_state, conversion, fast_calls, operators, signatures
from transpile.errors import swap_without_device
from transpile.operators.leaves import mark_weak_type
from transpile.operators.loop_options import memory_policy_options
from transpile.operators.outputs import Finished, NumberOutput, output_value
from transpile.operators.trace_state import trace_state

logger = get_logger(__name__)
# the distribution's version (graph/_version.py), re-exported by transpile/__init__.py, which imports no graph
__version__ = graph.__version__

_RETRACE_WARNING_AFTER = 8


# --------------------------------------------------------------------------- conversion

def _unwrap(fn):
    if isinstance(fn, Function):
        return fn.python_function
    return fn


def convert(fn):
    """The converted Python function: control flow on graph tensors builds graph control flow.

    Called with Python and numpy values it behaves like `fn`. Accepts functions,
    lambdas, bound methods and `transpile.function` objects.
    """
    fn = _unwrap(fn)
    if isinstance(fn, types.MethodType):
        return types.MethodType(convert(fn.__func__), fn.__self__)
    if isinstance(fn, functools.partial):
        return functools.partial(convert(fn.func), *fn.args, **fn.keywords)
    if isinstance(fn, types.FunctionType):
        return operators.converted_function(fn)
    return types.MethodType(convert(_python_function(fn)), fn)  # a callable object: its __call__


def _python_function(fn) -> types.FunctionType:
    """The Python function that `fn` (a function, method, partial or callable object) runs."""
    fn = _unwrap(fn)
    while isinstance(fn, (types.MethodType, functools.partial)):
        fn = fn.__func__ if isinstance(fn, types.MethodType) else fn.func
    if isinstance(fn, types.FunctionType):
        return fn
    call = None if isinstance(fn, type) else getattr(type(fn), "__call__", None)
    if isinstance(call, types.FunctionType):
        return call
    raise TypeError(f"transpile converts Python functions, lambdas, methods, functools.partial objects and objects "
                    f"with a Python __call__; got {type(fn).__name__} {fn!r}")


def to_code(fn) -> str:
    """The source of the converted function (what runs; `ag` is `transpile.operators.ag_namespace`)."""
    return operators.conversion_of(_python_function(fn)).source


def do_not_convert(fn):
    """Marks a function to be called as it is from converted code (never converted)."""
    fn.__transpile_do_not_convert__ = True
    return fn


# --------------------------------------------------------------------------- variables created in traces

class _VariableScope:
    """Variables a function creates: made on the first trace, the same objects on later ones."""

    def __init__(self):
        self.created: list = []
        self.reusing = False
        self.index = 0

    def create(self, next_creator, **kwargs):
        """The graph.variable_creator_scope creator of a trace: the first trace makes and records the
        Variables, later ones get the same objects in creation order."""
        if self.reusing:
            return self.next_existing()
        v = next_creator(**kwargs)
        self.created.append(v)
        return v

    def next_existing(self):
        if self.index >= len(self.created):
            raise operators.StagingError(
                "this trace creates more Variables than the function's first trace did; a transpile.function "
                "creates its Variables once, on its first trace (later traces reuse them in creation order). "
                "Create Variables outside the function, or on every path of its first call")
        v = self.created[self.index]
        self.index += 1
        return v


# --------------------------------------------------------------------------- traces

@dataclass(frozen=True)
class ArgumentArray:
    """An array argument as the traced code gets it: argument `k` (leaf `leaf` of it, for a container
    argument), a MutableArray whose contents start as placeholder `placeholder`."""

    k: int
    leaf: int | None
    array: operators.MutableArray
    placeholder: Tensor


@dataclass(frozen=True)
class ArgumentWrite:
    """An array argument the function writes in place: after each run, `value` (a fetched tensor) is
    copied into the caller's array, argument `k` (its leaf `leaf`)."""

    k: int
    leaf: int | None
    value: Tensor

    def apply(self, values: list, result) -> None:
        target = values[self.k] if self.leaf is None else nest.flatten(values[self.k])[self.leaf]
        np.copyto(target, result, casting="same_kind")


def _argument_writes(arrays: list[ArgumentArray]) -> list[ArgumentWrite]:
    """The array arguments whose contents the trace changed, with their contents at its end."""
    return [ArgumentWrite(a.k, a.leaf, a.array.tensor()) for a in arrays
            if a.array.value is not a.placeholder]


@dataclass
class _Trace:
    signature: signatures.Signature
    graph: object
    placeholders: list          # per parameter: list of placeholder tensors (None for fixed leaves)
    output_structure: object
    fetch_index: list           # per output leaf: index into fetches, or None (a Python value)
                                # (constants holds a fetched leaf's ListOutput or NumberOutput: what it is made)
    fetches: list
    constants: list             # per output leaf: the Python value when not fetched
    effects: object             # the graph's final effect node (run even when not returned), or None
    session: object = None
    keep_alive: list = field(default_factory=list)
    # how a call runs it: per argument with graph inputs, (its index, None for a plain leaf or the
    # indices of its fed leaves in nest.flatten order), and the session callable that takes the
    # values of those inputs in that order
    fed_arguments: list = field(default_factory=list)
    run: object = None
    # the Python state it reads and writes beyond its arguments (captured_state.py): guards checked and
    # arrays fed at each call, writes applied after each run
    captured: captured_state.CapturedInputs = captured_state.NONE
    fed: list = field(default_factory=list)  # the placeholders `run` feeds, in its order
    fast: object = None                      # fast_calls.make_fast_call's function, or None
    argument_writes: list = field(default_factory=list)  # ArgumentWrites, fetched after the captured state's


class Function:
    """A Python function compiled to a dataflow graph per input signature, run by the executor.

    Calling it converts the function (once), traces a graph for the
    signature of the arguments (dtype and shape of arrays; Python scalars
    become graph inputs of numpy's default dtype unless named in
    `static_argnames`; other values are fixed by value or identity), caches
    it, runs it and returns numpy values with the function's return structure.

    With `relax_shapes=True`, a call whose array shapes differ from an earlier
    trace's only in some dims is traced once with those dims unknown, and that
    graph then serves every such shape.

    Variables created inside the function are created on its first trace
    only; later traces (new signatures) reuse the same objects, in creation
    order, so their values persist like those of Variables created outside.
    Used as a method, it is one Function per instance (its own traces and
    Variables).
    When a call needs a new trace, `retrace_reports` gets a line saying which
    argument changed (also logged, at INFO level, on logger "flowgraph.transpile"; each trace's time and
    graph at DEBUG).

    `mode` is the traces' Session mode: "auto" and "compiled" run them as
    compiled Python code where they can (`compiled_code` shows it), "dataflow"
    on the frame-tagged executor. A call whose arguments fit the trace it used
    last goes straight to that trace (transpile/fast_calls.py).

    `maximum_iterations` guards every graph loop its traces build (the loops of
    the functions it calls included, except those of a transpile.function with a
    `maximum_iterations` of its own, which keeps it when called here): a run in which a loop's condition still
    holds after that many iterations fails with a RunError naming the loop (its
    file:line) and the limit, instead of running on. A loop's body can set its
    own with `transpile.loop_options(maximum_iterations=...)`. Ctrl-C during a
    call stops it with exec.RunInterrupted, which names the loop and iteration
    the run was in.

    `memory_policy` ("keep", "swap" or "recompute", with `checkpoint_every` for
    "recompute") is what the gradients of its graph loops keep of their iterations
    (see graph.while_loop); a loop's body can choose its own with
    `transpile.loop_options(memory_policy=...)`.

    `inter_op_threads` is the traces' Session pool size (exec.Session): the threads
    that run heavy kernels beside the executor's own. 0 runs every kernel inline, so
    that each device a trace names (`with graph.device(...)` in the body) computes on
    one thread, its executor's.

    `device` (an exec.device.Device, e.g. `SimulatedDevice(memory_limit=...)`) holds the
    values its loops save for their gradients, and swaps those of "swap" loops to host
    memory (exec.Session's `device`; docs/design.md, "Devices").
    """

    def __init__(self, fn, static_argnames=(), relax_shapes: bool = False, mode: str = "auto",
                 maximum_iterations: int | None = None, memory_policy: str | None = None,
                 checkpoint_every: int | None = None, inter_op_threads: int = 2, device=None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
        if isinstance(inter_op_threads, bool) or not isinstance(inter_op_threads, int) or inter_op_threads < 0:
            raise ValueError(f"inter_op_threads must be an int >= 0, got {inter_op_threads!r}")
        self.inter_op_threads = inter_op_threads
        self.device = device
        if maximum_iterations is not None and (isinstance(maximum_iterations, bool) or maximum_iterations < 0
                                               or int(maximum_iterations) != maximum_iterations):
            raise ValueError(f"maximum_iterations must be an int >= 0, got {maximum_iterations!r}")
        self.mode = mode
        self.maximum_iterations = None if maximum_iterations is None else int(maximum_iterations)
        self.memory_policy = None if memory_policy is None and checkpoint_every is None else \
            memory_policy_options(memory_policy, checkpoint_every)
        if memory_policy == "swap" and device is None:
            code = _python_function(fn).__code__
            where = graph.errors.SourceLocation(code.co_filename, code.co_firstlineno)
            raise ValueError(swap_without_device(getattr(fn, "__qualname__", code.co_name), str(where)))
        self._fast = None  # the fast call of the trace the last general-path call ran
        if isinstance(fn, Function):
            fn = fn.python_function
        # fails early on what cannot be converted (builtins, classes, ...)
        python = _python_function(fn)
        self._name = getattr(fn, "__qualname__", None) or python.__qualname__
        functools.update_wrapper(self, fn)
        self.python_function = fn
        self.static_argnames = frozenset([static_argnames] if isinstance(static_argnames, str)
                                         else static_argnames)
        self._signature = inspect.signature(fn)
        unknown = self.static_argnames - set(self._signature.parameters)
        if unknown:
            raise TypeError(f"static_argnames names unknown parameters of {fn.__qualname__}: {sorted(unknown)}")
        # A call with positional arguments only, of a function whose parameters all take them, binds
        # without inspect: its arguments are the values passed, then the defaults of those not passed.
        parameters = list(self._signature.parameters.values())
        if all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters):
            required = max((i + 1 for i, p in enumerate(parameters) if p.default is p.empty), default=0)
            self._positional = (required, tuple(p.default for p in parameters[required:]))
        else:
            self._positional = None
        self._static_positions = tuple(p.name in self.static_argnames for p in parameters)
        # traces (and the signatures they were looked up with) by `signatures.call_key` of such calls
        self._by_call_key: dict = {}
        self.relax_shapes = relax_shapes
        self._traces: dict = {}
        self._last: signatures.Signature | None = None
        self._variables = _VariableScope()
        self._relaxed_captures: dict = {}  # source description -> the shape its captured array is traced with
        self._lock = threading.RLock()
        self.retrace_reports: list[str] = []
        self._per_instance: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._per_instance_strong: dict = {}

    def _loop_memory_policy(self):
        """The default memory policy of the loops a trace builds (in the default graph)."""
        if self.memory_policy is None:
            return contextlib.nullcontext()
        return graph.loop_memory_policy(*self.memory_policy)

    # -- calling -----------------------------------------------------------------------------
    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return _BoundFunction(self._for_instance(obj), obj)

    def _for_instance(self, obj) -> "Function":
        """This method's Function for instance `obj`: its own traces and its own Variables, so that
        Variables the method creates (optimizer slots, layers built on first call) are per instance."""
        with self._lock:
            try:
                per_instance = self._per_instance.get(obj)
            except TypeError:  # unhashable or not weakly referenceable: by identity, kept alive
                per_instance, _ = self._per_instance_strong.get(id(obj), (None, obj))
                if per_instance is None:
                    per_instance = self._copy()
                    self._per_instance_strong[id(obj)] = (per_instance, obj)
                return per_instance
            if per_instance is None:
                per_instance = self._per_instance[obj] = self._copy()
            return per_instance

    def _copy(self) -> "Function":
        policy, k = self.memory_policy if self.memory_policy is not None else (None, None)
        return Function(self.python_function, static_argnames=self.static_argnames, relax_shapes=self.relax_shapes,
                        mode=self.mode, maximum_iterations=self.maximum_iterations, memory_policy=policy,
                        checkpoint_every=k, inter_op_threads=self.inter_op_threads, device=self.device)

    def __call__(self, *args, **kwargs):
        if operators.is_tracing():
            return self._transpile_inline()(*args, **kwargs)
        try:
            fast = self._fast
            if fast is not None and not kwargs:
                out = fast(args)
                if out is not fast_calls.MISS:
                    return out
            # the fast path: a positional call whose argument types, dtypes and shapes (values of
            # static arguments, identities of objects) were seen before runs its trace directly
            values = key = None
            if not kwargs and self._positional is not None:
                required, defaults = self._positional
                if required <= len(args) <= required + len(defaults):
                    values = args + defaults[len(args) - required:]
                    key = signatures.call_key(values, self._static_positions)
            if key is not None:
                with self._lock:
                    hit = self._by_call_key.get(key)
                    if hit is not None:
                        trace, self._last = hit
                if hit is not None:
                    fed = trace.captured.read(values)  # None: the Python state it read changed
                    if fed is not None:
                        self._fast = trace.fast
                        return self._run(trace, values, fed)
            sig, bound, values = self._bind(args, kwargs)
            trace = self._lookup(sig, bound, key)
            self._fast = trace.fast if not kwargs else self._fast
            return self._run(trace, values, trace.captured.read(values))
        except Exception as e:
            _hide_internal_frames(e)
            raise

    def _transpile_inline(self):
        return self.with_own_loop_options(convert(self.python_function))

    def with_own_loop_options(self, converted):
        """`converted` (this function's converted code), to be called inside another function's trace
        with this function's own `maximum_iterations` for the loops it builds, not the caller's; a
        function without one keeps the caller's (as a plain function it calls does)."""
        limit = self.maximum_iterations
        if limit is None:
            return converted

        @functools.wraps(converted)
        def call(*args, **kwargs):
            with graph.get_default_graph().iteration_limit(limit):
                return converted(*args, **kwargs)
        return call

    def get_graph(self, *args, **kwargs):
        """The traced graph for these arguments (printable with str() and .to_dot())."""
        sig, bound, _ = self._bind(args, kwargs)
        return self._lookup(sig, bound).graph

    def save(self, path, *args, **kwargs) -> None:
        """Saves the graph traced for these arguments (traced now if needed) with its signature, in the
        saved-graph format; `transpile.load(path)` gives back a function of its graph inputs."""
        trace = self._lookup(*self._bind(args, kwargs)[:2])
        trace.graph.save(path, _saved_signature(trace, self._name))

    def compiled_code(self, *args, **kwargs) -> str:
        """The Python code that compiled mode runs for a call with these arguments (traced now if
        need be): the function's graph as straight code, loops as `while`, conds as `if`."""
        sig, bound, _ = self._bind(args, kwargs)
        trace = self._lookup(sig, bound)
        return trace.session.compiled_source(trace.fetches + [trace.effects], trace.fed)

    @property
    def last_retrace_report(self) -> str | None:
        return self.retrace_reports[-1] if self.retrace_reports else None

    @property
    def traces(self) -> int:
        return sum(len(variants) for variants in self._traces.values())

    # -- tracing -----------------------------------------------------------------------------
    def _bind(self, args, kwargs) -> tuple[signatures.Signature, inspect.BoundArguments, list]:
        """The call's signature, bound arguments, and argument values (in the order of the signature's names)."""
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self._name}(): {e}") from None
        bound.apply_defaults()
        arguments = signatures.expand_arguments(bound)
        return signatures.Signature.build(arguments, self.static_argnames), bound, [v for _, _, v in arguments]

    def _lookup(self, sig: signatures.Signature, bound, call_key=None) -> _Trace:
        """The trace that runs a call of signature `sig` (traced now if none does); remembered
        under `call_key` too, when the call has one. A signature has several traces when the Python
        state they read (captured_state.py) differs between calls."""
        with self._lock:
            values = [v for _, _, v in signatures.expand_arguments(bound)]
            variants = self._traces.get(sig.key)
            if variants is None and self.relax_shapes:
                variants = next((v for v in self._traces.values() if v[0].signature.accepts(sig)), None)
            trace = next((t for t in variants or () if t.captured.read(values) is not None), None)
            if trace is None:
                traced = sig if variants is None else variants[0].signature
                if variants is None and self.relax_shapes:
                    for v in list(self._traces.values()):
                        relaxed = v[0].signature.relaxed_with(sig)
                        if relaxed is not None:
                            traced = relaxed
                            break
                if self._traces:
                    self._report_retrace(sig, traced, variants[-1] if variants else None, values)
                start = time.perf_counter()
                trace = self._trace_or_specialize(traced, bound)
                logger.debug("traced %s in %.1f ms: %r", self._name, (time.perf_counter() - start) * 1e3, trace.graph)
                self._traces.setdefault(trace.signature.key, []).append(trace)
                # with a new trace, relax_shapes may resolve a signature differently: start afresh
                self._by_call_key.clear()
            self._last = sig
            if call_key is not None:
                if len(self._by_call_key) >= 256:  # calls of ever new shapes under relax_shapes
                    self._by_call_key.clear()
                self._by_call_key[call_key] = (trace, sig)
            return trace

    def _report_retrace(self, sig, traced, same_signature: _Trace | None, values) -> None:
        """Records why a call needs a new trace: its signature changed, or (`same_signature`: a trace of
        its signature) the Python state that trace read did."""
        if same_signature is not None:
            failing = same_signature.captured.failing(values)
            report = f"retracing {self._name}: {failing.change(values) if failing else '?'}"
            if isinstance(failing, captured_state.ValueCheck) and failing.becomes_input:
                # a number in the Python state that changes between calls (a counter, a rate) is read at
                # each call from now on, as Dynamo's automatic dynamic shapes do
                self._relaxed_captures[failing.source.describe()] = captured_state.DYNAMIC
                report += " (from now on a graph input)"
            if self.relax_shapes:
                self._relax_captured(same_signature, values)
        else:
            report = signatures.retrace_report(self._name, self._last, sig)
            if traced is not sig:
                report += f" (relaxed: {'; '.join(traced.names[i] + ': ' + traced.describe(i) for i in range(len(traced.names)) if traced.key[i] != sig.key[i])})"
        self.retrace_reports.append(report)
        logger.info(report)
        if self.traces == _RETRACE_WARNING_AFTER:
            warnings.warn(f"{self._name} was traced {_RETRACE_WARNING_AFTER + 1} times; see its retrace_reports "
                          f"({report})", stacklevel=4)

    def _trace_or_specialize(self, sig: signatures.Signature, bound) -> _Trace:
        """A trace for `sig`; where graph control flow refuses a construct whose condition depends on
        Python number arguments only (a variable assigned in one branch of `if flag:`), a trace with
        those arguments static instead: one trace per value, as Python would run it."""
        try:
            return self._trace(sig, bound)
        except (operators.StagingError, operators.ConditionallyDefinedError) as error:
            deciding = _python_scalars_deciding(error, sig)
            if not deciding:
                raise
            refused = error
        static = self.static_argnames | deciding
        arguments = signatures.expand_arguments(bound)
        specialized = signatures.Signature.build(arguments, static)
        trace = self._trace(specialized, bound)
        self._make_static(static)
        logger.info("%s: the Python number argument(s) %s decide a construct that graph control flow cannot "
                    "express (%s); from now on %s is traced once per value of them", self._name,
                    ", ".join(sorted(deciding)), str(refused).split("\n")[0], self._name)
        return trace

    def _make_static(self, static: frozenset) -> None:
        self.static_argnames = static
        self._static_positions = tuple(p.name in static for p in self._signature.parameters.values())
        self._by_call_key.clear()

    def _relax_captured(self, trace: _Trace, values) -> None:
        """Under relax_shapes, a captured array whose shape changed is traced with the differing dims unknown."""
        for name, dtype, shape, now in trace.captured.arrays_now(values):
            shape = self._relaxed_captures.get(name, shape)
            if isinstance(now, np.ndarray) and now.dtype == dtype and now.ndim == len(shape):
                self._relaxed_captures[name] = tuple(d if d == e else None for d, e in zip(shape, now.shape))

    def _trace(self, sig: signatures.Signature, bound: inspect.BoundArguments) -> _Trace:
        converted = convert(self.python_function)
        g = graph.Graph()
        placeholders = []
        scope = self._variables
        scope.reusing, scope.index = bool(scope.created), 0
        keep_alive = []
        values = [v for _, _, v in signatures.expand_arguments(bound)]
        state = trace_state()
        outer = state.captures, state.writes
        capture = state.captures = captured_state.StateCapture(values, self._relaxed_captures)
        state.writes = []
        try:
            with graph.variable_creator_scope(scope.create), g.as_default(), \
                    g.iteration_limit(self.maximum_iterations), self._loop_memory_policy(), operators.tracing():
                capture.add_callable(self.python_function)
                bound_to = getattr(self.python_function, "__self__", None)
                if bound_to is not None or not isinstance(self.python_function, types.FunctionType):
                    capture.add_bound_object(bound_to if bound_to is not None else self.python_function)
                for k, specs in enumerate(sig.specs):
                    if sig.structures[k] is None and specs[0].kind in ("object", "static"):
                        capture.add_argument(k, sig.names[k], values[k])
                arrays: list = []
                call_args, call_kwargs = self._symbolic_arguments(bound, sig, placeholders, keep_alive, arrays)
                try:
                    out = converted(*call_args, **call_kwargs)
                except KeyError as e:
                    raise _graph_key_error(e) from None
                out = _finish_outputs(out)
                leaves = nest.flatten(out) if isinstance(out, (list, tuple, dict)) else [out]
                fetches, fetch_index, constants = [], [], []
                for leaf in leaves:
                    if isinstance(leaf, Finished):  # fetched, and made a Python list or number after each run
                        fetch_index.append(len(fetches))
                        fetches.append(leaf.tensor)
                        constants.append(leaf)
                    elif isinstance(leaf, Tensor) or getattr(leaf, "is_variable", False):
                        fetch_index.append(len(fetches))
                        fetches.append(leaf)
                        constants.append(None)
                    else:
                        fetch_index.append(None)
                        constants.append(leaf)
                captured, captured_placeholders = capture.finish(g, fetches)
                argument_writes = _argument_writes(arrays)
            effects = g.last_effect(None)
        finally:
            capture.restore()
            state.captures, state.writes = outer
            scope.reusing = False
        operators.share_element_specs(g)
        trace = _Trace(sig, g, placeholders, out, fetch_index, fetches, constants, effects, keep_alive=keep_alive,
                       captured=captured, argument_writes=argument_writes)
        trace.session = Session(g, mode=self.mode, inter_op_threads=self.inter_op_threads, device=self.device)
        fed = []
        for k, phs in enumerate(placeholders):
            leaves = [i for i, ph in enumerate(phs) if ph is not None]
            if leaves:
                trace.fed_arguments.append((k, None if sig.structures[k] is None else leaves))
                fed.extend(phs[i] for i in leaves)
        # the captured arrays are fed after the arguments; the tensors written back into Python state are
        # fetched after the results, and the effects node last: its result (None) is past the others
        fed += captured_placeholders
        trace.run = trace.session.make_callable(
            fetches + captured.fetches + [w.value for w in argument_writes] + [effects], fed, name=self._name)
        trace.fed = fed
        if self._positional is not None and all(leaves is None for _, leaves in trace.fed_arguments) \
                and not argument_writes:
            required, defaults = self._positional
            trace.fast = fast_calls.make_fast_call(
                self._name, len(sig.names), required, defaults,
                [specs[0] if structure is None else None for structure, specs in zip(sig.structures, sig.specs)],
                [k for k, _ in trace.fed_arguments], trace.run,
                [_fast_leaf(i, c) for i, c in zip(fetch_index, constants, strict=True)], out,
                captured, len(fetches))
        return trace

    def _symbolic_arguments(self, bound, sig, placeholders, keep_alive, arrays):
        values = {}
        k = 0
        for name, value in bound.arguments.items():
            kind = bound.signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                new = []
                for i, v in enumerate(value):
                    new.append(self._symbolic(v, sig, k, placeholders, keep_alive, arrays))
                    k += 1
                values[name] = tuple(new)
            elif kind is inspect.Parameter.VAR_KEYWORD:
                new = {}
                for key, v in value.items():
                    new[key] = self._symbolic(v, sig, k, placeholders, keep_alive, arrays)
                    k += 1
                values[name] = new
            else:
                values[name] = self._symbolic(value, sig, k, placeholders, keep_alive, arrays)
                k += 1
        symbolic = inspect.BoundArguments(bound.signature, values)
        return symbolic.args, symbolic.kwargs

    def _symbolic(self, value, sig, k, placeholders, keep_alive, arrays):
        """The value the traced code gets for argument `k`: placeholders for its graph inputs, an array
        argument's as a MutableArray (recorded in `arrays`: a write into it is written back into the
        caller's array after each run, as Python's in-place writes change the caller's array)."""
        structure, specs = sig.structures[k], sig.specs[k]
        label = _placeholder_label(sig.names[k])
        leaves = nest.flatten(value) if structure is not None else [value]
        phs, out = [], []
        for i, (leaf, spec) in enumerate(zip(leaves, specs, strict=True)):
            if spec.kind == "input":
                name = label if len(specs) == 1 else f"{label}_{i}"
                ph = graph.placeholder(spec.dtype, spec.shape, name=name)
                phs.append(ph)
                if isinstance(leaf, np.ndarray):
                    array = operators.MutableArray(ph)
                    arrays.append(ArgumentArray(k, None if structure is None else i, array, ph))
                    out.append(array)
                else:
                    if type(leaf) in (bool, int, float):  # weak beside arrays, as numpy's Python scalars
                        mark_weak_type(ph, type(leaf))
                    out.append(ph)
            else:
                phs.append(None)
                keep_alive.append(leaf)
                out.append(leaf)
        placeholders.append(phs)
        return out[0] if structure is None else nest.pack_as(value, out)

    # -- running -----------------------------------------------------------------------------
    def _run(self, trace: _Trace, values, fed: list):
        """Runs `trace` with argument values `values` (as its signature's names list them) and the
        arrays `fed` that it reads from Python state, then applies its writes to that state."""
        feeds = []
        for k, leaves in trace.fed_arguments:
            if leaves is None:
                feeds.append(values[k])
            else:
                flat = nest.flatten(values[k])
                feeds.extend(flat[i] for i in leaves)
        if fed:
            feeds.extend(fed)
        results = trace.run(*feeds)
        if trace.captured.fetches or trace.captured.replays:
            trace.captured.apply(results[len(trace.fetches):], fed, values)
        first = len(trace.fetches) + len(trace.captured.fetches)
        for write, result in zip(trace.argument_writes, results[first:], strict=False):
            write.apply(values, result)
        leaves = [c if i is None else c.finish(results[i]) if c is not None else results[i]
                  for i, c in zip(trace.fetch_index, trace.constants, strict=True)]
        out = trace.output_structure
        if isinstance(out, (list, tuple, dict)):
            return nest.pack_as(out, leaves)
        return leaves[0]

    def __repr__(self) -> str:
        return f"<transpile.function {self._name}>"


class _BoundFunction:
    """A transpile.function used as a method: `self` is part of the signature (by identity)."""

    def __init__(self, function: Function, obj):
        self._function = function
        self._obj = obj
        self.python_function = types.MethodType(function.python_function, obj)

    def __call__(self, *args, **kwargs):
        return self._function(self._obj, *args, **kwargs)

    def get_graph(self, *args, **kwargs):
        return self._function.get_graph(self._obj, *args, **kwargs)

    def save(self, path, *args, **kwargs) -> None:
        self._function.save(path, self._obj, *args, **kwargs)

    def compiled_code(self, *args, **kwargs) -> str:
        return self._function.compiled_code(self._obj, *args, **kwargs)

    def _transpile_inline(self):
        return self._function.with_own_loop_options(types.MethodType(convert(self._function.python_function),
                                                                     self._obj))

    def __getattr__(self, name):
        return getattr(self._function, name)


def _python_scalars_deciding(error: BaseException, sig: signatures.Signature) -> frozenset:
    """The arguments passed as Python numbers (graph inputs of the trace) whose placeholders the graph
    conditions recorded on `error` depend on (operators.trace_state.note_conditions)."""
    conditions = getattr(error, "graph_conditions", None) or []
    placeholders = {n.name for n in _upstream_nodes(conditions) if n.op == "Placeholder"}
    return frozenset(name for name, specs, structure in zip(sig.names, sig.specs, sig.structures, strict=True)
                     if structure is None and specs[0].kind == "input" and specs[0].form == "python"
                     and _placeholder_label(name) in placeholders)


def _placeholder_label(name: str) -> str:
    """The name of the placeholder of an argument (see Function._symbolic)."""
    return name.replace("[", "_").replace("]", "").replace("'", "")


def _upstream_nodes(tensors) -> list:
    seen, todo, out = set(), [t.node for t in tensors if isinstance(t, Tensor)], []
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        todo.extend(t.node for t in node.inputs)
    return out


def _hide_internal_frames(exc: BaseException) -> None:
    """Drops this system's own frames from a traceback, so that it shows the user's code only.

    Set the environment variable FLOWGRAPH_FULL_TRACEBACKS=1 to keep them.
    """
    if os.environ.get("FLOWGRAPH_FULL_TRACEBACKS"):
        return
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    keep = [t for t in frames if not graph.errors.is_internal(t.tb_frame.f_code.co_filename)]
    if len(keep) == len(frames):
        return
    if not keep:
        exc.__traceback__ = frames[0]
        frames[0].tb_next = None
        return
    for a, b in zip(keep, keep[1:]):
        a.tb_next = b
    keep[-1].tb_next = None
    exc.__traceback__ = keep[0]


def _graph_key_error(e: KeyError) -> Exception:
    """A KeyError of a dict read with a graph-tensor key (e.g. `hs[t - 1]` with `t` the index of a graph
    loop) as a StagingError at the user's line that says why; any other KeyError as it is."""
    key = e.args[0] if len(e.args) == 1 else None
    if not operators.is_tensor(key):
        return e
    location, tb = None, e.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if not graph.errors.is_internal(code.co_filename) and not code.co_filename.startswith("<"):
            location = graph.errors.SourceLocation(code.co_filename, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return operators.StagingError(
        "a dict is read with a graph-tensor key (the index of a graph loop, or a value computed from "
        "arguments): dict keys are Python values, and this one only exists when the graph runs. Index an array "
        "instead (`hs = np.zeros((n, ...))`, then `hs[t]`), use a list appended in the loop, or make the loop "
        "a Python loop (over a Python range)", location)


def _finish_outputs(out):
    """Return values as the caller gets them: stacked lists, checked maybe-undefined values."""
    leaf = output_value

    def walk(v):
        if isinstance(v, dict):
            return type(v)((k, walk(x)) for k, x in v.items())
        if isinstance(v, (list, tuple)):
            items = [walk(x) for x in v]
            return type(v)(*items) if hasattr(type(v), "_fields") else type(v)(items)
        return leaf(v)
    return walk(out)


def function(fn=None, *, static_argnames=(), relax_shapes: bool = False, mode: str = "auto",
             maximum_iterations: int | None = None, memory_policy: str | None = None,
             checkpoint_every: int | None = None, inter_op_threads: int = 2, device=None):
    """Decorator: `@transpile.function` or `@transpile.function(static_argnames=("n",), relax_shapes=True,
    mode="compiled", maximum_iterations=100_000, memory_policy="recompute", checkpoint_every=8,
    inter_op_threads=0, device=SimulatedDevice(memory_limit=2**30))` (see Function)."""
    options = dict(static_argnames=static_argnames, relax_shapes=relax_shapes, mode=mode,
                   maximum_iterations=maximum_iterations, memory_policy=memory_policy,
                   checkpoint_every=checkpoint_every, inter_op_threads=inter_op_threads, device=device)
    if fn is None:
        return lambda f: Function(f, **options)
    return Function(fn, **options)


# --------------------------------------------------------------------------- saved traces and ONNX export

def _fast_leaf(index, constant):
    """How the fast call gives an output leaf (fast_calls.make_fast_call's `leaves`)."""
    if index is None:
        return ("constant", constant)
    return index if constant is None else ("finish", index, constant.finish)


def _saved_signature(trace: _Trace, name: str) -> Signature:
    """What a saved trace computes: its placeholders (the arguments that are graph inputs, in order),
    its fetched results, how they nest (Python values the function returns kept as they are)."""
    inputs = [ph for phs in trace.placeholders for ph in phs if ph is not None]
    leaves = [c if i is None else Output(i) if c is None else Output(i, c.kind, isinstance(c, NumberOutput))
              for i, c in zip(trace.fetch_index, trace.constants, strict=True)]
    out = trace.output_structure
    structure = nest.pack_as(out, leaves) if isinstance(out, (list, tuple, dict)) else leaves[0]
    return Signature(tuple(inputs), tuple(ph.node.name for ph in inputs), tuple(trace.fetches), structure,
                     trace.effects, name)


class SavedFunction:
    """A function saved with `Function.save`, loaded: its graph runs with the executor, without the source.

    It takes the saved trace's graph inputs (the arguments that were arrays or numbers, containers
    flattened; static arguments keep their traced values) in order or by name (`input_names`), and
    returns the results with the function's structure.
    """

    def __init__(self, saved):
        if saved.signature is None:
            raise ValueError("this saved graph has no signature (it was saved with Graph.save, not by a "
                             "transpile.function): load it with graph.load")
        self.graph, self.signature = saved.graph, saved.signature
        self.input_names = self.signature.input_names
        self.__name__ = self.signature.name
        fetches = [*self.signature.outputs, *([self.signature.effects] if self.signature.effects else [])]
        self._run = Session(self.graph).make_callable(fetches, list(self.signature.inputs))

    def __call__(self, *args, **kwargs):
        names = self.input_names
        if len(args) > len(names) or set(kwargs) - set(names[len(args):]):
            raise TypeError(f"{self.__name__}() takes {', '.join(names)}; got {len(args)} positional arguments "
                            f"and {sorted(kwargs)}")
        values = list(args) + [kwargs.pop(n) for n in names[len(args):] if n in kwargs]
        if len(values) != len(names):
            raise TypeError(f"{self.__name__}() is missing {', '.join(names[len(values):])}")
        # fed as they are: the session's feed check converts them, or refuses them naming the input, by the rule
        # Session.run applies (docs/design.md, "Feeds"); converting here first would truncate 3.7 into an int 3
        results = self._run(*values)
        return self.signature.pack(list(results[:len(self.signature.outputs)]))

    def __repr__(self) -> str:
        return f"<transpile.SavedFunction {self.__name__}({', '.join(self.input_names)})>"


def load(path) -> SavedFunction:
    """The function saved at `path` by `Function.save` (see SavedFunction)."""
    return SavedFunction(load_saved(path))


def export_onnx(fn, example_args, path=None, *, drop=(), dynamic_axes=None):
    """The onnx.ModelProto of `fn`'s graph traced for `example_args` (a tuple); saved to `path` when given.

    The model's inputs are the arguments that are graph inputs, in order and
    named after them; its outputs are the results, flattened, named `output_0`, `output_1`, ...
    `drop` leaves out prints and asserts ("Print", "Assert"); see graph.onnx.export.
    `dynamic_axes` names the dims that take any size, as torch.onnx.export's: `{"x": {0: "batch"},
    "output_0": {0: "batch"}}` (or `{"x": [0]}`, named "x_0"). The function is traced with those input
    dims unknown, so the model computes from the sizes it is given (docs/export.md, "Dynamic axes").
    """
    function = fn if isinstance(fn, (Function, _BoundFunction)) else Function(fn)
    args = tuple(example_args)
    if isinstance(function, _BoundFunction):
        function, args = function._function, (function._obj, *args)
    sig, bound, _ = function._bind(args, {})
    if dynamic_axes:  # a trace of its own, with the named input dims unknown (not cached for calls)
        trace = function._trace_or_specialize(sig.with_unknown_dims(_unknown_input_dims(sig, dynamic_axes)), bound)
    else:
        trace = function._lookup(sig, bound)
    sig = _saved_signature(trace, function._name)
    for out in sig.outputs:
        if not isinstance(out, Tensor):
            raise TypeError(f"{function._name} returns Variable {out.name!r}, whose updated value an exported "
                            "model cannot give: return a tensor (its value) instead")
    return graph.onnx.export(trace.graph, list(sig.inputs), list(sig.outputs), path, input_names=sig.input_names,
                             output_names=[f"output_{k}" for k in range(len(sig.outputs))], drop=drop,
                             effects=[sig.effects] if sig.effects is not None else [], model_name=function._name,
                             dynamic_axes=dynamic_axes)


def _unknown_input_dims(sig: signatures.Signature, dynamic_axes) -> dict[tuple[int, int], set[int]]:
    """{(argument, leaf): axes} of the inputs `dynamic_axes` names (by the model's input names, as
    Function._symbolic names the placeholders); graph.onnx.export checks the names and axes."""
    unknown = {}
    for k, specs in enumerate(sig.specs):
        label = _placeholder_label(sig.names[k])
        for i, spec in enumerate(specs):
            axes = dynamic_axes.get(label if len(specs) == 1 else f"{label}_{i}")
            if spec.kind == "input" and axes is not None:
                unknown[(k, i)] = {int(a) for a in axes if 0 <= int(a) < len(spec.shape)}
    return unknown
