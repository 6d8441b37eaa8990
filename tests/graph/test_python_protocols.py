"""Python protocols that need a concrete value (`bool`, iteration, `len`, `in`, indexing with, numbers,
numpy conversion, item assignment) fail on a symbolic tensor with an error that names it, the user's
line, and what to use instead; `len` works when the first dimension is known."""
import numpy as np
import pytest

import graph as G
from graph.errors import SymbolicBoolError

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


@pytest.mark.parametrize("what", list(CASES))
def test_protocol_error_names_the_tensor_the_line_and_the_way_out(what):
    fn, texts = CASES[what]
    with G.Graph().as_default():
        t = G.placeholder(np.float32, [3], name="weights")
        with pytest.raises(SymbolicBoolError) as info:
            fn(t)
    msg = str(info.value)
    assert isinstance(info.value, TypeError)  # what Python code expects from such protocols
    assert "test_python_protocols.py:" in msg, msg
    for text in texts:
        assert text in msg, (text, msg)
    if what != "t[i] = v":
        assert ":0" in msg  # the tensor it is about


def test_len_is_the_static_first_dimension():
    with G.Graph().as_default():
        assert len(G.placeholder(np.float32, [4, None])) == 4
