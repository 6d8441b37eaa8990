"""Warm calls of a `transpile.function`: per trace, one generated function that runs a call whose
arguments fit the trace, without binding them or building their signature.

Its checks are the trace's signature written out (torch.compile calls them guards): an array
argument of the traced dtype and shape, a scalar of the traced dtype (or the Python type whose
default dtype it is), the very object or Variable traced, a static value equal to the traced
one; then the trace's own checks of the Python state it reads (captured_state.py), which also
give the arrays it feeds from there. A call that fails one returns `MISS`, and the caller takes
the general path (which may trace). The results come back in the function's return structure,
built by a literal, after the trace's writes to Python state are applied.
"""
from __future__ import annotations

import itertools
import linecache
from typing import Callable

import numpy as np

MISS = type("Miss", (), {"__repr__": lambda self: "MISS", "__slots__": ()})()
# numpy's default dtype for each Python scalar type: the dtype such an argument is traced with (a Python
# number is weak beside arrays, a numpy scalar is not: they are traced apart)
_PYTHON_TYPES = {np.dtype(np.bool_): bool, np.dtype(np.int64): int, np.dtype(np.float64): float,
                 np.dtype(np.complex128): complex}
_serial = itertools.count(1)


def make_fast_call(name: str, parameters: int, required: int, defaults: tuple, specs: list, fed: list,
                   run: Callable, leaves: list, structure, captured=None, results: int = 0) -> Callable | None:
    """`fast(args)`: the results of running the trace with positional arguments `args` (defaults
    filled in), or MISS when they do not fit it. None where the trace's arguments or results are
    not plain enough to be checked and packed by straight code (containers, composites,
    named tuples).

    `specs` has one signatures.ArgSpec per parameter (None: a container argument); `fed` the
    indices of the parameters fed to `run`, in its order; `leaves` per output leaf the index of
    its value in `run`'s results, ("finish", index, function of that value), or ("constant",
    value); `structure` the return structure.
    `captured` (a captured_state.CapturedInputs, when the trace reads Python state) reads the
    arrays fed after the arguments and applies the writes `run` returns after its first
    `results` values.
    """
    if any(s is None for s in specs):
        return None
    env = {"MISS": MISS, "ndarray": np.ndarray, "run": run, "DEFAULTS": tuple(defaults)}
    names = [f"a{k}" for k in range(parameters)]
    lines = ["def fast(args):"]
    if defaults:
        lines += ["    n = len(args)",
                  f"    if n != {parameters}:",
                  f"        if n < {required} or n > {parameters}:",
                  "            return MISS",
                  f"        args = args + DEFAULTS[n - {required}:]"]
    lines.append(f"    {', '.join(names)}{',' if parameters == 1 else ''} = args" if parameters else
                 "    if args:\n        return MISS")
    for k, spec in enumerate(specs):
        test = _check(spec, names[k], k, env)
        if test is None:
            return None
        lines.append(f"    if {test}:")
        lines.append("        return MISS")
    args = [names[k] for k in fed]
    if hasattr(run, "given"):  # a compiled entry: what the checks above settle, it need not check again
        env["run"] = run.given([_checked(specs[k]) for k in fed])
    if captured:
        env["captured"] = captured
        lines += [f"    state = captured.read(({''.join(n + ', ' for n in names)}))",
                  "    if state is None:",
                  "        return MISS"]
        args.append("*state")
    lines.append(f"    r = run({', '.join(args)})")
    if captured and (captured.fetches or captured.replays):
        lines.append(f"    captured.apply(r[{results}:], state, ({''.join(n + ', ' for n in names)}))")
    packed = _pack(structure, iter(_leaf_expressions(leaves, env)), env)
    if packed is None:
        return None
    lines.append(f"    return {packed}")
    source = "\n".join(lines) + "\n"
    filename = f"<fast call of {name} #{next(_serial)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), env)
    return env["fast"]


def _check(spec, v: str, k: int, env: dict) -> str | None:
    """The test that argument `v` does NOT fit `spec` (None: no straight test for it)."""
    if spec.kind in ("object", "variable"):
        env[f"O{k}"] = spec.value
        return f"{v} is not O{k}"
    if spec.kind == "static":
        env[f"T{k}"], env[f"V{k}"] = type(spec.value), spec.value
        return f"type({v}) is not T{k} or {v} != V{k}"
    dtype, shape = np.dtype(spec.dtype), spec.shape
    env[f"D{k}"] = dtype
    if spec.form == "python":
        env[f"P{k}"] = _PYTHON_TYPES[dtype]
        return f"type({v}) is not P{k}"
    if spec.form == "scalar":
        env[f"G{k}"] = dtype.type
        return f"type({v}) is not G{k}"
    if None in shape:
        dims = " or ".join(f"{v}.shape[{i}] != {d}" for i, d in enumerate(shape) if d is not None)
        return f"type({v}) is not ndarray or {v}.dtype != D{k} or {v}.ndim != {len(shape)}" + \
            (f" or {dims}" if dims else "")
    env[f"S{k}"] = tuple(shape)
    return f"type({v}) is not ndarray or {v}.dtype is not D{k} or {v}.shape != S{k}"


def _checked(spec) -> tuple | None:
    """(type, dtype, shape) of an argument that passed `_check(spec)`, where the check settles all three."""
    if spec.kind in ("object", "variable", "static"):
        return None
    dtype = np.dtype(spec.dtype)
    if spec.form == "python":
        return (_PYTHON_TYPES[dtype], dtype, ())
    if spec.form == "scalar":
        return (dtype.type, dtype, ())
    return None if None in spec.shape else (np.ndarray, dtype, tuple(spec.shape))


def _leaf_expressions(leaves: list, env: dict) -> list[str]:
    out = []
    for j, leaf in enumerate(leaves):
        if isinstance(leaf, int):
            out.append(f"r[{leaf}]")
        elif leaf[0] == "finish":  # a list made of the fetched value
            env[f"F{j}"] = leaf[2]
            out.append(f"F{j}(r[{leaf[1]}])")
        else:
            env[f"C{j}"] = leaf[1]
            out.append(f"C{j}")
    return out


def _pack(structure, leaves, env: dict) -> str | None:
    """A literal that builds `structure` from the leaf expressions, in graph.nest's leaf order."""
    kind = type(structure)
    if kind is tuple:
        items = [_pack(s, leaves, env) for s in structure]
        return None if None in items else "(" + "".join(f"{i}, " for i in items) + ")"
    if kind is list:
        items = [_pack(s, leaves, env) for s in structure]
        return None if None in items else f"[{', '.join(items)}]"
    if kind is dict:
        if not all(isinstance(k, (int, float, str)) for k in structure):
            return None
        by_key = {}
        for key in sorted(structure, key=lambda key: str(key)):  # graph.nest's order for such keys
            by_key[key] = _pack(structure[key], leaves, env)
        if None in by_key.values():
            return None
        items = []
        for key in structure:  # the dict's own order
            env[f"K{len(env)}"] = key
            items.append(f"K{len(env) - 1}: {by_key[key]}")
        return "{" + ", ".join(items) + "}"
    if isinstance(structure, (tuple, list, dict)) or hasattr(structure, "_flat_tensors"):
        return None  # named tuples, subclasses, composites: graph.nest packs them
    return next(leaves)
