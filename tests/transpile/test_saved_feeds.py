"""A loaded function (`Function.save` -> `transpile.load`) feeds its arguments by the rule `Session.run` applies
(docs/design.md, "Feeds": numpy's same_kind casting, Python ints weak): what the rule refuses, such as a float
for an int input, is the same error naming the input, never a silent truncation."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import transpile
from exec import Session
from graph import nest


def program(x, n, u, b):
    i = 0
    s = x * 0.0
    while i < n and i < 4:      # (n may be fed any int: the loop stays short)
        s = s + x
        i += 1
    return i, s, u + 1, np.logical_not(b)


EXAMPLE = {"x": np.array([0.5, -1.0], np.float32), "n": 3, "u": np.uint8(7), "b": True}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "program.fg"
    transpile.function(program).save(path, *EXAMPLE.values())
    return transpile.load(path)


def _outcome(call):
    """("value", flat results) or ("error", its type, its message)."""
    try:
        return ("value", [np.asarray(v) for v in nest.flatten(call())])
    except (TypeError, ValueError) as e:
        return ("error", type(e), str(e))


_DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.uint64, np.float16, np.float32, np.float64,
           np.complex64]
_scalars = st.one_of(
    st.booleans(), st.integers(-2**65, 2**65), st.floats(-1e3, 1e3), st.complex_numbers(max_magnitude=1e3),
    st.tuples(st.sampled_from(_DTYPES), st.integers(0, 100)).map(lambda d: np.asarray(d[1]).astype(d[0])[()]),
    st.tuples(st.sampled_from(_DTYPES), st.integers(0, 100)).map(lambda d: np.asarray(d[1]).astype(d[0])))
_vectors = st.one_of(
    st.lists(st.one_of(st.booleans(), st.integers(-9, 9), st.floats(-9, 9)), min_size=1, max_size=3),
    st.tuples(st.sampled_from(_DTYPES), st.integers(1, 3)).map(lambda d: np.arange(d[1]).astype(d[0])))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["x", "n", "u", "b"]).flatmap(
    lambda name: st.tuples(st.just(name), _vectors if name == "x" else _scalars)))
def test_a_loaded_function_feeds_its_arguments_as_session_run_does(loaded, fed):
    name, value = fed
    args = {**EXAMPLE, name: value}
    inputs = dict(zip(loaded.input_names, loaded.signature.inputs, strict=True))
    want = _outcome(lambda: Session(loaded.graph).run(
        list(loaded.signature.outputs), {inputs[k]: v for k, v in args.items()}))
    got = _outcome(lambda: loaded(*args.values()))
    assert got[0] == want[0], (got, want)
    if want[0] == "error":
        assert got[1:] == want[1:]
    else:
        for g, w in zip(got[1], want[1], strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def test_a_float_for_an_int_input_is_refused_naming_it_not_truncated(loaded):
    assert loaded(EXAMPLE["x"], 3, np.uint8(7), True)[0] == 3
    with pytest.raises(TypeError, match=r"cannot feed a value of dtype float64 to input 'n' \(int64\[\]\)"):
        loaded(EXAMPLE["x"], 3.7, np.uint8(7), True)  # 3 iterations, when floats were truncated
    with pytest.raises(TypeError, match="input 'n'"):
        loaded(EXAMPLE["x"], n=np.float32(3.0), u=np.uint8(7), b=True)
