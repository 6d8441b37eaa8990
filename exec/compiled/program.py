"""`compile_program`: a plan's graph as one Python function, ready to call with the fed values."""
from __future__ import annotations

import itertools
import linecache
from typing import Callable

import numpy as np

from exec import kernels as _kernels
from exec import layout
from exec.compiled import rows, runtime
from exec.compiled.casts import scalar_casts
from exec.compiled.codegen import Source, generate
from exec.compiled.counters import find_counters, python_ints
from exec.compiled.folding import constant_lookup, drop_unread, fold_constants
from exec.compiled.fusion import Fused, fuse
from exec.compiled.structure import Call, Loop, Structured, structure
from exec.compiled.threads import LoadAwareBlas, uses_threaded_blas
from exec.compiled.truth import Tested
from exec.donation import donatable_slot, exclusive_inputs
from graph.node import Node, Tensor

_serial = itertools.count(1)


class Program:
    """A compiled plan: `program(values)` runs it with the fed values (in feed order) and returns the
    fetched values (in fetch order), as the dataflow executor's `execute` does.

    `source` is the generated Python (also shown in tracebacks: it is registered with linecache
    under `filename`).
    """

    __slots__ = ("function", "source", "filename", "fetches", "nodes")

    def __init__(self, function, source: Source, filename: str, fetches: list[Tensor], nodes: list[Node]):
        self.function = function
        self.source = source.text
        self.filename = filename
        self.fetches = fetches
        self.nodes = nodes

    def __call__(self, values) -> list:
        return self.function(*values)

    def __repr__(self) -> str:
        return f"<compiled program {self.filename}>"


def compile_program(fetches: list[Tensor], targets: list[Node], feeds: list[Tensor], rt,
                    name: str = "program", wrap_kernel: Callable | None = None) -> Program:
    """Compiles what running `fetches` and `targets` with `feeds` fed does; raises
    structure.Unstructured where the graph's control flow is not one the compiler handles.
    `wrap_kernel(node, kernel)`, when given, is what the program calls instead of each kernel (a
    profile's timing wrapper: exec/timeline.py)."""
    with _kernels.feeding(t.node for t in feeds):  # a fed node's value is never baked into a kernel
        return _compile(fetches, targets, feeds, rt, name, wrap_kernel)


def _compile(fetches: list[Tensor], targets: list[Node], feeds: list[Tensor], rt, name: str,
             wrap_kernel: Callable | None = None) -> Program:
    program = structure(fetches, targets, feeds)
    constant_of = lambda node: _kernels.get_kernel(node, rt)()  # noqa: E731
    folded = fold_constants(program.steps, lambda node: _kernels.get_kernel(node, rt), constant_of,
                            frozenset(program.fed))
    drop_unread(program)
    calls = list(_calls(program.steps))
    value = constant_lookup(folded, constant_of, frozenset(program.fed))
    counters = find_counters(program.steps, {(t.node.id, t.index): c for c in calls for t in c.outs if t is not None},
                             value)
    row_reads = rows.specialise(program, calls, counters, value)
    casts = scalar_casts(calls)
    fuse(program)
    tested = Tested(program)
    ints = python_ints(counters, tested, set(row_reads.kernels) | set(row_reads.operators), value)
    kernel_of = _kernel_chooser(program, rt, folded, row_reads.kernels)
    if wrap_kernel is not None:
        kernel_of = _wrapped(kernel_of, wrap_kernel)
    serial = next(_serial)
    filename = f"<compiled {name} #{serial}>"
    helpers = {"DEAD": runtime.DEAD, "TRUE": np.True_, "dead": runtime.dead, "failed": runtime.failed,
               "interrupted": runtime.interrupted, "FETCHES": list(fetches), **casts.globals}
    operators = {**row_reads.operators, **casts.operators, **tested.logical, **ints.operators}
    source = generate(program, name, kernel_of, constant_of, helpers, folded, operators, ints.inits)
    code = compile(source.text, filename, "exec")
    linecache.cache[filename] = (len(source.text), None, source.text.splitlines(keepends=True), filename)
    namespace = dict(source.globals)
    exec(code, namespace)
    function = namespace[name]
    if uses_threaded_blas(program.nodes):
        function = LoadAwareBlas(function)
    return Program(function, source, filename, list(fetches), program.nodes)


def _kernel_chooser(program: Structured, rt, folded: dict, specialised: dict):
    """node -> its kernel: `specialised[node]` where the compiler rewrote the node (exec/compiled/rows.py),
    else the in-place variant where the node alone reads a fresh input buffer (exec/donation.py), the same
    decision the dataflow plan takes; never a folded constant's."""
    calls = [s for s in _calls(program.steps)]
    local = {n: i for i, n in enumerate(program.nodes)}
    exclusive = exclusive_inputs(program.nodes, local, program.fetches, program.fed)
    chosen = {}
    packed = layout.packed_transposes(program.nodes)
    for call in calls:
        node, fn = call.node, specialised.get(call.node)
        if fn is not None:
            chosen[node] = fn
            continue
        slots = [j for j in exclusive.get(local[node], ())
                 if (call.args[j].node.id, call.args[j].index) not in folded]
        if slots and len(node.outputs) == 1 and node.op in _kernels.INPLACE:
            slot = donatable_slot(node, slots)
            if slot is not None:
                fn = _kernels.get_inplace_kernel(node, rt, slot)
        if fn is None and node in packed:  # a loop's constant matmul operand laid out once (exec/layout.py)
            fn = layout.packed(_kernels.get_kernel(node, rt))
        chosen[node] = fn if fn is not None else _kernels.get_kernel(node, rt)
    return chosen.__getitem__


def _wrapped(kernel_of: Callable, wrap_kernel: Callable) -> Callable:
    """kernel_of with each node's kernel wrapped once (the generated code binds one global per kernel)."""
    made: dict = {}

    def wrapped_kernel_of(node: Node):
        fn = made.get(node)
        if fn is None:
            fn = made[node] = wrap_kernel(node, kernel_of(node))
        return fn
    return wrapped_kernel_of


def _calls(steps):
    for s in steps:
        if isinstance(s, Call):
            yield s
        elif isinstance(s, Loop):
            yield from _calls(s.head)
            yield from _calls(s.tail)
            yield from _calls(s.body)
        elif isinstance(s, Fused):  # its calls run where its kernel declines
            yield from s.calls
