"""Values known when building stay known inside cond branches and loop bodies (through Switch and Enter)."""
import numpy as np

import graph as G


def test_shapes_built_from_constants_stay_static_in_a_branch_and_a_loop_body():
    buffer = G.Variable(np.zeros((10, 4), np.float32), name="static_test_buffer")
    seen = {}
    with G.Graph().as_default():
        p = G.placeholder(np.bool_, ())

        def branch():
            i = G.random_uniform([32], 0, 10, dtype=np.int64)
            seen["cond"] = (i.shape, buffer[i].shape, G.zeros([3, 2]).shape)
            return G.reduce_sum(buffer[i])

        G.cond(p, branch, lambda: G.constant(0.0, np.float32))

        def body(k, s):
            seen["loop"] = G.ones([5]).shape
            return k + 1, s + G.reduce_sum(G.ones([5]))

        G.while_loop(lambda k, s: k < 3, body, (G.constant(0), G.constant(0.0)))
    assert seen["cond"] == ((32,), (32, 4), (3, 2))
    assert seen["loop"] == (5,)
