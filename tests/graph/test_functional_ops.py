"""scan, map_fn, foldl and foldr as TensorFlow's functional ops: values equal the Python loops they
stand for (nested structures of elems and accumulators included), and the static shapes they infer
keep what the elems tell: the leading dimension of the results is the elems' when that is known."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import graph as G
from exec import Session
from tests.graph.op_checks import assert_same, placeholder_for

_dims = st.integers(0, 3)


def _py_scan(fn, elems, init):
    out, acc = [], init
    for x in elems:
        acc = fn(acc, x)
        out.append(acc)
    return out


def _run(build, arrays, mode):
    g = G.Graph()
    with g.as_default():
        phs = [placeholder_for(a, mode) for a in arrays]
        sym = build(*phs)
    flat = G.nest.flatten(sym)
    return Session(g).run(flat, dict(zip(phs, arrays, strict=True))), flat


@settings(max_examples=25, deadline=None)
@given(_dims, _dims, st.sampled_from(["static", "dynamic"]))
def test_map_fn_with_nested_elems_and_results(n, k, mode):
    if mode == "dynamic" and n == 0:
        n = 1  # no element to learn the results' shape from, and the graph does not know it: an error
    a = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    b = np.arange(n * k, dtype=np.int64).reshape(n, k)
    want = [np.stack([x * 2.0 for x in a]) if n else np.zeros((0, 3), np.float32),
            np.stack([y.sum() for y in b]) if n else np.zeros((0,), np.int64)]

    def build(a_t, b_t):
        out = G.map_fn(lambda e: {"twice": e[0] * 2.0, "sum": G.reduce_sum(e[1])}, (a_t, b_t))
        return [out["twice"], out["sum"]]
    got, syms = _run(build, [a, b], mode)
    for g_, w_, s_ in zip(got, want, syms, strict=True):
        assert_same(g_, w_, s_)
        if mode == "static":
            assert s_.shape == w_.shape


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.booleans(), st.booleans(), st.sampled_from(["static", "dynamic"]))
def test_scan_with_a_nested_accumulator(n, reverse, initialized, mode):
    xs = np.linspace(-1.0, 1.0, n * 2).reshape(n, 2)
    step = lambda acc, x: (acc[0] * 0.5 + x, acc[1] + x.sum())  # noqa: E731
    init = (np.zeros(2), np.float64(1.0))
    items = xs[::-1] if reverse else xs
    if initialized:
        rows = _py_scan(step, items, init)
    else:
        first = (items[0], items[0].sum())
        rows = [first] + _py_scan(lambda a, x: step(a, x), items[1:], first)
    want = [np.stack([r[0] for r in rows]), np.asarray([r[1] for r in rows])]
    if reverse:
        want = [w[::-1] for w in want]

    def build(x):
        start = (G.zeros([2], np.float64), G.constant(1.0)) if initialized else None
        elems = (x, G.reduce_sum(x, axis=1)) if not initialized else x
        fn = step if initialized else (lambda a, e: (a[0] * 0.5 + e[0], a[1] + e[1]))
        out = G.scan(fn, elems, initializer=start, reverse=reverse)
        return list(out)
    got, syms = _run(build, [xs], mode)
    for g_, w_, s_ in zip(got, want, syms, strict=True):
        assert_same(g_, w_, s_)
        if mode == "static":
            assert s_.shape == w_.shape


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.sampled_from(["static", "dynamic"]))
def test_foldl_and_foldr_with_nested_structures(n, mode):
    xs = np.arange(1.0, 1.0 + n * 2).reshape(n, 2)
    left = (np.zeros(2), np.float64(0.0))
    for x in xs:
        left = (left[0] * 2.0 + x, left[1] - x[0])
    right = (np.zeros(2), np.float64(0.0))
    for x in xs[::-1]:
        right = (right[0] * 2.0 + x, right[1] - x[0])

    def build(x):
        fn = lambda a, e: (a[0] * 2.0 + e, a[1] - e[0])  # noqa: E731
        init = (G.zeros([2], np.float64), G.constant(0.0))
        return [*G.foldl(fn, x, initializer=init), *G.foldr(fn, x, initializer=init)]
    got, syms = _run(build, [xs], mode)
    for g_, w_, s_ in zip(got, [*left, *right], syms, strict=True):
        assert_same(g_, w_, s_)
        assert s_.shape == np.shape(w_)
