"""What the graph infers is what the kernels produce: for every elementwise op, reduction and
nn op, over every pair of numeric dtypes, the run-time dtype and shape of each output equal the
statically inferred ones (downstream inference and dtype checks rely on it)."""
import itertools
import warnings

import numpy as np
import pytest

import graph as G
from exec import Session
from graph.ops.math import BINARY, UNARY

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]
REDUCTIONS = [G.reduce_sum, G.reduce_mean, G.reduce_prod, G.reduce_max, G.reduce_min, G.reduce_any, G.reduce_all,
              G.argmax, G.argmin]


def _value(dtype, shape):
    return (np.arange(1, 1 + int(np.prod(shape))).reshape(shape) % 3 + 1).astype(dtype)


def _builder(op):
    """The graph.ops.math function that builds op type `op`."""
    return next(v for v in vars(G.ops.math).values() if callable(v) and getattr(v, "__name__", None) == op)


def _build_all(fn_list, *placeholders):
    """Each builder applied to the placeholders; builders whose dtypes numpy rejects are skipped."""
    out = []
    for label, fn in fn_list:
        try:
            out.append((label, fn(*placeholders)))
        except TypeError:
            continue
    return out


def _check(g, built, feeds):
    got = Session(g).run([t for _, t in built], feeds)
    for (label, t), v in zip(built, got, strict=True):
        v = np.asarray(v)
        assert v.dtype == t.dtype, f"{label}: the kernel gives {v.dtype}, inference says {t.dtype}"
        assert t.shape is not None and v.shape == t.shape, f"{label}: kernel shape {v.shape}, inferred {t.shape}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_unary_ops_and_reductions(dtype):
    g = G.Graph()
    x = _value(dtype, (2, 3))
    with g.as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = G.placeholder(dtype, x.shape)
        fns = [(op, _builder(op)) for op in UNARY]
        fns += [(f"{r.__name__}(axis={a})", lambda t, r=r, a=a: r(t, a)) for r in REDUCTIONS for a in (None, 1)]
        fns += [("softmax", G.softmax), ("log_softmax", G.log_softmax), ("relu", G.relu), ("sigmoid", G.sigmoid),
                ("cast", lambda t: G.cast(t, np.float32)), ("one_hot", lambda t: G.one_hot(t, 4))]
        built = _build_all(fns, p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(g, built, {p: x})


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, repeat=2)),
                         ids=lambda d: np.dtype(d).name)
def test_binary_ops(a, b):
    g = G.Graph()
    x, y = _value(a, (2, 1)), _value(b, (3,))
    with g.as_default():
        p, q = G.placeholder(a, x.shape), G.placeholder(b, y.shape)
        built = _build_all([(op, _builder(op)) for op in BINARY] + [("matmul", lambda s, t: s @ t[:1])], p, q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(g, built, {p: x, q: y})
