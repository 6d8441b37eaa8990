"""A compiled plan's entry for `Session.make_callable`: checks the fed values, runs, converts the results.

What a session's runner works out per run (which plan, which checks, how each fetch comes
back) is fixed for a callable, so it is written once as straight code, like the program
itself: a call of a small converted function then costs its arguments' checks and its
kernels. A fed value of the tensor's exact dtype and shape passes with one `type` and
attribute test; anything else goes through the session's full check (conversions, errors).
"""
from __future__ import annotations

import itertools
import linecache
from typing import Callable

import numpy as np

from exec.compiled.program import Program
from graph import dtypes as _dt

_serial = itertools.count(1)
# the Python scalar type a check turns into each of these dtypes, and the int64 range (exec/session.py)
_PYTHON_SCALARS = {np.dtype(np.int64): int, np.dtype(np.float64): float, np.dtype(np.bool_): bool}
_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


def make_entry(program: Program, feeds: list, checks: list, kinds: list, graph, slow: Callable,
               to_numpy: Callable, recording=None) -> Callable:
    """`entry(*values)`: `slow(*values)` (the session's runner) with its work done once for
    `program`: `feeds` are the fed tensors, `checks` the session's check of each one's value,
    `kinds` how each fetch comes back ((kind, k, dtype): "t" the k-th tensor fetch converted
    to `dtype`, "v" Variable k's value after the run, else None). While `graph` changes
    nothing (its version), the entry runs `program` directly; after a change, `slow`. So does it while
    `recording.profile` is not None (exec/profiler.py: a profile is open and `slow` records the run).

    `entry.given(given)` is the same entry for a caller that has checked its values already (a
    `transpile.function`'s fast call, whose checks are its trace's signature): `given[k]` is None or
    (type, dtype, shape) of the k-th value (values past the list's end: None), and the checks that
    fact settles are left out."""
    parts = (program, feeds, checks, kinds, graph, slow, to_numpy, recording)
    entry = _entry(*parts, given=[None] * len(feeds))
    entry.given = lambda given: _entry(*parts, given=[*given, *[None] * (len(feeds) - len(given))])
    return entry


def _entry(program: Program, feeds: list, checks: list, kinds: list, graph, slow: Callable, to_numpy: Callable,
           recording, given: list) -> Callable:
    names = [f"v{k}" for k in range(len(feeds))]
    env = {"program": program.function, "graph": graph, "slow": slow, "to_numpy": to_numpy,
           "ndarray": np.ndarray, "VERSION": graph.version}
    recorded = " or RECORDING.profile is not None" if recording is not None else ""
    env["RECORDING"] = recording
    lines = [f"def entry({', '.join(names)}):",
             f"    if graph.version != VERSION{recorded}:",
             f"        return slow({', '.join(names)})"]
    for k, (t, check, known) in enumerate(zip(feeds, checks, given, strict=True)):
        env[f"check{k}"], env[f"D{k}"] = check, t.dtype
        if t.dtype is not _dt.variant:
            lines += _feed_check(t, names[k], k, known, env)
    lines.append(f"    r = program({', '.join(names)})")
    lines.append(f"    return [{', '.join(_results(kinds, env))}]")
    source = "\n".join(lines) + "\n"
    filename = f"<entry of {program.filename[1:-1]} #{next(_serial)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), env)
    return env["entry"]


def _feed_check(t, v: str, k: int, known, env: dict) -> list[str]:
    """The lines that pass fed value `v` on as tensor `t` takes it, checking or converting it where it is
    not of `t`'s exact type, dtype and shape; `known` is what the caller checked of it ((type, dtype,
    shape), or None)."""
    static = t.shape is not None and None not in t.shape
    if static and t.shape != ():
        if known is not None and known[0] is np.ndarray and known[1] == t.dtype and tuple(known[2]) == t.shape:
            return []
        env[f"S{k}"] = t.shape
        test = f"type({v}) is not ndarray or {v}.dtype is not D{k} or {v}.shape != S{k}"
    elif t.dtype is np.dtype(t.dtype.type):
        if known is not None and known[0] is t.dtype.type and t.shape == ():
            return []
        env[f"T{k}"] = t.dtype.type
        test = f"type({v}) is not T{k}"
        python = _PYTHON_SCALARS.get(t.dtype)
        if python is not None:  # the Python scalar the check would convert, converted here
            return _python_scalar(v, k, python, known is not None and known[0] is python and t.shape == (), test, env)
    else:
        test = "True"
    return [f"    if {test}:", f"        {v} = check{k}({v})"]


def _python_scalar(v: str, k: int, python: type, known: bool, test: str, env: dict) -> list[str]:
    """The lines that convert `v`, a Python scalar of type `python` (`known`: certainly one), to tensor
    k's numpy scalar, and check it otherwise."""
    env[f"P{k}"] = python
    in_range = f"{_INT64_MIN} <= {v} <= {_INT64_MAX}" if python is int else ""
    if known and not in_range:
        return [f"    {v} = T{k}({v})"]
    if known:
        return [f"    if {in_range}:", f"        {v} = T{k}({v})", "    else:", f"        {v} = check{k}({v})"]
    return [f"    if type({v}) is P{k}{' and ' + in_range if in_range else ''}:",
            f"        {v} = T{k}({v})",
            f"    elif {test}:",
            f"        {v} = check{k}({v})"]


def _results(kinds: list, env: dict) -> list[str]:
    """Per fetch, the expression of its value as the caller gets it from the program's results `r`."""
    out = []
    for j, (kind, k, dtype) in enumerate(kinds):
        if kind == "t":
            env[f"OUT{j}"] = dtype
            if dtype is not _dt.variant:
                env[f"OUT_T{j}"] = dtype.type  # a numpy scalar of the fetch's dtype comes back as it is
                out.append(f"r[{k}] if type(r[{k}]) is ndarray or type(r[{k}]) is OUT_T{j} else "
                           f"to_numpy(r[{k}], OUT{j})")
            else:
                out.append(f"r[{k}]")
        elif kind == "v":
            env[f"VAR{j}"] = k
            out.append(f"VAR{j}.value")
        else:
            out.append("None")
    return out
