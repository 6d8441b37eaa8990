"""A fed node takes the fed value in every mode, constants included: the compiled program, the dataflow
executor and the reference interpreter agree with the program evaluated in numpy with the fed values
substituted, whether the constants are read at the top level, in a cond branch or in a loop body, and
whatever constants are equal (each `graph.constant` is a node of its own)."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graph as G
from exec import Session
from exec.reference import run_reference

_VALUES = st.sampled_from([0.0, 1.0, 2.0, -1.5])
_OPS = {"add": np.add, "mul": np.multiply, "sub": np.subtract, "max": np.maximum}

# An expression over constants c[k]: ("c", k), (op, left, right), or ("where", left, right) taking
# left when it is > 0 (a graph cond) or ("loop", e): e added three times in a graph while loop.
_leaf = st.builds(lambda k: ("c", k), st.integers(0, 3))
_expr = st.recursive(_leaf, lambda sub: st.one_of(
    st.tuples(st.sampled_from(sorted(_OPS)), sub, sub),
    st.tuples(st.just("where"), sub, sub),
    st.tuples(st.just("loop"), sub)), max_leaves=6)


def _numpy(e, c):
    if e[0] == "c":
        return c[e[1]]
    if e[0] == "where":
        left = _numpy(e[1], c)
        return left if left > 0 else _numpy(e[2], c)
    if e[0] == "loop":
        return 3 * _numpy(e[1], c)
    return _OPS[e[0]](_numpy(e[1], c), _numpy(e[2], c))


def _graph(e, c):
    if e[0] == "c":
        return c[e[1]]
    if e[0] == "where":
        left = _graph(e[1], c)
        return G.cond(left > 0.0, lambda: left, lambda: _graph(e[2], c))
    if e[0] == "loop":
        _, total = G.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + _graph(e[1], c)),
                                (G.constant(0), G.constant(0.0)))
        return total
    return getattr(G, {"add": "add", "mul": "mul", "sub": "sub", "max": "maximum"}[e[0]])(
        _graph(e[1], c), _graph(e[2], c))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_expr, st.lists(_VALUES, min_size=4, max_size=4), st.lists(st.one_of(st.none(), _VALUES), min_size=4,
                                                                     max_size=4))
def test_fed_constants_take_the_fed_value_in_every_mode(expr, values, fed):
    g = G.Graph()
    with g.as_default():
        consts = [G.constant(v) for v in values]
        y = G.convert(_graph(expr, consts)) + 0.0
    feeds = {c: f for c, f in zip(consts, fed, strict=True) if f is not None}
    want = _numpy(expr, [v if f is None else f for v, f in zip(values, fed, strict=True)])
    for mode in ("compiled", "dataflow"):
        assert Session(g, mode=mode).run(y, feeds) == want, mode
    assert run_reference(y, feeds) == want


def test_feeding_one_of_two_equal_constants_feeds_that_one():
    g = G.Graph()
    with g.as_default():
        q, r = G.constant(0), G.constant(0)
        y = q > r
    for mode in ("compiled", "dataflow"):
        assert Session(g, mode=mode).run(y, {q: 3}), mode
        assert not Session(g, mode=mode).run(y, {r: 3}), mode


def test_a_fed_constant_is_not_folded_into_compiled_code():
    g = G.Graph()
    with g.as_default():
        c = G.constant(0.0)
        y = c + 1.0
    sess = Session(g, mode="compiled")
    assert sess.run(y) == 1.0
    assert sess.run(y, {c: 5.0}) == 6.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=8), st.sets(st.integers(0, 1)))
def test_fetching_constants_and_fed_values_in_any_order(picks, fed):
    """A top-level constant fetched at a place past the plan's node count (fetches repeat) is still a
    fetch, never written into a node's pending inputs."""
    g = G.Graph()
    with g.as_default():
        xs = [G.placeholder(np.float64, ()) for _ in range(2)]
        cs = [G.constant(5.0), G.constant(7.0)]
    tensors = xs + cs
    values = [1.0, 2.0] + [10.0 + k if k in fed else v for k, v in enumerate((5.0, 7.0))]
    feeds = {**{x: v for x, v in zip(xs, values, strict=False)}, **{cs[k]: 10.0 + k for k in fed}}
    for mode in ("compiled", "dataflow"):
        got = Session(g, mode=mode).run([tensors[k] for k in picks], feeds)
        assert got == [values[k] for k in picks], mode


def test_fed_shapes_are_not_baked_into_kernels():
    """Kernels that take a shape the graph knows (a constant, the shape of a tensor of known shape) use the
    fed value where the run feeds the constant, the Shape node or an Identity between them."""
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (6,), name="x")
        c = G.constant([2, 3])
        through = G.identity(c)
        s = G.shape(G.zeros([2, 3]))
        fetches = [G.reshape(x, c), G.broadcast_to(G.constant(1.0), through), G.tile(G.constant([[1.0]]), s),
                   G.reduce_to_shape(G.ones([2, 3]), G.constant([1, 3]))]
    value = np.arange(6.0)
    for feeds, want in (({}, [value.reshape(2, 3), np.ones((2, 3)), np.ones((2, 3)), np.full((1, 3), 2.0)]),
                        ({c: np.array([3, 2])}, [value.reshape(3, 2), np.ones((3, 2)), np.ones((2, 3)), np.full((1, 3), 2.0)]),
                        ({through: np.array([1, 2]), s: np.array([1, 4])}, [value.reshape(2, 3), np.ones((1, 2)), np.ones((1, 4)),
                                                        np.full((1, 3), 2.0)])):
        for mode in ("compiled", "dataflow"):
            got = Session(g, mode=mode).run(fetches, {x: value, **feeds})
            for a, b in zip(got, want, strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{mode} {feeds}")
        for a, b in zip(run_reference(fetches, {x: value, **feeds}), want, strict=True):
            np.testing.assert_array_equal(a, b)
