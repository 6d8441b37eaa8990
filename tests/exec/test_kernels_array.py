"""Array, reduction and nn kernels called directly: no input is mutated, 0-d results, sum_to_shape."""
import numpy as np
import pytest

import graph as G
from exec import Session
from exec.kernels import get_kernel
from exec.kernels.array import sum_to_shape
from exec.reference import run_reference
from exec.runtime import Runtime


def _frozen(a):
    a = np.array(a)
    a.flags.writeable = False
    return a


def _ops(x, i, m):
    """One of each array/reduction/nn/indexing op, on placeholders x (float), i (int), m (bool)."""
    n = G.shape(x)[0]
    return [G.reshape(x, [-1]), G.transpose(x), G.expand_dims(x, 0), G.squeeze(x[:1]), G.concat([x, x], 1),
            G.stack([x, x]), *G.unstack(x, num=2), *G.split(x, 3, axis=1), G.tile(x, [2, 1]), G.broadcast_to(x[0], [4, 3]),
            G.reduce_to_shape(x, [1, 3]), G.gather(x, i), G.where(m, x, 0.0), G.fill([n], 2.0), G.zeros_like(x),
            G.ones_like(x), G.range(n), G.one_hot(i, 3), G.softmax(x), G.log_softmax(x, 0), G.sum(x, 0),
            G.mean(x), G.max(x, 1, keepdims=True), G.argmax(x), G.any(m), x[i], x[m], x[:, None, ::-1],
            G.get_item_grad(x[0], [2, 3], x[i].node.attrs["index"], [i]), G.set_item(x, (0, 1), 5.0)]


def test_kernels_do_not_mutate_their_inputs():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [2, 3])
        i = G.placeholder(np.int64, [2])
        m = G.placeholder(np.bool_, [2, 3])
        outs = _ops(x, i, m)
    values = {x: _frozen(np.arange(6.0).reshape(2, 3)), i: _frozen([1, 0]),
              m: _frozen([[True, False, True], [False, True, True]])}
    got = Session(g).run(outs, values)
    for t, v in zip(outs, got):
        assert np.asarray(v).dtype == t.dtype, t
    assert values[x][0, 1] == 1.0 and values[x].sum() == 15.0


def test_executor_and_reference_interpreter_agree():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [None, 3])
        i = G.placeholder(np.int64, [None])
        m = G.placeholder(np.bool_, [None, 3])
        outs = _ops(x, i, m)
    feeds = {x: np.arange(6.0).reshape(2, 3), i: np.array([1, 1]), m: np.array([[True, False, True]] * 2)}
    for a, b in zip(Session(g).run(outs, feeds), run_reference(outs, feeds)):
        np.testing.assert_array_equal(a, b)


def test_scalar_results():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float32, [3])
        outs = [G.sum(x), G.argmax(x), G.max(x, 0), x[1], G.fill([], 1.5), G.squeeze(x[:1]), G.size(x), G.rank(x)]
    got = Session(g).run(outs, {x: np.array([1, 5, 2], np.float32)})
    assert [np.ndim(v) for v in got] == [0] * len(outs)
    assert got[0] == 8 and got[1] == 1 and got[3] == 5 and np.asarray(got[0]).dtype == np.float32


@pytest.mark.parametrize("shape,target", [((2, 3), (3,)), ((2, 3), (1, 3)), ((4, 2, 3), (2, 1)), ((3,), ()),
                                          ((2, 3), (2, 3)), ((5, 1, 4), (1, 1, 1))])
def test_sum_to_shape(shape, target):
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    got = sum_to_shape(x, np.array(target, np.int64))
    lead = x.ndim - len(target)
    want = x.sum(axis=tuple(range(lead))) if lead else x
    axes = tuple(k for k, d in enumerate(target) if d == 1 and want.shape[k] != 1)
    want = want.sum(axis=axes, keepdims=True) if axes else want
    np.testing.assert_array_equal(got, want.reshape(target))
    assert np.asarray(got).dtype == np.int32  # keeps the gradient's dtype (np.sum would widen)


def test_sum_to_shape_rejects_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match="cannot sum"):
        sum_to_shape(np.ones((2, 3)), np.array([2, 2]))
    with pytest.raises(ValueError, match="larger shape"):
        sum_to_shape(np.ones(3), np.array([2, 3]))


def test_factories_run_once_per_plan():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [2, 3])
        t = G.transpose(x, (1, 0))
    fn = get_kernel(t.node, Runtime())
    np.testing.assert_array_equal(fn(np.ones((2, 3))), np.ones((3, 2)))


@pytest.mark.parametrize("shape,sections,axis", [((4, 8), 4, 1), ((6, 2), 3, 0), ((2, 3, 4), 2, 2), ((5, 4), 1, 0)])
def test_split_of_a_known_dimension_matches_numpy(shape, sections, axis):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.float32, shape)
        parts = G.split(p, sections, axis=axis)
    got = Session(g).run(parts, {p: x})
    for a, b in zip(got, np.split(x, sections, axis), strict=True):
        np.testing.assert_array_equal(a, b)
