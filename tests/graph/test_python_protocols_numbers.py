"""Python's number protocols on graph tensors in graph code: round(t), round(t, n), divmod, pow, abs, t.item(),
t.tolist() build graph ops with numpy's scalar semantics; math.exp(t) and float(t) say what to write instead;
tolist of a tensor whose size is unknown, round of an array say why not."""
import math
import re

import numpy as np
import pytest

import graph as G
from exec import Session


def _run(build, *values):
    """build(*placeholders) run in both modes; the results (nested lists kept)."""
    g = G.Graph()
    with g.as_default():
        phs = [G.placeholder(np.asarray(v).dtype, np.shape(v)) for v in values]
        out = build(*phs)
    flat = G.nest.flatten(out)
    runs = [Session(g, mode=m).run(flat, dict(zip(phs, values, strict=True))) for m in ("compiled", "dataflow")]
    assert all(np.array_equal(a, b) for a, b in zip(*runs, strict=True))
    return G.nest.pack_as(out, runs[0]), out


def test_number_protocols_of_scalars_as_numpys_scalars():
    x, y = np.float64(2.675), np.float64(-0.7)
    got, sym = _run(lambda a, b: (round(a, 2), round(a), round(a * 10, -1), *divmod(a, b), *divmod(3, b), pow(a, b),
                                  pow(2, a), abs(b)), x, y)
    want = (round(x, 2), round(x), round(x * 10, -1), *divmod(x, y), *divmod(3, y), pow(x, y), pow(2, x), abs(y))
    # numpy's scaled rounding (2.68); numpy's power may differ from C's pow in the last bit
    assert [float(v) for v in G.nest.flatten(got)] == pytest.approx([float(v) for v in want], rel=1e-15, abs=0)
    assert float(G.nest.flatten(got)[0]) == 2.68
    assert sym[1].dtype == np.int64 and sym[0].dtype == np.float64
    i = np.int64(27)
    got, sym = _run(lambda a: (round(a, -1), round(a), *divmod(a, 4)), i)
    assert [int(v) for v in G.nest.flatten(got)] == [round(i, -1), round(i), *divmod(i, 4)]
    assert all(s.dtype == np.int64 for s in sym)


def test_item_and_tolist():
    a = np.arange(6.0).reshape(2, 3)
    got, _ = _run(lambda t: (t[1, 2:].item(), t.item(4), t.item(1, 0), t.tolist(), t[0, 0].tolist()), a)
    flat = [float(v) for v in G.nest.flatten(got)]
    assert flat == [a[1, 2:].item(), a.item(4), a.item(1, 0), *a.ravel().tolist(), a[0, 0].tolist()]
    with G.Graph().as_default():
        x, u = G.placeholder(np.float64, (2, 3)), G.placeholder(np.float64, (None,))
        assert isinstance(x.tolist(), list) and len(x.tolist()) == 2 and x.tolist()[1][2].shape == ()
        assert u[:1].item().shape == ()  # one element when it runs, else the run fails
        with pytest.raises(ValueError, match=re.escape("can only convert an array of size 1")):
            x.item()
        with pytest.raises(G.errors.SymbolicValueError, match="needs their number when the graph is built"):
            u.tolist()
        with pytest.raises(G.errors.SymbolicValueError, match="at most 64 elements"):
            G.placeholder(np.float64, (9, 9)).tolist()
        with pytest.raises(TypeError, match=re.escape("numpy arrays do not define round(); use np.round")):
            round(x, 1)


def test_math_of_a_tensor_in_graph_code_says_what_to_write():
    with G.Graph().as_default():
        x = G.placeholder(np.float64, ())
        with pytest.raises(G.errors.SymbolicValueError, match=r"math functions .*np\.exp\(t\)"):
            math.exp(x)


def test_python_round_of_a_python_float_and_its_export():
    from graph.ops.python_math import python_round
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, (), name="x")
        r = python_round(x, 1)
    assert Session(g).run(r, {x: 1.85}) == 1.9 == round(1.85, 1) != np.round(1.85, 1)
    pytest.importorskip("onnx")
    from graph.onnx import ExportError, export
    with pytest.raises(ExportError, match="use np.round"):
        export(g, [x], [r])
