"""Elementwise chains fused into one numba kernel: one pass over memory and one call per chain.

A gradient loop's body is mostly arithmetic on arrays of one shape (an LSTM cell's backward: the gates'
gradients from dh, dc and the saved activations, ~15 ufunc calls on (32, 256) floats an iteration). Each
numpy call is a pass over memory and a Python call; one loop over the elements does them all at once:
bench/fusion.py measured the LSTM cell's backward chain at 0.30x numpy's time with numba, and numexpr at
3.5x (its per-call cost and block loop) -- docs/compiled.md has the figures. Transcendentals stay numpy's:
numpy evaluates exp and tanh of float32 with SIMD loops, numba calls libm per element (5-7x slower), so
only `FUSABLE` ops join a chain.

A chain is a set of calls in one block (same guard) that feed one another or read one input, all of one static shape
and one float dtype, scalars of that dtype aside, with no other step between them that depends on one and
feeds another. Its kernel computes every value the rest of the program reads, element by element, in the
order of operations of the ops' own numpy kernels (exec/kernels/math.py), so the results are the unfused
ones bit for bit: float32 arithmetic in float32, no contraction into fused multiply-adds.

The kernel may decline (it returns None) and the generated code then runs the chain's own kernel calls:
- until the chain has run `HOT_CALLS` times (numba compiles in about a second, which pays only in loops);
  it is compiled then, in the call, from inputs it can take. (On a thread of its own, the compilation
  took the GIL from the program for seconds on the busy 2-core box: bench/lstm.py's timed steps ran at
  350 ms instead of ~180 while it went on. In the call, the first step pays it, once.);
- where an input is not what it was compiled for: another dtype or shape, an array not in C order (a
  broadcast gradient seed in a loop's first iteration, a split's blocks), a 0-d array for a scalar. A loop
  over views would be several times slower than numpy's strided kernels, so it is never compiled for them;
- under any numpy error state that does not ignore underflow: numpy may be asked to raise, numba never is;
- when a value it computed is not finite: numpy's calls then warn or raise on the overflow or invalid
  operation as they would have (+, -, * carry a non-finite value into every value computed from it, so
  checking what the kernel writes is enough).
So values, dtypes, warnings and errors are those of the unfused code, and the program runs numpy's kernels
alone where numba is not installed (it is optional: `pip install flowgraph-ml[fast]`).
"""
from __future__ import annotations

import importlib.util
import itertools
from dataclasses import dataclass

import numpy as np

from exec.compiled.folding import reads
from exec.compiled.structure import Call, Loop, Select, Structured, tensor_key
from graph import shapes as _sh

# The per-element form of each op, written as its numpy kernel computes it (operands {0}, {1}; ONE is the
# dtype's 1): TanhGrad is (1 - y*y) * dy and SigmoidGrad ((1 - y) * y) * dy in exec/kernels/math.py.
FUSABLE = {
    "Add": "{0} + {1}", "Sub": "{0} - {1}", "Mul": "{0} * {1}", "Neg": "-{0}", "Square": "{0} * {0}",
    "TanhGrad": "(ONE - {0} * {0}) * {1}", "SigmoidGrad": "(ONE - {0}) * {0} * {1}",
}
# Ops whose operands must be whole arrays (their kernels take another path for a scalar).
_WHOLE_OPERANDS = frozenset({"TanhGrad", "SigmoidGrad"})
# A chain pays for its call and checks (~2 us) from a few ops on arrays of this size on.
MIN_ELEMENTS = 1 << 10
MIN_OPS = 3
# Calls of a chain before its kernel is compiled; refusals of its inputs in a row before it is given up.
HOT_CALLS = 50
MAX_REFUSALS = 8
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

_available: bool | None = None


def available() -> bool:
    """Whether numba is installed (looked up once, without importing it)."""
    global _available
    if _available is None:
        _available = importlib.util.find_spec("numba") is not None
    return _available


@dataclass(eq=False)
class Fused:
    """A chain's calls (in order) run as one kernel: `outputs = kernel(*inputs)`, or the calls where it declines."""
    calls: list
    inputs: list      # the tensors the chain reads from outside it, canonical, each once
    outputs: list     # the chain's values read outside it
    kernel: "FusedKernel"
    guard: tuple = ()


def fuse(program: Structured) -> None:
    """Replaces the fusable chains of `program`'s blocks by `Fused` steps (where numba is installed)."""
    if not available():
        return
    counts = reads(program)
    _fuse_block(program.steps, counts)


def _fuse_block(steps: list, counts: dict) -> None:
    for s in steps:
        if isinstance(s, Loop):
            for part in (s.head, s.body, s.tail):
                _fuse_block(part, counts)
    while True:  # found again after each change: moving steps may join or split the chains left
        chains = _chains(steps)
        if not chains:
            return
        _replace(steps, chains[0], counts)


# ----------------------------------------------------------------------------- finding chains

def _member(s) -> tuple | None:
    """(shape, dtype) of a call that may join a chain, else None."""
    if not isinstance(s, Call) or s.node.op not in FUSABLE or len(s.node.outputs) != 1 or s.outs[0] is None:
        return None
    out = s.node.outputs[0]
    if out.dtype not in _DTYPES or not _sh.is_fully_defined(out.shape) or _sh.num_elements(out.shape) < MIN_ELEMENTS:
        return None
    for t in s.args:
        whole = t.shape == out.shape
        if t.dtype != out.dtype or not (whole or t.shape == () and s.node.op not in _WHOLE_OPERANDS):
            return None
    return out.shape, out.dtype


def _chains(steps: list) -> list[list[Call]]:
    """The chains of one block: calls of one guard, shape and dtype connected by the values they pass on or
    read together (one pass reads a shared input once), in block order."""
    kind = {id(s): _member(s) for s in steps}
    made = {}  # value key -> the candidate call that makes it
    for s in steps:
        if kind[id(s)] is not None:
            made[tensor_key(s.outs[0])] = s
    parent = {id(s): id(s) for s in steps if kind[id(s)] is not None}

    def root(x):
        while parent[x] != x:
            parent[x] = x = parent[parent[x]]
        return x
    readers: dict = {}  # (value key, guard, kind) -> a candidate that reads it: calls sharing an input join
    for s in steps:
        if kind[id(s)] is None:
            continue
        for t in s.args:
            src = made.get(tensor_key(t))
            if src is not None and src.guard == s.guard and kind[id(src)] == kind[id(s)]:
                parent[root(id(src))] = root(id(s))
            if t.shape != ():
                other = readers.setdefault((tensor_key(t), s.guard, kind[id(s)]), s)
                parent[root(id(other))] = root(id(s))
    groups: dict = {}
    for s in steps:
        if id(s) in parent:
            groups.setdefault(root(id(s)), []).append(s)
    return [g for g in groups.values() if len(g) >= MIN_OPS and _convex(steps, g)]


def _convex(steps: list, chain: list) -> bool:
    """Whether the chain can run at its last call's place: no step between its calls depends on one of them
    and feeds a later one, and the steps that must move after it all come after those that stay."""
    members = {id(s) for s in chain}
    first, last = steps.index(chain[0]), steps.index(chain[-1])
    tainted: set = set()  # values computed from the chain's values by steps that are not in it
    made_by_chain = {tensor_key(s.outs[0]) for s in chain}
    moved_seen = False
    for s in steps[first:last + 1]:
        ins = {tensor_key(t) for t in _step_reads(s)}
        if id(s) in members:
            if ins & tainted:
                return False
            continue
        if ins & (tainted | made_by_chain):
            tainted |= {tensor_key(t) for t in _step_writes(s)}
            moved_seen = True
        elif moved_seen:
            return False  # it would run before a step written before it
    return True


def _step_reads(s) -> list:
    if isinstance(s, Call):
        return list(s.args)
    if isinstance(s, Select):
        return [s.source]
    if isinstance(s, Loop):
        return [v for _, v in s.init] + _free_reads(s)
    return list(s.inputs)


def _free_reads(loop: Loop) -> list:
    out = [v for _, v in loop.back] + [loop.pred] + list(loop.exits)
    for part in (loop.head, loop.body, loop.tail):
        for s in part:
            out += _step_reads(s)
    return out


def _step_writes(s) -> list:
    if isinstance(s, Call):
        return [o for o in s.outs if o is not None]
    if isinstance(s, Select):
        return [s.out] + ([s.index_out] if s.index_out is not None else [])
    if isinstance(s, Loop):
        return [m for m, _ in s.init] + list(s.exits)
    return list(s.outputs)


def _replace(steps: list, chain: list, counts: dict) -> None:
    """Puts the chain's Fused step where its last call was, the steps between that read its values after it."""
    members = {id(s) for s in chain}
    first, last = steps.index(chain[0]), steps.index(chain[-1])
    made = {tensor_key(s.outs[0]): s.outs[0] for s in chain}
    inner_reads: dict = {}
    inputs: dict = {}
    for s in chain:
        for t in s.args:
            k = tensor_key(t)
            if k in made:
                inner_reads[k] = inner_reads.get(k, 0) + 1
            else:
                inputs.setdefault(k, t)
    outputs = [t for k, t in made.items() if counts.get(k, 0) > inner_reads.get(k, 0)]
    stay, moved, tainted = [], [], set(made)
    for s in steps[first:last + 1]:
        if id(s) in members:
            continue
        if {tensor_key(t) for t in _step_reads(s)} & tainted:
            tainted |= {tensor_key(t) for t in _step_writes(s)}
            moved.append(s)
        else:
            stay.append(s)
    kernel = FusedKernel(chain, list(inputs.values()), outputs)
    fused = Fused(list(chain), list(inputs.values()), outputs, kernel, chain[0].guard)
    steps[first:last + 1] = stay + [fused] + moved


# ----------------------------------------------------------------------------- the kernel

_serial = itertools.count(1)


class FusedKernel:
    """`kernel(*inputs)`: (True, the chain's outputs...) computed by one numba loop, or None where the generated
    code runs the chain's own calls instead (see the module doc)."""

    def __init__(self, chain: list, inputs: list, outputs: list):
        out = chain[0].node.outputs[0]
        self.shape, self.dtype = tuple(out.shape), out.dtype
        self.whole = tuple(t.shape != () for t in inputs)  # per input: an array (else a scalar)
        self.source = kernel_source(chain, inputs, outputs, self.shape, self.dtype)
        self.n_outputs = len(outputs)
        self.ops = [s.node.op for s in chain]
        self.calls = 0
        self.run = self._warm_up

    def __call__(self, *values):
        return self.run(*values)

    def _warm_up(self, *values):
        self.calls += 1
        if self.calls < HOT_CALLS:
            return None
        if not self._fits(values):  # views (a broadcast gradient seed, a split's blocks) in this call
            if self.calls >= 2 * HOT_CALLS:  # and in every one since it got hot: a C-order loop cannot take them
                self.run = _declined
            return None
        self.run = _declined  # the chain's own calls, should numba fail to build it
        self._build()
        return self.run(*values)

    def _build(self) -> None:
        """Compiles the kernel and takes it into use (numba could not build it: the chain's calls go on)."""
        try:
            compiled = _compile(self.source, self.dtype, self.whole, len(self.shape), self.n_outputs)
        except Exception:
            return
        self.run = self._runner(compiled)

    def _fits(self, values) -> bool:
        """Whether `values` are what the kernel is compiled for: C-ordered arrays and scalars of its dtype."""
        for v, whole in zip(values, self.whole):
            if whole and not (type(v) is np.ndarray and v.dtype == self.dtype and v.flags.c_contiguous):
                return False
            if not whole and type(v) is not self.dtype.type:
                return False
        return True

    def _runner(self, compiled):
        """The kernel's call. It declines under a numpy error state that does not ignore underflow, for scalars
        of another type (numba would convert them where numpy promotes), for inputs numba's dispatch refuses
        (another dtype or rank, an array not in C order: a loop's first iteration may get a broadcast seed),
        for arrays of another shape, and where a value is not finite; for good after `MAX_REFUSALS` refusals
        in a row, which cost an exception each."""
        scalars, scalar_type = [k for k, w in enumerate(self.whole) if not w], self.dtype.type
        refusals = 0

        def run(*values):
            nonlocal refusals
            if not _underflow_ignored():
                return None
            for k in scalars:
                if type(values[k]) is not scalar_type:
                    return None
            try:
                result = compiled(*values)
            except TypeError:
                refusals += 1
                if refusals >= MAX_REFUSALS:
                    self.run = _declined
                return None
            refusals = 0
            return result if result[0] else None
        return run


def _declined(*values):
    return None


def kernel_source(chain: list, inputs: list, outputs: list, shape: tuple, dtype) -> str:
    """`def kernel(inputs...) -> (ok, outputs...)`: one loop nest over the elements computing the chain in
    order; ok is False where an input has another shape (nothing computed) or a value written is not finite."""
    ndim = len(shape)
    index = ", ".join(f"i{d}" for d in range(ndim))
    names: dict = {}
    params, loads, arrays = [], [], []
    for k, t in enumerate(inputs):
        params.append(f"x{k}")
        if t.shape == ():
            names[tensor_key(t)] = f"x{k}"
        else:
            names[tensor_key(t)] = f"a{k}"
            arrays.append(f"x{k}")
            loads.append(f"a{k} = x{k}[{index}]")
    body = []
    for k, s in enumerate(chain):
        args = [names[tensor_key(t)] for t in s.args]
        names[tensor_key(s.outs[0])] = f"v{k}"
        body.append(f"v{k} = {FUSABLE[s.node.op].format(*args)}")
    outs = [f"y{k}" for k in range(len(outputs))]
    for y, t in zip(outs, outputs):
        body.append(f"{y}[{index}] = {names[tensor_key(t)]}")
        body.append(f"bad |= not abs({names[tensor_key(t)]}) < INF")
    results = ", ".join(outs)
    lines = [f"def kernel({', '.join(params)}):"]
    lines += [f"    {y} = np.empty({shape!r}, np.{dtype.name})" for y in outs]
    if arrays:
        lines.append(f"    if {' or '.join(f'{x}.shape != {shape!r}' for x in arrays)}:")
        lines.append(f"        return False, {results}")
    lines.append("    bad = False")
    indent = "    "
    for d in range(ndim):
        lines.append(indent + f"for i{d} in range({shape[d]}):")
        indent += "    "
    lines += [indent + line for line in loads + body]
    lines.append(f"    return not bad, {results}")
    return "\n".join(lines) + "\n"


def _compile(source: str, dtype, whole: tuple, ndim: int, n_outputs: int):
    """The numba function of `source`, compiled now for C-ordered arrays (read-only ones too: folded
    constants are) and scalars of `dtype`."""
    import numba

    scalar = numba.from_dtype(dtype)
    array = numba.types.Array(scalar, ndim, "C")
    readable = numba.types.Array(scalar, ndim, "C", readonly=True)  # takes writeable arrays too
    result = numba.types.Tuple((numba.types.boolean, *[array] * n_outputs))
    signature = result(*[readable if w else scalar for w in whole])
    namespace = {"np": np, "ONE": dtype.type(1), "INF": dtype.type(np.inf)}
    filename = f"<fused kernel #{next(_serial)}>"
    exec(compile(source, filename, "exec"), namespace)
    return numba.njit(signature, nogil=True, cache=False)(namespace["kernel"])


def _errstate_reader():
    """numpy's error state as a cheap token: numpy 2 keeps it in a context variable whose value is one
    object while the state holds; older numpy reads it as a dict."""
    try:
        from numpy._core._ufunc_config import _extobj_contextvar
    except ImportError:
        return lambda: None
    return _extobj_contextvar.get


_errstate = _errstate_reader()
_last = (object(), False)  # (the last state seen, whether it ignores underflow): one tuple, swapped atomically


def _underflow_ignored() -> bool:
    """Whether numpy ignores underflow now, as it does by default: numba's loop cannot raise or warn on it."""
    global _last
    state = _errstate()
    seen, ok = _last
    if state is None or state is not seen:
        ok = np.geterr()["under"] == "ignore"
        _last = (state, ok) if state is not None else _last
    return ok
