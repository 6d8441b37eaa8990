"""Warm calls (transpile/fast_calls.py): a call whose arguments fit the last trace runs it directly,
with the results, conversions, retraces and errors of the general path; `mode=` and `compiled_code`."""
import numpy as np
import pytest

import graph
import transpile
from exec import RunError
from transpile import fast_calls


def _counting(function):
    """Wraps the function's fast calls to count how many runs they take (not MISS)."""
    taken = []
    original = type(function).__call__

    def fast_of(fn):
        trace_fast = fn._fast

        def counted(args):
            out = trace_fast(args)
            if out is not fast_calls.MISS:
                taken.append(True)
            return out
        return counted
    return taken, original, fast_of


def _fits_its_trace(fn, *args):
    """Whether a call with `args` takes its trace's fast call (it is the last one run)."""
    trace_fast = fn._fast
    return trace_fast is not None and trace_fast(args) is not fast_calls.MISS


def test_warm_calls_give_what_the_general_path_gives():
    @transpile.function
    def step(x, w, n, scale=0.5):
        total = 0.0
        for i in range(n):
            total = total + np.sum(np.tanh(x * w + i)) * scale
        return {"total": total, "parts": (x * 2, "tag")}

    x, w = np.arange(3.0), np.ones(3)
    first = step(x, w, 4)
    assert _fits_its_trace(step, x, w, 4) and _fits_its_trace(step, x, w, 7, 0.25)
    again = step(x, w, 4)
    assert again["total"] == first["total"] and again["parts"][1] == "tag"
    np.testing.assert_array_equal(again["parts"][0], x * 2)
    want = sum(np.sum(np.tanh(x * w + i)) * 0.25 for i in range(7))
    assert step(x, w, 7, 0.25)["total"] == pytest.approx(want)
    assert step.traces == 1


def test_arguments_that_do_not_fit_take_the_general_path():
    @transpile.function(static_argnames=("k",))
    def f(x, k, obj):
        return x * k + obj.bias

    class Holder:
        bias = 1.0
    a, b = Holder(), Holder()
    x = np.ones(2, np.float32)
    f(x, 2, a)
    for args in ((np.ones(3, np.float32), 2, a),     # another shape
                 (np.ones(2, np.float64), 2, a),     # another dtype
                 (x, 3, a),                          # another static value
                 (x, 2.0, a),                        # a static of another type
                 (x, 2, b),                          # another object
                 (x.tolist(), 2, a)):                # a container
        assert not _fits_its_trace(f, *args), args
    np.testing.assert_array_equal(f(x, 3, a), x * 3 + 1)
    assert f.traces == 2 and "k: static 2 -> static 3" in f.last_retrace_report
    assert _fits_its_trace(f, x, 3, a) and not _fits_its_trace(f, x, 2, a)


def test_python_and_numpy_scalars_are_traced_apart():
    # beside a float32 array a Python float is weak (the result is float32), a numpy float64 is not
    @transpile.function
    def f(a, s):
        return a * s

    x = np.ones(2, np.float32)
    assert f(x, 1.5).dtype == np.float32
    assert _fits_its_trace(f, x, 2.5) and not _fits_its_trace(f, x, np.float64(2.5))
    assert f(x, np.float64(2.5)).dtype == np.float64 and f.traces == 2
    assert f(x, 0.5).dtype == np.float32 and f.traces == 2


def test_warm_calls_convert_python_scalars_as_the_general_path_does():
    # the compiled entry leaves out the checks the fast call's own settle (exec/compiled/entry.py, `given`),
    # not the conversion of Python scalars to the traced numpy scalars, nor the range check of an int
    @transpile.function(mode="compiled")
    def f(a, b, c, d, e):
        return a + b, c * 2, d * b, e + c

    args = (np.float64(1.5), 2.5, 7, np.arange(3.0), np.int32(4))
    f(*args)
    assert _fits_its_trace(f, *args)
    names = ("a", "b", "c", "d", "e")
    for values in (args, (np.float64(-0.0), -1e300, -3, np.ones(3), np.int32(-5))):
        warm, general = f(*values), f(**dict(zip(names, values)))  # keyword calls take the general path
        for got, want in zip(warm, general, strict=True):
            assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_array_equal(got, want)
    assert f.traces == 1
    big = (*args[:2], 2**70, *args[3:])  # a Python int past int64: the check's error, on both paths
    messages = []
    for call in (lambda: f(*big), lambda: f(**dict(zip(names, big)))):
        with pytest.raises(ValueError, match="out of the range of int64") as info:
            call()
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_methods_keyword_calls_and_variables():
    v = graph.Variable(np.zeros(2), name="v")

    class Model:
        @transpile.function
        def add(self, x):
            v.assign_add(x)
            return v

    m = Model()
    for _ in range(3):
        m.add(np.ones(2))
    m.add(x=np.ones(2))  # keyword arguments take the general path, with the same result
    np.testing.assert_array_equal(v.value, [4.0, 4.0])


def test_errors_in_warm_calls_are_the_general_paths():
    @transpile.function
    def f(x, i):
        return graph.TensorArray(np.float64, size=2).write(0, x).read(i)

    assert f(1.0, 0) == 1.0
    with pytest.raises(RunError, match="TensorArrayRead"):
        f(1.0, 5)


@pytest.mark.parametrize("mode", ["auto", "compiled", "dataflow"])
def test_mode_and_compiled_code(mode):
    def collatz(x):
        steps = 0
        while x > 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            steps += 1
        return steps

    f = transpile.function(collatz, mode=mode)
    assert f(27) == 111 == collatz(27)
    code = f.compiled_code(27)
    assert "while True:" in code and "break" in code
    with pytest.raises(ValueError, match="mode must be one of"):
        transpile.function(collatz, mode="fastest")
