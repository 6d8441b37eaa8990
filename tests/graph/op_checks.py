"""Helpers for op tests: run a function on placeholders built from numpy inputs, compare with numpy.

Most op tests call the same function twice, once on numpy arrays and once on
graph placeholders (numpy functions and operators dispatch to graph ops), and
compare values, dtypes and the statically inferred shapes.
"""
import numpy as np

import graph as G
from exec import Session

# how much the placeholders know: exact shapes, only the rank, or nothing
MODES = ("static", "dynamic", "unknown")


def placeholder_for(value, mode: str = "static"):
    arr = np.asarray(value)
    shape = {"static": arr.shape, "dynamic": (None,) * arr.ndim, "unknown": None}[mode]
    return G.placeholder(arr.dtype, shape)


def run_graph(fn, *inputs, mode: str = "static", consts=()):
    """fn(*placeholders) built in a fresh graph and run; returns (result, symbolic result)."""
    g = G.Graph()
    with g.as_default():
        phs = [placeholder_for(x, mode) for x in inputs]
        sym = fn(*phs)
    got = Session(g).run(sym, dict(zip(phs, [np.asarray(x) for x in inputs])))
    return got, sym


def assert_same(got, want, sym=None, exact: bool = False, what: str = ""):
    """Values equal (close for floats), dtypes equal, and the static shape fits the value."""
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), what
        syms = sym if isinstance(sym, (list, tuple)) else [None] * len(want)
        for g_, w_, s_ in zip(got, want, syms, strict=True):
            assert_same(g_, w_, s_, exact, what)
        return
    want = np.asarray(want)
    got_arr = np.asarray(got)
    assert got_arr.dtype == want.dtype, f"{what}: dtype {got_arr.dtype} != numpy's {want.dtype}"
    assert got_arr.shape == want.shape, f"{what}: shape {got_arr.shape} != numpy's {want.shape}"
    if exact or want.dtype.kind not in "fc":
        np.testing.assert_array_equal(got_arr, want, err_msg=what)
    else:
        tol = 1e-5 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got_arr, want, rtol=tol, atol=tol, err_msg=what)
    if sym is not None:
        assert sym.dtype == want.dtype, f"{what}: inferred dtype {sym.dtype} != {want.dtype}"
        if sym.shape is not None:
            assert len(sym.shape) == want.ndim, f"{what}: inferred shape {sym.shape} vs {want.shape}"
            for s, w in zip(sym.shape, want.shape, strict=True):
                assert s is None or s == w, f"{what}: inferred shape {sym.shape} vs {want.shape}"


def check(fn, *inputs, modes=MODES, exact: bool = False, np_fn=None, exact_shape: bool = True):
    """fn on graph placeholders == fn (or np_fn) on the numpy inputs, in each placeholder mode.

    In "static" mode the inferred shape must be fully known and exact.
    """
    want = (np_fn or fn)(*[np.asarray(x) for x in inputs])
    for mode in modes:
        got, sym = run_graph(fn, *inputs, mode=mode)
        assert_same(got, want, sym, exact, what=f"mode={mode}")
        if mode == "static" and exact_shape and not isinstance(want, (list, tuple)):
            assert sym.shape == np.shape(want), f"static inference gave {sym.shape}, numpy {np.shape(want)}"
    return want
