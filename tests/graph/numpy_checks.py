"""Helpers for the tests of numpy functions on graph tensors: the function on placeholders, run in the compiled
and the dataflow mode, against numpy on the same arrays (values, dtypes, static shapes); where numpy raises,
building or running the graph raises too. And hypothesis strategies for arrays of a shape and dtype."""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck
from hypothesis import strategies as st

import graph as G
from exec import RunError, Session
from tests.graph.op_checks import assert_same, placeholder_for

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                      HealthCheck.data_too_large])
EXEC_MODES = ("compiled", "dataflow")
NUMPY_ERRORS = (ValueError, TypeError, IndexError, ZeroDivisionError, np.linalg.LinAlgError)
GRAPH_ERRORS = (ValueError, TypeError, IndexError, RunError)


def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _run(sym, feeds, mode):
    tensors = [t for t in _flat(sym) if isinstance(t, G.Tensor)]
    got = iter(Session(tensors[0].graph, mode=mode).run(tensors, feeds)) if tensors else iter(())
    return [next(got) if isinstance(t, G.Tensor) else t for t in _flat(sym)]


def check_numpy(fn, *arrays, placeholders=("static", "dynamic"), exact=False, np_fn=None):
    """fn(*placeholders) == (np_fn or fn)(*arrays) in both execution modes: values (floats within rounding,
    or exactly), dtypes, static shapes; the same structure of results. Returns numpy's result."""
    arrays = [np.asarray(a) for a in arrays]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = (np_fn or fn)(*arrays)
        except NUMPY_ERRORS:
            _check_raises(fn, arrays, placeholders)
            return None
        for pmode in placeholders:
            g = G.Graph()
            with g.as_default():
                phs = [placeholder_for(a, pmode) for a in arrays]
                sym = fn(*phs)
            if isinstance(want, (list, tuple)):
                assert isinstance(sym, (list, tuple)) and len(_flat(sym)) == len(_flat(want)), (sym, want)
            for emode in EXEC_MODES:
                got = _run(sym, dict(zip(phs, arrays, strict=True)), emode)
                for g_, w_, s_ in zip(got, _flat(want), _flat(sym), strict=True):
                    assert_same(g_, w_, s_ if isinstance(s_, G.Tensor) else None, exact,
                                what=f"placeholders {pmode}, {emode} mode")
    return want


def _check_raises(fn, arrays, placeholders):
    for pmode in placeholders:
        for emode in EXEC_MODES:
            with pytest.raises(GRAPH_ERRORS):
                g = G.Graph()
                with g.as_default():
                    phs = [placeholder_for(a, pmode) for a in arrays]
                    sym = fn(*phs)
                _run(sym, dict(zip(phs, arrays, strict=True)), emode)


def arrays(data, shape, dtype, low=-3, high=4, nan=False):
    """An array of `shape` and `dtype`: small integers, bools, or normal floats (some NaN and inf with `nan`)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16), label="seed"))
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(max(low, 0) if dtype.kind == "u" else low, high, size=shape).astype(dtype)
    values = rng.normal(size=shape) * 2
    if nan and values.size:
        values.flat[rng.integers(0, values.size, size=2)] = rng.choice([np.nan, np.inf, -np.inf, 0.0], size=2)
    return values.astype(dtype)


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)
nonempty_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
