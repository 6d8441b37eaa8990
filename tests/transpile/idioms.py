"""The check the idiom tests share: a converted function gives what plain Python gives.

Values, dtypes and structure of the results, and the arguments after the call (Python changes an array
argument written in place, so the caller sees the write), in every execution mode.
"""
from __future__ import annotations

import copy

import numpy as np

import transpile
from transpile.operators.staging import StagingError

MODES = ("compiled", "dataflow")


def assert_same(got, want, path: str = "result", python_numbers_may_differ: bool = False) -> None:
    """`got` equals `want` in structure, values and dtypes (a Python number counts as numpy's scalar of
    its kind: what `np.asarray` makes of it).

    `python_numbers_may_differ` accepts, where Python has a Python number, the equal value of the dtype
    one path of a graph cond or loop gives it: a Python int that a loop makes a float, or a float that it
    makes float32 (adding float32 items), has that dtype on every path, a static dtype, also where the
    loop ran zero times (transpile/README.md, known limits).
    """
    lenient = python_numbers_may_differ
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), f"{path}: {got!r} != {want!r}"
        for k in want:
            assert_same(got[k], want[k], f"{path}[{k!r}]", lenient)
        return
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), f"{path}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{path}[{i}]", lenient)
        return
    if want is None or isinstance(want, (str, bytes)):
        assert got == want, f"{path}: {got!r} != {want!r}"
        return
    # (and a float32 scalar Python computed from one: where the function also returns from inside a graph
    # loop, the merged return value is float64, transpile/README.md's known limits)
    widened = type(want) is np.float32 and np.asarray(got).dtype == np.float64
    if lenient and (type(want) in (int, float) or widened) and np.asarray(got).dtype.kind in "iuf":
        np.testing.assert_allclose(np.float64(got), want, rtol=1e-6, atol=1e-7, err_msg=path)
        return
    w, g = np.asarray(want), np.asarray(got)
    assert g.dtype == w.dtype, f"{path}: dtype {g.dtype} != {w.dtype} ({got!r} vs {want!r})"
    assert g.shape == w.shape, f"{path}: shape {g.shape} != {w.shape} ({got!r} vs {want!r})"
    np.testing.assert_allclose(g, w, rtol=1e-12, atol=0, equal_nan=True, err_msg=path)


def assert_same_types(got, want, path="result"):
    """`got` has `want`'s Python types throughout: an int where Python has an int (not np.int64), an
    array or numpy scalar of the same dtype where Python has one."""
    if isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), f"{path}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same_types(g, w, f"{path}[{i}]")
        return
    assert type(got) is type(want), f"{path}: {type(got).__name__} {got!r}, Python's {type(want).__name__}"
    if isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype, f"{path}: dtype {got.dtype}, Python's {want.dtype}"


def assert_like_python(fn, *argsets, modes=MODES, python_numbers_may_differ=False, **options):
    """For every argument tuple: `transpile.function(fn)` returns what `fn` returns and leaves its
    arguments as `fn` leaves them, in each mode. Returns the converted functions."""
    converted = {mode: transpile.function(fn, mode=mode, **options) for mode in modes}
    for args in argsets:
        want_args = copy.deepcopy(args)
        want = fn(*want_args)
        for mode, f in converted.items():
            got_args = copy.deepcopy(args)
            got = f(*got_args)
            assert_same(got, want, f"{mode}: result", python_numbers_may_differ)
            assert_same(list(got_args), list(want_args), f"{mode}: arguments after the call")
    return converted


def refused_as_shared_on_some_paths(error: BaseException) -> bool:
    """Whether `error` is the clear refusal of a write that names of one numpy array would see on some of
    the graph's paths only (transpile/operators/arrays.py, SameWhen): a program the generators may write,
    which Python runs and converted code refuses rather than answer differently."""
    return isinstance(error, StagingError) and "on some of the paths the graph may take only" in str(error)
