"""The feed rule: numpy's same_kind casting into the placeholder's dtype, Python ints weak; a refusal names
the input. The same rule holds for `run`, for `make_callable` and in both execution modes."""
import numpy as np
import pytest

import graph as G
from exec import Session


def _graph():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float32, [2], name="x")
        n = G.placeholder(np.int64, [], name="n")
        u = G.placeholder(np.uint8, [], name="u")
        b = G.placeholder(np.bool_, [], name="b")
    return g, {"x": x, "n": n, "u": u, "b": b}


ACCEPTED = [   # (input, value, what it becomes)
    ("x", np.ones(2), np.ones(2, np.float32)),                 # float64 into float32: same kind
    ("x", np.array([1, 2]), np.array([1, 2], np.float32)),      # int64 into float32: a wider kind
    ("x", [True, False], np.array([1, 0], np.float32)),         # bool into float
    ("n", np.int32(3), np.int64(3)),
    ("n", np.uint64(3), np.int64(3)),                           # unsigned into signed: same kind
    ("n", True, np.int64(1)),
    ("u", 200, np.uint8(200)),                                  # a Python int is weak: it fits
    ("b", np.bool_(True), np.bool_(True)),
]

REFUSED = [   # (input, value, exception, text)
    ("n", 1.5, TypeError, "cannot feed a value of dtype float64 to input 'n' (int64[]): a fed value is converted by "
                          "numpy's same_kind rule"),
    ("n", np.float32(2.0), TypeError, "np.asarray(np.round(value)).astype(np.int64)"),
    ("x", np.ones(2, complex), TypeError, "refuses complex128 into float32"),
    ("b", 1, TypeError, "cannot feed a value of dtype int64 to input 'b'"),
    ("u", np.array(3, np.int64), TypeError, "refuses int64 into uint8"),   # signed into unsigned: no
    ("u", 300, ValueError, "cannot feed 300 to input 'u' (uint8[]): it is out of the range of uint8 (0 to 255)"),
    ("x", np.ones(3, np.float32), ValueError, "cannot feed a value of shape (3,) to input 'x' (float32[2])"),
]


def _run_fed(g, mode: str, how: str, placeholder, out, value):
    session = Session(g, mode=mode)
    if how == "run":
        return session.run(out, {placeholder: value})
    return session.make_callable([out], [placeholder])(value)[0]


@pytest.mark.parametrize("how", ["run", "callable"])
@pytest.mark.parametrize("mode", ["dataflow", "compiled"])
@pytest.mark.parametrize("name,value,want", ACCEPTED, ids=[f"{a[0]}<-{a[1]!r}" for a in ACCEPTED])
def test_values_the_rule_accepts_are_converted(mode, how, name, value, want):
    g, inputs = _graph()
    with g.as_default():
        out = G.identity(inputs[name])
    got = _run_fed(g, mode, how, inputs[name], out, value)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("how", ["run", "callable"])
@pytest.mark.parametrize("name,value,exc,text", REFUSED, ids=[f"{r[0]}<-{r[1]!r}" for r in REFUSED])
def test_values_the_rule_refuses_name_the_input(how, name, value, exc, text):
    g, inputs = _graph()
    with g.as_default():
        out = G.identity(inputs[name])
    with pytest.raises(exc) as info:
        _run_fed(g, "auto", how, inputs[name], out, value)
    assert text in str(info.value)
    assert ":0" not in str(info.value)   # the input's name, not the graph tensor's


DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.uint64, np.float16, np.float32, np.float64,
          np.complex64, np.complex128]


@pytest.mark.parametrize("mode", ["dataflow", "compiled"])
def test_every_dtype_pair_follows_numpys_same_kind_rule(mode):
    for to in DTYPES:
        g = G.Graph()
        with g.as_default():
            p = G.placeholder(to, [3], name="p")
            out = G.identity(p)
        session = Session(g, mode=mode)
        for frm in DTYPES:
            value = np.array([0, 1, 1], frm)
            if np.can_cast(frm, to, casting="same_kind"):
                got = session.run(out, {p: value})
                assert got.dtype == np.dtype(to) and np.array_equal(got, value.astype(to)), (frm, to)
            else:
                with pytest.raises(TypeError, match=f"to input 'p' .*refuses {np.dtype(frm)} into {np.dtype(to)}"):
                    session.run(out, {p: value})
