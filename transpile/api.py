"""Public API: `function` (convert, trace per signature, run), `convert`, `to_code`."""
from __future__ import annotations

import functools
import inspect
import os
import threading
import time
import types
import warnings
import weakref

import numpy as np

import graph
import graph.errors
import graph.onnx
from exec import Session
from exec.compiled import MODES
from exec.profiler import profile  # noqa: F401  (transpile.profile: traces of calls, exec/profiler.py)
from graph import nest
from graph.gc_pause import gc_paused
from graph.logs import get_logger
from graph.node import Tensor
from graph.saving import Output, Signature, load_saved
from transpile import captured_state, fast_calls, operators, signatures
from transpile.errors import swap_without_device
from transpile.operators.loop_options import memory_policy_options
from transpile.operators.outputs import NumberOutput
from transpile.tracing import Trace, TraceCache, TraceSettings, VariableScope, build_trace, placeholder_label

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
        self.relax_shapes = relax_shapes
        self._traces = TraceCache()
        self._last: signatures.CallSignature | None = None
        self._variables = VariableScope()
        self._relaxed_captures: dict = {}  # source description -> the shape its captured array is traced with
        self._lock = threading.RLock()
        self.retrace_reports: list[str] = []
        self._per_instance: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._per_instance_strong: dict = {}

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
                    hit = self._traces.by_call_key(key)
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
        return self.trace_for(args, kwargs).graph

    def save(self, path, *args, **kwargs) -> None:
        """Saves the graph traced for these arguments (traced now if needed) with its signature, in the
        saved-graph format; `transpile.load(path)` gives back a function of its graph inputs."""
        trace = self.trace_for(args, kwargs)
        trace.graph.save(path, _saved_signature(trace, self._name))

    def compiled_code(self, *args, **kwargs) -> str:
        """The Python code that compiled mode runs for a call with these arguments (traced now if
        need be): the function's graph as straight code, loops as `while`, conds as `if`."""
        trace = self.trace_for(args, kwargs)
        return trace.session.compiled_source([*trace.fetches, trace.effects], list(trace.fed))

    @property
    def last_retrace_report(self) -> str | None:
        return self.retrace_reports[-1] if self.retrace_reports else None

    @property
    def traces(self) -> int:
        return len(self._traces)

    def trace_for(self, args: tuple, kwargs: dict | None = None, *, dynamic_axes=None) -> Trace:
        """The trace that runs a call with these arguments (traced now if need be): its graph, inputs,
        fetches and how its results nest (transpile/tracing.py). With `dynamic_axes` (export_onnx's),
        a trace of its own with those input dims unknown, not kept for calls."""
        sig, bound, _ = self._bind(args, kwargs or {})
        if dynamic_axes:
            return self._trace_or_specialize(sig.with_unknown_dims(_unknown_input_dims(sig, dynamic_axes)), bound)
        return self._lookup(sig, bound)

    # -- tracing -----------------------------------------------------------------------------
    def _bind(self, args, kwargs) -> tuple[signatures.CallSignature, inspect.BoundArguments, list]:
        """The call's signature, bound arguments, and argument values (in the order of the signature's names)."""
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self._name}(): {e}") from None
        bound.apply_defaults()
        arguments = signatures.expand_arguments(bound)
        return signatures.CallSignature.build(arguments, self.static_argnames), bound, [v for _, _, v in arguments]

    def _lookup(self, sig: signatures.CallSignature, bound, call_key=None) -> Trace:
        """The trace that runs a call of signature `sig` (traced now if none does); remembered
        under `call_key` too, when the call has one. A signature has several traces when the Python
        state they read (captured_state.py) differs between calls."""
        with self._lock:
            values = [v for _, _, v in signatures.expand_arguments(bound)]
            variants = self._traces.variants(sig, self.relax_shapes)
            trace = next((t for t in variants or () if t.captured.read(values) is not None), None)
            if trace is None:
                traced = variants[0].signature if variants else \
                    self._traces.relaxed(sig) if self.relax_shapes else sig
                if len(self._traces):
                    self._report_retrace(sig, traced, variants[-1] if variants else None, values)
                start = time.perf_counter()
                trace = self._trace_or_specialize(traced, bound)
                logger.debug("traced %s in %.1f ms: %r", self._name, (time.perf_counter() - start) * 1e3, trace.graph)
                self._traces.add(trace)
            self._last = sig
            if call_key is not None:
                self._traces.remember_call(call_key, trace, sig)
            return trace

    def _report_retrace(self, sig, traced, same_signature: Trace | None, values) -> None:
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

    def _trace_or_specialize(self, sig: signatures.CallSignature, bound) -> Trace:
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
        specialized = signatures.CallSignature.build(arguments, static)
        trace = self._trace(specialized, bound)
        self._make_static(static)
        logger.info("%s: the Python number argument(s) %s decide a construct that graph control flow cannot "
                    "express (%s); from now on %s is traced once per value of them", self._name,
                    ", ".join(sorted(deciding)), str(refused).split("\n")[0], self._name)
        return trace

    def _make_static(self, static: frozenset) -> None:
        self.static_argnames = static
        self._static_positions = tuple(p.name in static for p in self._signature.parameters.values())
        self._traces.forget_calls()

    def _relax_captured(self, trace: Trace, values) -> None:
        """Under relax_shapes, a captured array whose shape changed is traced with the differing dims unknown."""
        for name, dtype, shape, now in trace.captured.arrays_now(values):
            shape = self._relaxed_captures.get(name, shape)
            if isinstance(now, np.ndarray) and now.dtype == dtype and now.ndim == len(shape):
                self._relaxed_captures[name] = tuple(d if d == e else None for d, e in zip(shape, now.shape))

    def _trace(self, sig: signatures.CallSignature, bound: inspect.BoundArguments) -> Trace:
        with gc_paused():  # graph/gc_pause.py: the collector's walks of a growing heap were a quarter of a build
            settings = TraceSettings(self._name, self.python_function, convert(self.python_function), self.mode,
                                     self.inter_op_threads, self.device, self.maximum_iterations,
                                     self.memory_policy, self._positional, self._relaxed_captures)
            return build_trace(settings, self._variables, sig, bound)

    # -- running -----------------------------------------------------------------------------
    def _run(self, trace: Trace, values, fed: list):
        """Runs `trace` with argument values `values` (as its signature's names list them) and the
        arrays `fed` that it reads from Python state, then applies its writes to that state."""
        return trace.finish(trace.run(*trace.feeds(values, fed)), values, fed)

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

    def trace_for(self, args: tuple, kwargs: dict | None = None, **options) -> Trace:
        return self._function.trace_for((self._obj, *args), kwargs, **options)

    def _transpile_inline(self):
        return self._function.with_own_loop_options(types.MethodType(convert(self._function.python_function),
                                                                     self._obj))

    def __getattr__(self, name):
        return getattr(self._function, name)


def _python_scalars_deciding(error: BaseException, sig: signatures.CallSignature) -> frozenset:
    """The arguments passed as Python numbers (graph inputs of the trace) whose placeholders the graph
    conditions recorded on `error` depend on (operators.trace_state.note_conditions)."""
    conditions = getattr(error, "graph_conditions", None) or []
    placeholders = {n.name for n in _upstream_nodes(conditions) if n.op == "Placeholder"}
    return frozenset(name for name, specs, structure in zip(sig.names, sig.specs, sig.structures, strict=True)
                     if structure is None and specs[0].kind == "input" and specs[0].form == "python"
                     and placeholder_label(name) in placeholders)


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

def _saved_signature(trace: Trace, name: str) -> Signature:
    """What a saved trace computes: its placeholders (the arguments that are graph inputs, in order),
    its fetched results, how they nest (Python values the function returns kept as they are)."""
    inputs = trace.inputs
    leaves = [leaf.constant if leaf.fetch is None else Output(leaf.fetch) if leaf.finished is None
              else Output(leaf.fetch, leaf.finished.kind, isinstance(leaf.finished, NumberOutput))
              for leaf in trace.outputs]
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
    name = function.__qualname__
    trace = function.trace_for(tuple(example_args), dynamic_axes=dynamic_axes)
    sig = _saved_signature(trace, name)
    for out in sig.outputs:
        if not isinstance(out, Tensor):
            raise TypeError(f"{name} returns Variable {out.name!r}, whose updated value an exported "
                            "model cannot give: return a tensor (its value) instead")
    return graph.onnx.export(trace.graph, list(sig.inputs), list(sig.outputs), path, input_names=sig.input_names,
                             output_names=[f"output_{k}" for k in range(len(sig.outputs))], drop=drop,
                             effects=[sig.effects] if sig.effects is not None else [], model_name=name,
                             dynamic_axes=dynamic_axes)


def _unknown_input_dims(sig: signatures.CallSignature, dynamic_axes) -> dict[tuple[int, int], set[int]]:
    """{(argument, leaf): axes} of the inputs `dynamic_axes` names (by the model's input names, as
    Function._symbolic names the placeholders); graph.onnx.export checks the names and axes."""
    unknown = {}
    for k, specs in enumerate(sig.specs):
        label = placeholder_label(sig.names[k])
        for i, spec in enumerate(specs):
            axes = dynamic_axes.get(label if len(specs) == 1 else f"{label}_{i}")
            if spec.kind == "input" and axes is not None:
                unknown[(k, i)] = {int(a) for a in axes if 0 <= int(a) < len(spec.shape)}
    return unknown
