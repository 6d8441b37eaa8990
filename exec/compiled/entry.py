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
    `recording.profile` is not None (exec/profiler.py: a profile is open and `slow` records the run)."""
    names = [f"v{k}" for k in range(len(feeds))]
    env = {"program": program.function, "graph": graph, "slow": slow, "to_numpy": to_numpy,
           "ndarray": np.ndarray, "VERSION": graph.version}
    recorded = " or RECORDING.profile is not None" if recording is not None else ""
    env["RECORDING"] = recording
    lines = [f"def entry({', '.join(names)}):",
             f"    if graph.version != VERSION{recorded}:",
             f"        return slow({', '.join(names)})"]
    for k, (t, check) in enumerate(zip(feeds, checks, strict=True)):
        env[f"check{k}"], env[f"D{k}"] = check, t.dtype
        v = names[k]
        if t.dtype is _dt.variant:
            continue
        if t.shape is not None and None not in t.shape and t.shape != ():
            env[f"S{k}"] = t.shape
            test = f"type({v}) is not ndarray or {v}.dtype is not D{k} or {v}.shape != S{k}"
        elif t.dtype is np.dtype(t.dtype.type):
            env[f"T{k}"] = t.dtype.type
            test = f"type({v}) is not T{k}"
            python = _PYTHON_SCALARS.get(t.dtype)
            if python is not None:  # the Python scalar the check would convert, converted here
                env[f"P{k}"] = python
                in_range = f" and {_INT64_MIN} <= {v} <= {_INT64_MAX}" if python is int else ""
                lines.append(f"    if type({v}) is P{k}{in_range}:")
                lines.append(f"        {v} = T{k}({v})")
                lines.append(f"    elif {test}:")
                lines.append(f"        {v} = check{k}({v})")
                continue
        else:
            test = "True"
        lines.append(f"    if {test}:")
        lines.append(f"        {v} = check{k}({v})")
    lines.append(f"    r = program({', '.join(names)})")
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
    lines.append(f"    return [{', '.join(out)}]")
    source = "\n".join(lines) + "\n"
    filename = f"<entry of {program.filename[1:-1]} #{next(_serial)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), env)
    return env["entry"]
