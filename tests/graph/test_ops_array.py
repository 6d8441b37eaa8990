"""Shape and array ops against numpy: values, dtypes, static shapes (known, partial, unknown)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graph as G
from exec import Session
from tests.graph.op_checks import assert_same, check, run_graph

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
I = np.arange(6, dtype=np.int32).reshape(2, 3)


def test_shape_size_rank():
    for mode in ("static", "dynamic", "unknown"):
        got, sym = run_graph(lambda x: (G.shape(x), G.size(x), G.rank(x)), X, mode=mode)
        assert_same(got, [np.array([2, 3, 4]), np.int64(24), np.int64(3)], sym)
    with G.Graph().as_default():
        p = G.placeholder(np.float32, [None, 5])
        assert G.shape(p).shape == (2,)
        assert G.static_value(G.shape(G.placeholder(np.float32, [2, 5]))).tolist() == [2, 5]


@pytest.mark.parametrize("newshape", [(6, 4), (-1,), (4, -1, 2), (24,), (1, 24, 1)])
def test_reshape(newshape):
    check(lambda x: np.reshape(x, newshape), X)
    check(lambda x: x.reshape(newshape), X)


def test_reshape_with_tensor_dims():
    def fn(x):
        n = G.shape(x)[0]
        return G.reshape(x, [n, -1]), G.reshape(x, G.shape(x)[::-1]), G.reshape(x, [n, 3, G.constant(4)])
    got, sym = run_graph(fn, X)
    assert_same(got, [X.reshape(2, -1), X.reshape(4, 3, 2), X], sym)
    # the dimension taken from the static shape of x is known statically
    assert sym[0].shape == (2, 12) and sym[2].shape == (2, 3, 4)
    got, sym = run_graph(fn, X, mode="dynamic")
    assert sym[0].shape == (None, None) and sym[2].shape == (None, 3, 4)


def test_reshape_errors_name_the_shapes():
    with G.Graph().as_default():
        x = G.placeholder(np.float32, [2, 3])
        with pytest.raises(ValueError, match=r"shape \[2,3\] \(6 elements\) into shape \[4\]"):
            G.reshape(x, [4])
        with pytest.raises(ValueError, match="only one dimension can be -1"):
            G.reshape(x, [-1, -1])


@pytest.mark.parametrize("axes", [None, (0, 2, 1), (2, 0, 1), (-1, 0, 1)])
def test_transpose(axes):
    check(lambda x: np.transpose(x, axes), X)
    check(lambda x: x.transpose(axes) if axes else x.T, X)


@pytest.mark.parametrize("axis", [0, 1, -1, (0, 2), (0, -1)])
def test_expand_dims(axis):
    check(lambda x: np.expand_dims(x, axis), X)


@pytest.mark.parametrize("axis", [None, 0, 2, (0, 2)])
def test_squeeze(axis):
    x = np.ones((1, 3, 1), np.float64)
    check(lambda a: np.squeeze(a, axis), x)
    with G.Graph().as_default():
        with pytest.raises(ValueError, match="size is not 1"):
            G.squeeze(G.placeholder(np.float32, [2, 3]), 0)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_concat_and_stack(axis):
    y = X.astype(np.float64) * 2
    check(lambda a, b: np.concatenate([a, b, a], axis), X, y)
    check(lambda a, b: np.stack([a, b], axis), X, y)
    check(lambda a: np.stack([a, a, a], axis), X)


def test_concat_static_shape_and_errors():
    with G.Graph().as_default():
        a = G.placeholder(np.float32, [None, 3])
        b = G.placeholder(np.float32, [2, 3])
        assert G.concat([a, b], 0).shape == (None, 3)
        assert G.concat([b, b], 0).shape == (4, 3)
        assert G.concat([a, b], 1).shape == (2, 6)
        with pytest.raises(ValueError, match="dimension 1 differs"):
            G.concat([b, G.placeholder(np.float32, [2, 4])], 0)
        with pytest.raises(ValueError, match="out of range for a tensor of shape"):
            G.concat([b, b], 2)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack(axis):
    got, sym = run_graph(lambda x: G.unstack(x, axis=axis), X)
    assert_same(got, list(np.moveaxis(X, axis, 0)), sym)
    got, sym = run_graph(lambda x: G.unstack(x, num=X.shape[axis], axis=axis), X, mode="dynamic")
    assert_same(got, list(np.moveaxis(X, axis, 0)), sym)
    with G.Graph().as_default():
        with pytest.raises(ValueError, match="pass num="):
            G.unstack(G.placeholder(np.float32, [None, 2]))


def test_unstack_single_and_mismatch_at_run_time():
    got, sym = run_graph(lambda x: G.unstack(x), X[:1])
    assert_same(got, [X[0]], sym)
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.float32, [None])
        parts = G.unstack(p, num=3)
    with pytest.raises(Exception, match="size 2 at run time"):
        Session(g).run(parts, {p: np.ones(2, np.float32)})


@pytest.mark.parametrize("sections", [2, [1], [1, 3], [0, 5]])
def test_split(sections):
    x = np.arange(8.0).reshape(4, 2)
    check(lambda a: np.split(a, sections), x)


@pytest.mark.parametrize("reps", [2, (2, 1), (1, 2, 3), (3, 1, 1, 2)])
def test_tile(reps):
    check(lambda x: np.tile(x, reps), I)


def test_tile_and_broadcast_with_tensor_shapes():
    def fn(x):
        n = G.shape(x)[0]
        return G.tile(x, [n, 1]), G.broadcast_to(x[0], [G.constant(4), 3]), G.broadcast_to(x, G.shape(x))
    got, sym = run_graph(fn, I)
    assert_same(got, [np.tile(I, (2, 1)), np.broadcast_to(I[0], (4, 3)), I], sym)


@pytest.mark.parametrize("shape", [(2, 3), (5, 2, 3), (2, 2, 3)])
def test_broadcast_to(shape):
    check(lambda x: np.broadcast_to(x, shape), I[:, :3] if shape[-2] == 2 else I[:1])
    with G.Graph().as_default():
        with pytest.raises(ValueError, match="broadcast"):
            G.broadcast_to(G.placeholder(np.float32, [2, 3]), [4, 3])


shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@settings(max_examples=40, deadline=None)
@given(shapes, st.data())
def test_reduce_to_shape_inverts_broadcasting(target, data):
    # a broadcast shape of `target`: extra leading dims and size-1 dims stretched
    lead = data.draw(st.lists(st.integers(1, 3), max_size=2).map(tuple))
    stretched = tuple(data.draw(st.sampled_from([1, 2])) if d == 1 else d for d in target)
    big = np.arange(int(np.prod(lead + stretched)), dtype=np.float64).reshape(lead + stretched)
    want = big.sum(axis=tuple(range(len(lead))), keepdims=False) if lead else big
    axes = tuple(i for i, (t, s) in enumerate(zip(target, stretched)) if t == 1 and s != 1)
    want = want.sum(axis=axes, keepdims=True) if axes else want
    for mode in ("static", "dynamic"):
        got, sym = run_graph(lambda x: G.reduce_to_shape(x, target), big, mode=mode)
        assert_same(got, want.reshape(target), sym)

        def dynamic(x, t):
            return G.reduce_to_shape(x, G.shape(t))
        got, sym = run_graph(dynamic, big, np.zeros(target), mode=mode)
        assert_same(got, want.reshape(target), sym)


def test_reduce_to_shape_same_shape_is_identity():
    with G.Graph().as_default():
        x = G.placeholder(np.float32, [2, 3])
        assert G.reduce_to_shape(x, [2, 3]) is x
        assert G.reduce_to_shape(x, G.shape(x)) is x


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather(axis):
    idx = np.array([[0, 1], [1, -1]])
    check(lambda x, i: np.take(x, i, axis=axis), X, idx)
    check(lambda x, i: G.gather(x, i, axis=axis), X, idx, np_fn=lambda x, i: np.take(x, i, axis=axis))


def test_gather_out_of_range_fails_the_run():
    g = G.Graph()
    with g.as_default():
        p = G.placeholder(np.int64, [None])
        out = G.gather(G.constant([1.0, 2.0]), p)
    with pytest.raises(Exception, match="out of bounds"):
        Session(g).run(out, {p: np.array([5])})


def test_where_broadcasts_and_follows_numpy_dtypes():
    c = np.array([True, False, True])
    f32 = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda c, x: np.where(c, x, 0.0), c, f32)       # weak Python scalar: stays float32
    check(lambda c, x: np.where(c, x, np.float64(1)), c, f32)
    check(lambda c, x, y: np.where(c, x, y), c, f32, I)  # float32 with int32 -> float64
    check(lambda c, x: G.where(c, x, -1), c, I, np_fn=lambda c, x: np.where(c, x, np.int32(-1)))
    check(lambda x: np.where(x > 2, x, x * 2), f32)


def test_fill_zeros_ones():
    def fn(x):
        n = G.shape(x)[1]
        return (G.zeros([2, n]), G.ones([n], np.int32), G.fill([n, 2], 7), G.full([1, 2], 0.5, np.float32),
                G.zeros(G.shape(x)), G.zeros([]), G.ones(3))
    got, sym = run_graph(fn, I)
    want = [np.zeros((2, 3)), np.ones(3, np.int32), np.full((3, 2), 7), np.full((1, 2), 0.5, np.float32),
            np.zeros((2, 3)), np.zeros(()), np.ones(3)]
    assert_same(got, want, sym)
    assert sym[0].shape == (2, 3) and sym[4].shape == (2, 3)


def test_like_functions():
    check(lambda x: (np.zeros_like(x), np.ones_like(x), np.full_like(x, 3), np.zeros_like(x, dtype=np.int8),
                     np.full_like(x, 2.5)), X)
    check(lambda x: (np.zeros_like(x), np.ones_like(x, dtype=bool)), np.float32(3))


@pytest.mark.parametrize("args", [(5,), (2, 9, 3), (0.5, 3), (5, 0, -2), (3, 3), (np.int32(4),), (1, 2, 0.25)])
def test_range(args):
    check(lambda: G.range(*args), np_fn=lambda: np.arange(*args))


def test_range_with_tensor_bounds():
    got, sym = run_graph(lambda n: (G.range(n), G.range(1, n, 2), G.arange(n, dtype=np.float32)), np.int64(7))
    assert_same(got, [np.arange(7), np.arange(1, 7, 2), np.arange(7, dtype=np.float32)], sym)
    assert sym[0].shape == (None,)


def test_one_hot():
    idx = np.array([[0, 2], [1, 5]])
    want = (idx[..., None] == np.arange(3)).astype(np.float64)
    check(lambda i: G.one_hot(i, 3), idx, np_fn=lambda i: want)
    got, sym = run_graph(lambda i, d: G.one_hot(i, d, dtype=np.float32), idx, np.int64(3))
    assert_same(got, want.astype(np.float32), sym)


def test_shape_tensor_arguments_must_be_integers():
    with G.Graph().as_default():
        with pytest.raises(TypeError, match="integer"):
            G.zeros(G.constant([2.0, 3.0]))
        with pytest.raises(TypeError, match="scalar integer tensor"):
            G.zeros([2, G.constant(1.5)])
