"""Math kernels against plain numpy: sigmoid at the extremes, the fused activation gradients."""
import warnings

import numpy as np
import pytest

import graph as G
from exec import Session


def _run(fn, *values):
    g = G.Graph()
    with g.as_default():
        phs = [G.placeholder(np.asarray(v).dtype, np.shape(v)) for v in values]
        out = fn(*phs)
    return Session(g).run(out, dict(zip(phs, values)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sigmoid_is_exact_at_the_extremes_without_warnings(dtype):
    x = np.array([-1e4, -100.0, -5.0, 0.0, 5.0, 100.0, 1e4]).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _run(G.sigmoid, x)
        scalar = _run(G.sigmoid, dtype(-1e4))
    with np.errstate(over="ignore"):
        want = 1 / (1 + np.exp(-x.astype(np.float64)))
    assert got.dtype == dtype and np.asarray(scalar).dtype == dtype and scalar == 0
    # below the smallest normal number the result may flush to 0 (exp(-x) overflows first)
    np.testing.assert_allclose(got, want.astype(dtype), rtol=np.finfo(dtype).eps * 4, atol=np.finfo(dtype).tiny)
    assert got[0] == 0 and got[-1] == 1


def test_sigmoid_of_integers_is_float64():
    np.testing.assert_allclose(_run(G.sigmoid, np.array([-2, 0, 3])), 1 / (1 + np.exp(-np.array([-2.0, 0, 3]))))


@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (5,)), ((), ()), ((3,), ())])
@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.float64, np.float64), (np.float32, np.float64)])
def test_activation_gradients_match_their_formulas(shapes, dtypes):
    rng = np.random.default_rng(0)
    y = np.asarray(np.tanh(rng.normal(size=shapes[0]))).astype(dtypes[0])
    dy = np.asarray(rng.normal(size=shapes[1])).astype(dtypes[1])
    tanh_g, sig_g = _run(lambda a, b: [G.tanh_grad(a, b), G.sigmoid_grad(a, b)], y, dy)
    want_t, want_s = dy * (1 - y * y), dy * y * (1 - y)
    for got, want in ((tanh_g, want_t), (sig_g, want_s)):
        assert np.asarray(got).dtype == np.result_type(y, dy) and np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_fused_gradients_do_not_write_into_their_inputs():
    y, dy = np.full((2, 3), 0.5, np.float32), np.ones((2, 3), np.float32)
    _run(lambda a, b: [G.tanh_grad(a, b), G.sigmoid_grad(a, b)], y, dy)
    assert (y == 0.5).all() and (dy == 1).all()
