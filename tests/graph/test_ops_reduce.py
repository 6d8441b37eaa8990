"""Reductions against numpy: every axis form, keepdims, and numpy's output dtypes."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph as G
from tests.graph.op_checks import assert_same, check, run_graph

REDUCTIONS = [np.sum, np.mean, np.max, np.min, np.prod, np.any, np.all]
DTYPES = [np.float32, np.float64, np.int32, np.int8, np.uint8, np.bool_, np.int64]


def _value(dtype, shape=(2, 3, 4)):
    x = (np.arange(int(np.prod(shape))).reshape(shape) % 5) - 1
    return x.astype(dtype)


@pytest.mark.parametrize("fn", REDUCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_reduction_dtypes_follow_numpy(fn, dtype):
    x = _value(dtype)
    check(lambda a: fn(a), x)
    check(lambda a: fn(a, axis=1), x, modes=("static",))


@pytest.mark.parametrize("fn", REDUCTIONS + [np.argmax, np.argmin], ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (-1, -2), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_axes(fn, axis, keepdims):
    if fn in (np.argmax, np.argmin) and (isinstance(axis, tuple)):
        return
    x = _value(np.float64) * np.array([1.0, -2.0, 0.5, 3.0])
    check(lambda a: fn(a, axis=axis, keepdims=keepdims), x)


def test_methods_and_graph_names_agree():
    x = _value(np.float32)
    check(lambda a: (a.sum(axis=0), a.mean(1, keepdims=True), a.max(), a.min(axis=(0, 1)), a.prod(axis=2),
                     a.argmax(axis=1), a.argmin(), a.any(axis=0), a.all(), a.var(axis=1), a.std(ddof=1)), x)
    check(lambda a: (G.sum(a, 1), G.mean(a), G.max(a, -1), G.min(a, 0, keepdims=True), G.prod(a, (1, 2)),
                     G.argmax(a, 2), G.argmin(a, 0), G.any(a > 3, 1), G.all(a > -2)), x,
          np_fn=lambda a: (np.sum(a, 1), np.mean(a), np.max(a, -1), np.min(a, 0, keepdims=True),
                           np.prod(a, (1, 2)), np.argmax(a, 2), np.argmin(a, 0), np.any(a > 3, 1), np.all(a > -2)))


def test_sum_dtype_argument_and_var_std():
    x = _value(np.int32)
    check(lambda a: (np.sum(a, dtype=np.float32), np.mean(a, axis=0, dtype=np.float32)), x)
    check(lambda a: (np.var(a, axis=(0, 2)), np.std(a, ddof=1), np.var(a, axis=1, keepdims=True, ddof=1)),
          x.astype(np.float64))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.data())
def test_random_axes(shape, data):
    nd = len(shape)
    axes = data.draw(st.lists(st.integers(-nd, nd - 1), unique_by=lambda a: a % nd, max_size=nd))
    fn = data.draw(st.sampled_from([np.sum, np.max, np.mean, np.prod]))
    keep = data.draw(st.booleans())
    x = np.random.default_rng(len(shape)).normal(size=shape)
    check(lambda a: fn(a, axis=tuple(axes), keepdims=keep), x, modes=("static", "dynamic"))


def test_axis_out_of_range_names_the_shape():
    with G.Graph().as_default():
        x = G.placeholder(np.float32, [2, None])
        with pytest.raises(ValueError, match=r"sum axis 2 is out of range for a tensor of shape \[2,\?\]"):
            G.sum(x, axis=2)
        with pytest.raises(ValueError, match=r"argmax axis -3 is out of range"):
            np.argmax(x, axis=-3)
        with pytest.raises(ValueError, match="duplicate"):
            G.sum(x, axis=(0, -2))


def test_unknown_rank_with_negative_axis_resolves_at_run_time():
    x = _value(np.float64)
    got, sym = run_graph(lambda a: (G.sum(a, -1), G.max(a, (0, -1), keepdims=True)), x, mode="unknown")
    assert_same(got, [x.sum(-1), x.max((0, -1), keepdims=True)], sym)
