"""Indexing: `t[index]` == numpy's `a[index]` over generated index expressions, with static and
tensor-valued parts; GetItemGrad == scatter-add of the selected positions; SetItem."""
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import graph as G
from exec import Session
from tests.graph.op_checks import assert_same, check


@st.composite
def index_cases(draw):
    """(shape, items): items are (kind, numpy value, as_tensor) with kind int/slice/none/ellipsis/array/mask."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=4)))
    items, dim, ellipsis = [], 0, False
    for _ in range(draw(st.integers(0, len(shape) + 1))):
        kinds = ["none"] + (["ellipsis"] if not ellipsis else [])
        if dim < len(shape):
            kinds += ["int", "slice", "slice", "array", "mask"]
        kind = draw(st.sampled_from(kinds))
        tensor = draw(st.booleans())
        if kind == "none":
            items.append(("none", None, False))
        elif kind == "ellipsis":
            ellipsis = True
            items.append(("ellipsis", Ellipsis, False))
            dim = len(shape)  # the ellipsis may cover all that remains: index only new axes after it
        elif kind == "int":
            d = shape[dim]
            items.append(("int", draw(st.integers(-d, d - 1)), tensor))
            dim += 1
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-5, 5))
            step = st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))
            items.append(("slice", slice(draw(bound), draw(bound), draw(step)), tensor))
            dim += 1
        elif kind == "array":
            d = shape[dim]
            ashape = draw(st.sampled_from([(2,), (1,), (2, 1), (3,), ()]))
            values = draw(st.lists(st.integers(-d, d - 1), min_size=int(np.prod(ashape)),
                                   max_size=int(np.prod(ashape))))
            items.append(("array", np.array(values, dtype=np.int64).reshape(ashape), tensor))
            dim += 1
        else:
            d = shape[dim]
            items.append(("mask", np.array(draw(st.lists(st.booleans(), min_size=d, max_size=d))), tensor))
            dim += 1
    return shape, items


def _build_index(items, feeds, dynamic_arrays):
    """The graph index for `items`, with placeholders (recorded in `feeds`) for tensor parts."""
    def tensor_of(value, dtype, shape):
        p = G.placeholder(dtype, shape)
        feeds[p] = value
        return p

    key = []
    for kind, value, as_tensor in items:
        if kind == "int" and as_tensor:
            key.append(tensor_of(np.int64(value), np.int64, []))
        elif kind == "slice" and as_tensor:
            key.append(slice(*(None if v is None else tensor_of(np.int64(v), np.int32, [])
                               for v in (value.start, value.stop, value.step))))
        elif kind in ("array", "mask") and as_tensor:
            key.append(tensor_of(value, value.dtype, None if dynamic_arrays else value.shape))
        else:
            key.append(value)
    return tuple(key)


def _numpy_index(items):
    return tuple(v for _, v, _ in items)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index_cases(), st.sampled_from(["static", "dynamic"]))
def test_getitem_matches_numpy(case, mode):
    shape, items = case
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    np_key = _numpy_index(items)
    try:
        want = x[np_key]
    except (IndexError, ValueError):
        assume(False)
    g = G.Graph()
    with g.as_default():
        feeds = {}
        p = G.placeholder(np.float32, shape if mode == "static" else [None] * len(shape))
        feeds[p] = x
        y = p[_build_index(items, feeds, dynamic_arrays=mode == "dynamic")]
    got = Session(g).run(y, feeds)
    assert_same(got, want, y, exact=True, what=f"x{list(shape)}[{np_key}]")
    if mode == "static" and not any(k == "mask" for k, _, _ in items) and \
            not any(t for k, _, t in items if k == "slice"):
        assert y.shape == want.shape


def _scatter_oracle(shape, key, grad):
    """Zeros with grad added at each selected position, via flat positions (independent of np.add.at keys)."""
    positions = np.arange(int(np.prod(shape))).reshape(shape)[key]
    out = np.zeros(int(np.prod(shape)), grad.dtype)
    np.add.at(out, np.ravel(positions), np.ravel(np.broadcast_to(grad, positions.shape)))
    return out.reshape(shape)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index_cases())
def test_getitem_grad_adds_into_the_selected_positions(case):
    shape, items = case
    x = np.zeros(shape)
    np_key = _numpy_index(items)
    try:
        sel_shape = x[np_key].shape
    except (IndexError, ValueError):
        assume(False)
    grad = np.arange(1, 1 + int(np.prod(sel_shape)), dtype=np.float64).reshape(sel_shape)
    g = G.Graph()
    with g.as_default():
        feeds = {}
        p = G.placeholder(np.float64, [None] * len(shape))
        feeds[p] = x
        y = p[_build_index(items, feeds, dynamic_arrays=False)]
        if y is p:
            return
        gp = G.placeholder(np.float64, sel_shape)
        feeds[gp] = grad
        dx = G.get_item_grad(gp, G.shape(p), y.node.attrs["index"], y.node.inputs[1:])
    got = Session(g).run(dx, feeds)
    assert_same(got, _scatter_oracle(shape, np_key, grad), dx, exact=True)


def test_repeated_indices_accumulate():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [4])
        y = x[[1, 1, 3]]
        dx = G.get_item_grad(G.constant([1.0, 2.0, 5.0]), G.shape(x), y.node.attrs["index"], y.node.inputs[1:])
    np.testing.assert_array_equal(Session(g).run(dx, {x: np.zeros(4)}), [0, 3, 0, 5])


def test_common_index_forms():
    x = np.arange(60).reshape(3, 4, 5)
    check(lambda a: (a[0], a[-1, 2], a[:, 1:3], a[..., ::-2], a[None, 1], a[1, ..., None], a[[0, 2]],
                     a[:, [1, 1, 0], 2], a[[0, 1], :, [2, 3]], a[a > 30], a[0][a[0] % 2 == 0], a[:, None, :, 1]), x,
          exact_shape=False)


def test_tensor_bounds_and_scalar_tensor_index():
    def fn(a):
        n = G.shape(a)[0]
        i = n - 2
        return a[i], a[:n - 1], a[::-1][i:], a[G.constant(-1)], a[G.range(n)[::2]]
    check(fn, np.arange(12.0).reshape(4, 3),
          np_fn=lambda a: (a[2], a[:3], a[::-1][2:], a[-1], a[::2]), modes=("static", "dynamic"), exact_shape=False)


def test_static_shapes_of_indexing():
    with G.Graph().as_default():
        x = G.placeholder(np.float32, [None, 5, 6])
        assert x[0].shape == (5, 6)
        assert x[:, 1:4].shape == (None, 3, 6)
        assert x[..., None, 2].shape == (None, 5, 1)
        assert x[:, [0, 1, 2]].shape == (None, 3, 6)
        assert x[:, [0, 1], [2, 3]].shape == (None, 2)
        assert x[:, [0, 1], :, None].shape == (None, 2, 6, 1)
        assert x[0, :, [1, 2]].shape == (2, 5)  # advanced indices split by a slice go first
        assert x[x > 0].shape == (None,)


def test_index_errors():
    with G.Graph().as_default():
        x = G.placeholder(np.float32, [2, 3])
        with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
            x[0, 3]
        with pytest.raises(IndexError, match="too many indices"):
            x[0, 0, 0]
        with pytest.raises(IndexError, match="single ellipsis"):
            x[..., ...]
        with pytest.raises(IndexError, match="cannot be used as an index"):
            x[G.constant(1.5)]
        with pytest.raises(IndexError, match="step cannot be zero"):
            x[::0]
        with pytest.raises(TypeError, match="immutable"):
            x[0] = 1.0


def test_out_of_range_tensor_index_fails_the_run():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float32, [3])
        i = G.placeholder(np.int64, [])
        y = x[i]
    with pytest.raises(Exception, match="out of bounds"):
        Session(g).run(y, {x: np.zeros(3, np.float32), i: 7})


def test_set_item_is_functional():
    def fn(a):
        n = G.shape(a)[0]
        return G.set_item(a, (slice(None), 0), 9), G.set_item(a, n - 1, a[0] * 2), a

    def np_fn(a):
        b, c = a.copy(), a.copy()
        b[:, 0] = 9
        c[-1] = a[0] * 2
        return b, c, a
    check(fn, np.arange(6.0).reshape(3, 2), np_fn=np_fn)
