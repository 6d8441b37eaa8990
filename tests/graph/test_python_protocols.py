"""Python protocols that need a concrete value (`bool`, iteration, `len`, `in`, indexing with, numbers,
numpy conversion, item assignment) fail on a symbolic tensor with an error that names it, the user's
line, and what to use instead; `len` and iteration (unpacking, `list(t)`) work when the first dimension is
known, as numpy's do."""
import sys

import numpy as np
import pytest

import graph as G
from graph.errors import SymbolicBoolError, SymbolicIndexError, SymbolicValueError


def _unpack(t):
    a, b, c = t
    return a


CASES = {
    "if t": (lambda t: bool(t[0] > 0), ["truth value", "@transpile.function", "graph.cond"]),
    "while/and/or": (lambda t: (t[0] > 0) and 1, ["truth value", "graph.while_loop"]),
    "unpacking": (lambda t: tuple(a for a in t), ["cannot iterate", "`for` statement", "graph.unstack"]),
    "list()": (lambda t: list(t), ["cannot iterate", "@transpile.function"]),
    "a, b, c = t": (lambda t: _unpack(t), ["cannot iterate", "unpacking"]),
    "x in t": (lambda t: 1.0 in t, ["`x in t`", "graph.reduce_any"]),
    "len of unknown dim": (lambda t: len(G.placeholder(np.float32, [None])), ["len()", "graph.shape"]),
    "index": (lambda t: [1, 2, 3][G.cast(t[0], np.int64)], ["Python index", "graph.gather"]),
    "float": (lambda t: float(t[0]), ["float()", "graph.cast"]),
    "int": (lambda t: int(t[0]), ["int()", "graph.cast"]),
    "np.asarray": (lambda t: np.asarray(t), ["numpy cannot convert", "Session.run"]),
    "t[i] = v": (lambda t: t.__setitem__(0, 1.0), ["immutable", "graph.set_item"]),
}


_ITERATION = ("unpacking", "list()", "a, b, c = t")   # they need the number of rows: unknown here


@pytest.mark.parametrize("what", list(CASES))
def test_protocol_error_names_the_tensor_the_line_and_the_way_out(what):
    fn, texts = CASES[what]
    with G.Graph().as_default():
        t = G.placeholder(np.float32, [None] if what in _ITERATION else [3], name="weights")
        with pytest.raises(SymbolicValueError) as info:
            fn(t)
    msg = str(info.value)
    assert isinstance(info.value, TypeError)  # what Python code expects from such protocols
    assert "test_python_protocols.py:" in msg, msg
    for text in texts:
        assert text in msg, (text, msg)
    if what != "t[i] = v":  # the tensor it is about, in the user's terms
        assert "input '" in msg or "the value computed at test_python_protocols.py:" in msg, msg
        assert ":0" not in msg
    kind = SymbolicIndexError if what in ("index", "len of unknown dim") else \
        SymbolicBoolError if what in ("if t", "while/and/or", "unpacking", "list()", "a, b, c = t", "x in t") else \
        SymbolicValueError
    assert isinstance(info.value, kind)


def test_len_is_the_static_first_dimension():
    with G.Graph().as_default():
        assert len(G.placeholder(np.float32, [4, None])) == 4


def test_errors_describe_a_tensor_in_the_users_terms():
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [], name="n")
        seen = {}

        def body(i, s):
            seen["i"], seen["n"] = i, n + 0   # a loop variable; a value computed from a captured input
            return G.cond(s > 0, lambda: (i + 1, s), lambda: (i + 1, n * 1))
        line = sys._getframe().f_lineno + 1
        i, s = G.while_loop(lambda i, s: i < n, body, (G.constant(0), n), names=("i", "s"))
    assert n.describe() == "input 'n'"
    assert seen["i"].describe() == f"loop variable 'i' of the loop at test_python_protocols.py:{line}"
    assert i.describe() == seen["i"].describe()   # after the loop (through its Exit), the same variable
    assert seen["n"].describe() == f"the value computed at test_python_protocols.py:{line - 3}"
    captured = next(nd for nd in g.nodes if nd.op == "Enter" and nd.inputs[0] is n).outputs[0]
    assert captured.describe() == "input 'n'"   # a loop constant is the value it brings in


def test_a_sequence_times_an_integer_scalar_tensor_is_refused_not_broadcast():
    with G.Graph().as_default():
        n = G.placeholder(np.int64, [], name="n")
        for repeat in (lambda: [0.0] * n, lambda: n * (1, 2), lambda: "ab" * n):
            with pytest.raises(SymbolicIndexError, match="Python repeats a sequence"):
                repeat()
        x = G.placeholder(np.float32, [2], name="x")
        assert (x * [1.0, 2.0]).shape == (2,)   # an array times a list stays numpy's elementwise product
        assert ([1.0, 2.0] * G.cast(n, np.float64)).shape == (2,)


def test_a_tensor_whose_rows_are_known_iterates_as_numpy_does():
    """`x, y = t` of a float64[2] tensor: its rows, as numpy gives them (a mismatch is Python's ValueError)."""
    with G.Graph().as_default():
        t = G.placeholder(np.float64, [2, 3], name="z")
        x, y = t
        assert x.shape == (3,) and y.shape == (3,)
        with pytest.raises(ValueError, match="too many values to unpack"):
            a, = t
        assert [r.shape for r in list(t)] == [(3,), (3,)]
