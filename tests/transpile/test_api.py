"""The public API: transpile.function (signatures, caching, outputs, retraces), convert, to_code."""
import collections

import numpy as np
import pytest

import graph
import transpile

Point = collections.namedtuple("Point", "x y")


def structures(x, n):
    return {"a": x, "b": [x * 2, (n, None)], "c": "text", "p": Point(x, n)}


def test_return_structure_is_kept():
    out = transpile.function(structures)(1.5, 3)
    assert set(out) == {"a", "b", "c", "p"}
    assert out["a"] == 1.5 and out["b"][0] == 3.0 and out["b"][1] == (3, None) and out["c"] == "text"
    assert isinstance(out["b"], list) and isinstance(out["p"], Point) and out["p"].y == 3
    assert type(out["a"]) is float and type(out["b"][1][0]) is int   # the Python numbers it was passed


def returns_nothing(x):
    assert x > 0, "x must be positive"


def test_function_without_return_value_still_runs_its_effects():
    f = transpile.function(returns_nothing)
    assert f(1.0) is None
    with pytest.raises(Exception, match="x must be positive"):
        f(-1.0)


def unrolled(x, n):
    for _ in range(n):
        x = x * 2
    return x


def test_python_scalars_are_graph_inputs_unless_static():
    f = transpile.function(unrolled)
    assert f(1.0, 3) == 8.0 and f(1.0, 4) == 16.0
    assert f.traces == 1                                  # n is an int64 input: one graph, a graph loop
    s = transpile.function(unrolled, static_argnames="n")
    assert s(1.0, 3) == 8.0 and s(1.0, 4) == 16.0
    assert s.traces == 2                                  # static: one unrolled graph per value
    assert s.last_retrace_report == "retracing unrolled: n: static 3 -> static 4 (a static argument changed " \
                                    "value: pass it as a numpy array to make it a graph input)"
    assert [n.op for n in s.get_graph(1.0, 3).nodes].count("Mul") == 3


def test_signature_is_dtype_and_shape():
    f = transpile.function(unrolled)
    f(np.ones(3), 2)
    f(np.zeros(3), 5)
    assert f.traces == 1
    f(np.ones(4), 2)
    f(np.ones(3, np.float32), 2)
    assert f.traces == 3
    assert f.retrace_reports == ["retracing unrolled: x: float64[3] -> float64[4]",
                                 "retracing unrolled: x: float64[4] -> float32[3]"]
    assert f(np.ones(3, np.float32), 2).dtype == np.float32


def defaults_and_varargs(x, *rest, scale=2.0, **named):
    total = x * scale
    for r in rest:
        total = total + r
    for k in named:
        total = total - named[k]
    return total


def test_defaults_varargs_and_kwargs():
    f = transpile.function(defaults_and_varargs)
    assert f(1.0) == 2.0
    assert f(1.0, 2.0, 3.0, scale=1.0) == 6.0
    assert f(1.0, scale=3.0, a=1.0, b=0.5) == 1.5


def nested_arguments(pair, table):
    a, b = pair
    return a * table["w"] + b


def test_nested_structures_of_arrays_as_arguments():
    f = transpile.function(nested_arguments)
    out = f((np.ones(2), 3.0), {"w": np.array([2.0, 4.0])})
    np.testing.assert_allclose(out, [5.0, 7.0])
    f((np.zeros(2), 1.0), {"w": np.array([1.0, 1.0])})
    assert f.traces == 1


class Scaler:
    def __init__(self, k):
        self.k = k

    @transpile.function
    def apply(self, x, n):
        for _ in range(n):
            x = x * self.k
        return x


def test_methods():
    a, b = Scaler(2.0), Scaler(3.0)
    assert a.apply(1.0, 3) == 8.0
    assert b.apply(1.0, 2) == 9.0


def test_convert_runs_as_python_on_python_values(capsys):
    def fn(x, n):
        out = []
        for i in range(n):
            if i % 2:
                print("odd", i)
            out.append(x * i)
        return out

    converted = transpile.convert(fn)
    assert converted(2, 3) == [0, 2, 4]
    assert capsys.readouterr().out == "odd 1\n"


def test_to_code_of_a_lambda():
    f = lambda x: x if x > 0 else -x  # noqa: E731
    assert transpile.to_code(f).strip() == "(lambda x: ag.if_exp(x > 0, lambda : x, lambda : -x))"
    g = transpile.function(f)
    assert g(-3.0) == 3.0 and g(2.0) == 2.0


@transpile.do_not_convert
def opaque(x):
    return x + 1


def calls_opaque(x):
    return opaque(x) * 2


def test_do_not_convert():
    assert transpile.function(calls_opaque)(1.0) == 4.0


WEIGHTS = graph.Variable(np.zeros(2), name="transpile_api_weights")


def accumulate_into_variable(x):
    WEIGHTS.assign_add(x)
    return WEIGHTS.read().sum()


def test_module_level_variable_keeps_its_value_across_calls_and_retraces():
    WEIGHTS.load(np.zeros(2))
    f = transpile.function(accumulate_into_variable)
    assert f(np.ones(2)) == 2.0
    assert f(np.ones(2)) == 4.0
    assert f(np.ones(2, np.float32)) == 6.0  # a new trace, the same Variable
    np.testing.assert_allclose(WEIGHTS.value, [3.0, 3.0])


def returns_variable(x):
    WEIGHTS.assign(x)
    return WEIGHTS


def test_returning_a_variable_gives_its_value_after_the_run():
    np.testing.assert_allclose(transpile.function(returns_variable)(np.array([1.0, 2.0])), [1.0, 2.0])


def test_graph_is_printable():
    f = transpile.function(unrolled)
    g = f.get_graph(1.0, 3)
    assert "NextIteration" in str(g) and "digraph" in g.to_dot()


def test_bad_static_argnames_and_bad_calls():
    with pytest.raises(TypeError, match="unknown parameters"):
        transpile.function(unrolled, static_argnames=("m",))
    with pytest.raises(TypeError, match="unrolled"):
        transpile.function(unrolled)(1.0)


def test_relax_shapes_traces_once_with_unknown_dims():
    f = transpile.function(unrolled, relax_shapes=True)
    np.testing.assert_allclose(f(np.ones(3), 2), 4.0 * np.ones(3))
    np.testing.assert_allclose(f(np.ones(4), 2), 4.0 * np.ones(4))
    np.testing.assert_allclose(f(np.ones(7), 1), 2.0 * np.ones(7))
    assert f.traces == 2
    assert f.last_retrace_report == "retracing unrolled: x: float64[3] -> float64[4] (relaxed: x: float64[?])"
    assert f.get_graph(np.ones(9), 2).get_tensor("x:0").shape == (None,)
