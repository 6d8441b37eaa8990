"""softmax, log_softmax, logsumexp and the other nn helpers against numpy references."""
import numpy as np
import pytest

import graph as G
from tests.graph.op_checks import check

X = np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, -1000.0]])


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else (out.reshape(()) if axis is None else np.squeeze(out, axis))


def _log_softmax64(x, axis):
    x = x.astype(np.float64)
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_and_log_softmax_are_stable(axis, dtype):
    x = X.astype(dtype)
    check(lambda a: (G.softmax(a, axis), G.log_softmax(a, axis)), x,
          np_fn=lambda a: (_softmax(a, axis), _log_softmax64(a, axis).astype(dtype)))
    got = check(lambda a: G.softmax(a, axis), x, np_fn=lambda a: _softmax(a, axis))
    assert np.all(np.isfinite(got))


def test_softmax_of_integers_is_float64():
    check(lambda a: G.softmax(a), np.array([1, 2, 3]), np_fn=lambda a: _softmax(a.astype(np.float64)))


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (0, True), ((0, 1), False)])
def test_logsumexp(axis, keepdims):
    check(lambda a: G.logsumexp(a, axis, keepdims), X, np_fn=lambda a: _logsumexp(a, axis, keepdims))


def test_clip_softplus_l2_loss():
    x = np.linspace(-50, 50, 7)
    check(lambda a: (G.clip(a, -1, 2.5), G.clip_by_value(a, None, 0), G.softplus(a), G.l2_loss(a)), x,
          np_fn=lambda a: (np.clip(a, -1, 2.5), np.minimum(a, 0), np.logaddexp(a, 0), np.sum(a ** 2) / 2))
    with pytest.raises(ValueError, match="at least one"):
        G.clip(G.constant(1.0))


def test_cross_entropies():
    logits = np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]], np.float32)
    labels = np.array([0, 2])
    onehot = np.eye(3, dtype=np.float32)[labels]
    want = -_log_softmax64(logits, 1).astype(np.float32)[np.arange(2), labels]
    check(lambda lg, lb: G.sparse_softmax_cross_entropy(lb, lg), logits, labels, np_fn=lambda lg, lb: want)
    check(lambda lg, oh: G.softmax_cross_entropy(oh, lg), logits, onehot, np_fn=lambda lg, oh: want)
