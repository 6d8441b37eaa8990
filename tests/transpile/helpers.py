"""Shared checks for transpiler tests."""
from __future__ import annotations

import copy

import numpy as np

import transpile


def _same(got, want, path="result"):
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), f"{path}: {got!r} != {want!r}"
        for k in want:
            _same(got[k], want[k], f"{path}[{k!r}]")
        return
    if isinstance(want, (tuple, list)) and not (isinstance(got, np.ndarray) and isinstance(want, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), f"{path}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{path}[{i}]")
        return
    if want is None or isinstance(want, str):
        assert got == want, f"{path}: {got!r} != {want!r}"
        return
    w = np.asarray(want)
    g = np.asarray(got)
    assert g.shape == w.shape, f"{path}: shape {g.shape} != {w.shape} ({got!r} vs {want!r})"
    assert np.allclose(g.astype(float), w.astype(float), equal_nan=True), f"{path}: {got!r} != {want!r}"


def assert_converted_equivalent(fn, *argsets, static_argnames=()):
    """`transpile.function(fn)(*args)` equals `fn(*args)` for every argument tuple."""
    compiled = transpile.function(fn, static_argnames=static_argnames)
    for args in argsets:
        want = fn(*copy.deepcopy(args))
        got = compiled(*copy.deepcopy(args))
        _same(got, want)
    return compiled
