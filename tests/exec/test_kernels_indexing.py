"""Indexing kernels: index tuples from IndexSpecs, and scatter-add for GetItemGrad."""
import numpy as np
import pytest

from exec.kernels.indexing import index_function, scatter_add
from graph.ops.indexing import Dyn, Slice, parse_index


def test_static_index_is_a_ready_tuple():
    key_of = index_function((0, Slice(None, 2, None), None, Ellipsis))
    assert key_of(()) == (0, slice(None, 2, None), None, Ellipsis)


def test_dynamic_parts_are_filled_from_the_inputs():
    key_of = index_function((Dyn(0, "scalar"), Slice(1, Dyn(1, "scalar"), -1), Dyn(2, "array"), Dyn(3, "mask")))
    key = key_of((np.int64(2), np.array(5), [0, 1], [True, False]))
    assert key[0] == 2 and key[1] == slice(1, 5, -1)
    assert isinstance(key[2], np.ndarray) and key[3].dtype == bool


@pytest.mark.parametrize("shape,key", [
    ((5, 3, 4), (slice(None), [0, 1], Ellipsis, [0, 1])),   # an empty-looking Ellipsis still separates
    ((3, 4), ([0, 1], Ellipsis, [0, 1])),                    # the Ellipsis covers nothing
    ((3, 4, 5), ([0, 2, 0], None, [1, 1, 1])),               # None between advanced indices
    ((3, 4, 5), (slice(None), None, [1, 1], 2)),
    ((3, 4), (np.array([[True, False, True, True]] * 3),)),  # a 2-D mask
    ((3, 4), (1, [3, 3, 0])),                                 # repeated indices accumulate
])
def test_scatter_add_matches_flat_position_oracle(shape, key):
    spec, _ = parse_index(key)
    np_key = tuple(np.asarray(k) if isinstance(k, list) else k for k in key)
    positions = np.arange(int(np.prod(shape))).reshape(shape)[np_key]
    grad = np.arange(1.0, 1 + positions.size).reshape(positions.shape)
    want = np.zeros(int(np.prod(shape)))
    np.add.at(want, positions.ravel(), grad.ravel())
    dyn_values = [np.asarray(k) for k in key if isinstance(k, (list, np.ndarray))]
    items = spec.items
    got = scatter_add(np.array(shape), grad, items, index_function(items)(tuple(dyn_values)))
    np.testing.assert_array_equal(got, want.reshape(shape))


@pytest.mark.parametrize("rows", [np.arange(5), np.array([4, 0, 2, 1, 3]), np.array([0, 0, 1, 2, 3]), np.array([0, 1, 2, 3, -5])])
@pytest.mark.parametrize("mode", ["compiled", "dataflow"])
def test_gradient_of_a_pick_per_row_equals_the_scatter_add(rows, mode):
    """x[rows, j] with rows a constant: distinct rows (a Q-value per row) assign the gradient instead of adding
    it with np.add.at; repeated rows still accumulate. Negative zeros come out as np.add.at gives them."""
    import grad
    import graph as G
    from exec import Session
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float32, (5, 3), name="x")
        j = G.placeholder(np.int64, (5,), name="j")
        w = G.placeholder(np.float32, (5,), name="w")
        (gx,) = grad.gradients(G.reduce_sum(x[G.constant(rows), j] * w), [x])
    feeds = {x: np.ones((5, 3), np.float32), j: np.array([2, 0, 1, 1, 2]), w: np.array([-0.0, 1, 2, 3, 4], np.float32)}
    want = np.zeros((5, 3), np.float32)
    np.add.at(want, (rows, feeds[j]), feeds[w] * np.float32(1))
    got = Session(g, mode=mode).run(gx, feeds)
    assert got.tobytes() == want.tobytes()
