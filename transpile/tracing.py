"""One trace of a `transpile.function`: the graph built for a call signature, and how a call runs it.

`build_trace` runs the converted function once with placeholders for the arguments that are graph
inputs (numpy arrays as MutableArrays, so writes into them are written back to the caller) and
records what it built as a frozen `Trace`: the graph, what a run fetches and how the results nest,
the Python state it reads and writes (captured_state.py), and the callables that run it.
`TraceCache` keeps a function's traces, by signature and by the call keys of calls seen before.
"""
from __future__ import annotations

import inspect
import types
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

import graph
from exec import Session
from graph import nest
from graph.node import Tensor
from transpile import captured_state, conversion, fast_calls, operators, signatures
from transpile.operators.leaves import mark_weak_type
from transpile.operators.outputs import Finished, output_value
from transpile.operators.trace_state import trace_state

# --------------------------------------------------------------------------- the trace record


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


@dataclass(frozen=True)
class OutputLeaf:
    """How one leaf of the return value is made after a run: result `fetch` of the run (made a Python
    list or number by `finished`, a Finished, where the function returned one), or `constant`, a Python
    value the function returned (`fetch` None)."""

    fetch: int | None
    finished: Finished | None = None
    constant: object = None

    def value(self, results):
        if self.fetch is None:
            return self.constant
        return results[self.fetch] if self.finished is None else self.finished.finish(results[self.fetch])

    def fast(self):
        """This leaf as fast_calls.make_fast_call's `leaves` take it."""
        if self.fetch is None:
            return ("constant", self.constant)
        return self.fetch if self.finished is None else ("finish", self.fetch, self.finished.finish)


@dataclass(frozen=True)
class FedArgument:
    """An argument with graph inputs: its position `k` in the signature, and (None for a plain leaf)
    the indices of its fed leaves in nest.flatten order."""

    k: int
    leaves: tuple[int, ...] | None


@dataclass(frozen=True)
class Trace:
    """The graph traced for a call signature, and how a call runs it."""

    signature: signatures.CallSignature
    graph: graph.Graph
    placeholders: tuple          # per argument: its placeholder tensors (None for leaves that are not fed)
    output_structure: object     # the return value as traced (its leaves: what OutputLeaf records make)
    outputs: tuple[OutputLeaf, ...]
    fetches: tuple               # the tensors (and Variables) a run fetches for the return value
    effects: object              # the graph's final effect node (run even when not returned), or None
    session: Session
    fed_arguments: tuple[FedArgument, ...]
    fed: tuple                   # the placeholders `run` feeds, in its order: the arguments', then captured
    run: object                  # the session callable: fed values -> fetches, captured writes, argument writes
    # the Python state it reads and writes beyond its arguments (captured_state.py): guards checked and
    # arrays fed at each call, writes applied after each run
    captured: captured_state.CapturedInputs
    argument_writes: tuple[ArgumentWrite, ...]
    fast: object                 # fast_calls.make_fast_call's function, or None
    keep_alive: tuple            # the objects its static leaves were traced with (checked by identity)

    def feeds(self, values, fed: list) -> list:
        """The values `run` takes for argument values `values` and captured arrays `fed`."""
        feeds = []
        for arg in self.fed_arguments:
            if arg.leaves is None:
                feeds.append(values[arg.k])
            else:
                flat = nest.flatten(values[arg.k])
                feeds.extend(flat[i] for i in arg.leaves)
        if fed:
            feeds.extend(fed)
        return feeds

    def finish(self, results, values, fed: list):
        """After a run: applies its writes to the Python state and the caller's arrays; the return value."""
        if self.captured.fetches or self.captured.replays:
            self.captured.apply(results[len(self.fetches):], fed, values)
        first = len(self.fetches) + len(self.captured.fetches)
        for write, result in zip(self.argument_writes, results[first:], strict=False):
            write.apply(values, result)
        leaves = [leaf.value(results) for leaf in self.outputs]
        out = self.output_structure
        return nest.pack_as(out, leaves) if isinstance(out, (list, tuple, dict)) else leaves[0]

    @property
    def inputs(self) -> list:
        """The placeholders of the arguments that are graph inputs, in order."""
        return [ph for phs in self.placeholders for ph in phs if ph is not None]


# --------------------------------------------------------------------------- building a trace

class VariableScope:
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


@dataclass(frozen=True)
class TraceSettings:
    """What a Function traces with besides the call: its name and Python function, the converted
    function, the session options and the loop options of the graphs it builds."""

    name: str
    python_function: object
    converted: object
    mode: str
    inter_op_threads: int
    device: object
    maximum_iterations: int | None
    memory_policy: tuple | None          # (policy, checkpoint_every) for graph.loop_memory_policy
    positional: tuple | None             # (required, defaults) where every parameter is positional
    relaxed_captures: dict               # source description -> the shape its captured array is traced with


@dataclass(frozen=True)
class _Traced:
    """What running the converted function with placeholders gave."""

    output_structure: object
    outputs: tuple[OutputLeaf, ...]
    fetches: tuple
    captured: captured_state.CapturedInputs
    captured_placeholders: list
    argument_writes: tuple[ArgumentWrite, ...]
    placeholders: tuple
    keep_alive: tuple


def build_trace(settings: TraceSettings, variables: VariableScope, sig: signatures.CallSignature,
                bound: inspect.BoundArguments) -> Trace:
    """The trace of `settings`' function for calls of signature `sig` (`bound`: the call's arguments)."""
    g = graph.Graph()
    with conversion.collection_paused():  # (a first call's garbage is collected after it)
        traced = _run_converted(settings, variables, g, sig, bound)
    effects = g.last_effect(None)
    operators.share_element_specs(g)
    session = Session(g, mode=settings.mode, inter_op_threads=settings.inter_op_threads, device=settings.device)
    fed_arguments = _fed_arguments(sig, traced.placeholders)
    # the captured arrays are fed after the arguments; the tensors written back into Python state are
    # fetched after the results, and the effects node last: its result (None) is past the others
    fed = tuple(ph for phs in traced.placeholders for ph in phs if ph is not None) + tuple(traced.captured_placeholders)
    run = session.make_callable(list(traced.fetches) + traced.captured.fetches
                                + [w.value for w in traced.argument_writes] + [effects], list(fed),
                                name=settings.name)
    return Trace(sig, g, traced.placeholders, traced.output_structure, traced.outputs, traced.fetches, effects,
                 session, fed_arguments, fed, run, traced.captured, traced.argument_writes,
                 _fast_call(settings, sig, fed_arguments, run, traced), traced.keep_alive)


def _fed_arguments(sig: signatures.CallSignature, placeholders: tuple) -> tuple[FedArgument, ...]:
    """The arguments with graph inputs, each with the leaves of it that are fed."""
    out = []
    for k, phs in enumerate(placeholders):
        leaves = tuple(i for i, ph in enumerate(phs) if ph is not None)
        if leaves:
            out.append(FedArgument(k, None if sig.structures[k] is None else leaves))
    return tuple(out)


def _run_converted(settings: TraceSettings, variables: VariableScope, g, sig, bound) -> _Traced:
    values = [v for _, _, v in signatures.expand_arguments(bound)]
    capture = captured_state.StateCapture(values, settings.relaxed_captures)
    variables.reusing, variables.index = bool(variables.created), 0
    memory_policy = graph.loop_memory_policy(*settings.memory_policy) if settings.memory_policy else nullcontext()
    try:
        with trace_state().capturing(capture), trace_state().traced_function(settings.name, settings.device), \
                graph.variable_creator_scope(variables.create), g.as_default(), \
                g.iteration_limit(settings.maximum_iterations), memory_policy, operators.tracing():
            _capture_callable_state(capture, settings.python_function, sig, values)
            symbolic = SymbolicArguments(sig)
            call_args, call_kwargs = symbolic.of(bound)
            try:
                out = settings.converted(*call_args, **call_kwargs)
            except KeyError as e:
                raise graph_key_error(e) from None
            out = finish_outputs(out)
            outputs, fetches = _output_leaves(out)
            captured, captured_placeholders = capture.finish(g, fetches)
            writes = tuple(ArgumentWrite(a.k, a.leaf, a.array.tensor()) for a in symbolic.arrays
                           if a.array.value is not a.placeholder)
    finally:
        capture.restore()
        variables.reusing = False
    return _Traced(out, outputs, tuple(fetches), captured, captured_placeholders, writes,
                   tuple(symbolic.placeholders), tuple(symbolic.keep_alive))


def _capture_callable_state(capture, python_function, sig, values) -> None:
    """What the trace reads of the Python state besides its arguments' arrays: the function's globals
    and closure, the object of a bound method or callable object, and object arguments."""
    capture.add_callable(python_function)
    bound_to = getattr(python_function, "__self__", None)
    if bound_to is not None or not isinstance(python_function, types.FunctionType):
        capture.add_bound_object(bound_to if bound_to is not None else python_function)
    for k, specs in enumerate(sig.specs):
        if sig.structures[k] is None and specs[0].kind in ("object", "static"):
            capture.add_argument(k, sig.names[k], values[k])


def _output_leaves(out) -> tuple[tuple[OutputLeaf, ...], list]:
    """How each leaf of the return value is made after a run, and the tensors a run fetches for them."""
    leaves = nest.flatten(out) if isinstance(out, (list, tuple, dict)) else [out]
    outputs, fetches = [], []
    for leaf in leaves:
        if isinstance(leaf, Finished):  # fetched, and made a Python list or number after each run
            outputs.append(OutputLeaf(len(fetches), finished=leaf))
            fetches.append(leaf.tensor)
        elif isinstance(leaf, Tensor) or getattr(leaf, "is_variable", False):
            outputs.append(OutputLeaf(len(fetches)))
            fetches.append(leaf)
        else:
            outputs.append(OutputLeaf(None, constant=leaf))
    return tuple(outputs), fetches


def _fast_call(settings: TraceSettings, sig, fed_arguments, run, traced: _Traced):
    """The fast path's function for this trace (fast_calls.py), where its arguments are plain enough."""
    if settings.positional is None or any(a.leaves is not None for a in fed_arguments) or traced.argument_writes:
        return None
    required, defaults = settings.positional
    return fast_calls.make_fast_call(
        settings.name, len(sig.names), required, defaults,
        [specs[0] if structure is None else None for structure, specs in zip(sig.structures, sig.specs)],
        [a.k for a in fed_arguments], run, [leaf.fast() for leaf in traced.outputs], traced.output_structure,
        traced.captured, len(traced.fetches))


class SymbolicArguments:
    """The values the traced code gets for a call's arguments: placeholders for its graph inputs, array
    arguments as MutableArrays (recorded in `arrays`: a write into one is written back into the
    caller's array after each run, as Python's in-place writes change the caller's array)."""

    def __init__(self, sig: signatures.CallSignature):
        self.sig = sig
        self.placeholders: list = []     # per argument: its placeholders (None for leaves not fed)
        self.keep_alive: list = []
        self.arrays: list[ArgumentArray] = []
        self._k = 0

    def of(self, bound: inspect.BoundArguments) -> tuple[tuple, dict]:
        """(args, kwargs) for the converted function."""
        values = {}
        for name, value in bound.arguments.items():
            kind = bound.signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                values[name] = tuple(self._next(v) for v in value)
            elif kind is inspect.Parameter.VAR_KEYWORD:
                values[name] = {key: self._next(v) for key, v in value.items()}
            else:
                values[name] = self._next(value)
        symbolic = inspect.BoundArguments(bound.signature, values)
        return symbolic.args, symbolic.kwargs

    def _next(self, value):
        k = self._k
        self._k += 1
        structure, specs = self.sig.structures[k], self.sig.specs[k]
        label = placeholder_label(self.sig.names[k])
        leaves = nest.flatten(value) if structure is not None else [value]
        phs, out = [], []
        for i, (leaf, spec) in enumerate(zip(leaves, specs, strict=True)):
            if spec.kind != "input":
                phs.append(None)
                self.keep_alive.append(leaf)
                out.append(leaf)
                continue
            ph = graph.placeholder(spec.dtype, spec.shape, name=label if len(specs) == 1 else f"{label}_{i}")
            phs.append(ph)
            if isinstance(leaf, np.ndarray):
                array = operators.MutableArray(ph)
                self.arrays.append(ArgumentArray(k, None if structure is None else i, array, ph))
                out.append(array)
            else:
                if type(leaf) in (bool, int, float):  # weak beside arrays, as numpy's Python scalars
                    mark_weak_type(ph, type(leaf))
                out.append(ph)
        self.placeholders.append(phs)
        return out[0] if structure is None else nest.pack_as(value, out)


def placeholder_label(name: str) -> str:
    """The name of the placeholder of an argument (`x`, `xs_0` for a container's leaves)."""
    return name.replace("[", "_").replace("]", "").replace("'", "")


def graph_key_error(e: KeyError) -> Exception:
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


def finish_outputs(out):
    """Return values as the caller gets them: stacked lists, checked maybe-undefined values."""
    def walk(v):
        if isinstance(v, dict):
            return type(v)((k, walk(x)) for k, x in v.items())
        if isinstance(v, (list, tuple)):
            items = [walk(x) for x in v]
            return type(v)(*items) if hasattr(type(v), "_fields") else type(v)(items)
        return output_value(v)
    return walk(out)


# --------------------------------------------------------------------------- the cache

class TraceCache:
    """A function's traces: by signature key (several for one signature where the Python state they
    read differs), and by the call key of positional calls seen before (signatures.call_key), which
    skips binding and building a signature."""

    _MAX_CALL_KEYS = 256   # (calls of ever new shapes under relax_shapes)

    def __init__(self):
        self._by_signature: dict = {}
        self._by_call_key: dict = {}

    def __len__(self) -> int:
        return sum(len(variants) for variants in self._by_signature.values())

    def __iter__(self):
        """Every trace, in the order they were made per signature."""
        return (trace for variants in self._by_signature.values() for trace in variants)

    def by_call_key(self, key) -> tuple[Trace, signatures.CallSignature] | None:
        return self._by_call_key.get(key)

    def remember_call(self, key, trace: Trace, sig: signatures.CallSignature) -> None:
        if len(self._by_call_key) >= self._MAX_CALL_KEYS:
            self._by_call_key.clear()
        self._by_call_key[key] = (trace, sig)

    def forget_calls(self) -> None:
        """Calls are looked up by signature again (static arguments changed, a new trace was added)."""
        self._by_call_key.clear()

    def variants(self, sig: signatures.CallSignature, relax_shapes: bool) -> list[Trace] | None:
        """The traces of `sig` (under relax_shapes, of a traced signature that accepts it), or None."""
        variants = self._by_signature.get(sig.key)
        if variants is None and relax_shapes:
            variants = next((v for v in self._by_signature.values() if v[0].signature.accepts(sig)), None)
        return variants

    def relaxed(self, sig: signatures.CallSignature) -> signatures.CallSignature:
        """The signature to trace `sig` with under relax_shapes: the first traced one relaxed to take it
        (its differing dims unknown), else `sig`."""
        for variants in self._by_signature.values():
            relaxed = variants[0].signature.relaxed_with(sig)
            if relaxed is not None:
                return relaxed
        return sig

    def add(self, trace: Trace) -> None:
        self._by_signature.setdefault(trace.signature.key, []).append(trace)
        self.forget_calls()  # with a new trace, relax_shapes may resolve a signature differently


__all__ = ["ArgumentWrite", "FedArgument", "OutputLeaf", "Trace", "TraceCache", "TraceSettings", "VariableScope",
           "build_trace", "finish_outputs", "graph_key_error", "placeholder_label"]
