"""A table of programs the transpiler must reject, each with the error text and the user line it names.

The line an error must name carries the comment `# <- error`.
"""
import inspect
import linecache
import traceback

import numpy as np
import pytest

import transpile
from exec import RunError
from graph.errors import SymbolicIndexError

V = np.array([1.0, -2.0, 3.0])


def one_sided(x):
    if x > 0:
        y = x * 2
    return y  # <- error


def one_sided_with_else(x):
    if x > 0:
        y = x * 2
    else:
        z = 1  # noqa: F841
    return y  # <- error


def tensor_break_in_python_loop(x):
    s = 0.0
    for v in iter([1.0, 2.0, 3.0]):  # <- error
        s += v * x
        if s > 3:
            break
    return s


def used_after_zero_trip_loop(n):
    for i in range(n):
        y = i * 2
    return y  # <- error


def loop_structure_change(n):
    h = (0.0,)
    i = 0
    while i < n:  # <- error
        h = (h[0], 1.0)
        i += 1
    return h


def generator(x):
    yield x  # <- error


def endless_recursion(n):
    if n <= 0:
        return 0
    return endless_recursion(n - 1) + 1  # <- error


def branch_structures_differ(x):
    if x > 0:  # <- error
        h = (x, x)
    else:
        h = x
    return h


def vector_condition(x):
    if x > 0:  # <- error
        x = -x
    return x


async def coroutine(x):  # <- error
    return x


def returns_none_on_one_path(x):
    if x > 0:  # <- error
        return x


def python_unbound(x, flag):
    if flag:
        y = x
    return y  # <- error


def failing_assert(x, n):
    i = 0
    while i < n:
        assert x[i] > 0, "x must be positive"  # <- error
        i += 1
    return i


def out_of_range(x, i):
    return x[i] * 2  # <- error


def print_to_file(x):
    import sys
    print(x, file=sys.stderr)  # <- error
    return x


def bool_vs_float_branches(x):
    if x > 0:  # <- error
        r = x > 1
    else:
        r = x
    return r


LIMITS = [1.0, 2.0]


def list_indexed_by_argument(x, n):
    return LIMITS[n] * x  # <- error


def list_indexed_by_loop_variable(x, n):
    s = 0.0
    i = 0
    while i < n:
        s = s + LIMITS[i] * x  # <- error
        i += 1
    return s


def list_repeated_by_argument(n):
    return [0.0] * n  # <- error


def assert_without_message(x):
    assert x.sum() > len(LIMITS)  # <- error
    return x


CASES = [
    # (function, args, static_argnames, exception type, text that must appear); a construct that only a
    # Python number argument decides is traced with it static (tests/transpile/test_everyday_idioms.py), so
    # the programs refused for their graph conditions get numpy scalars
    (one_sided, (np.float64(1.0),), (), transpile.ConditionallyDefinedError,
     "variable 'y' is assigned in the true branch of the `if` at {file}:{def_line_plus_1} (line {def_line_plus_2}) "
     "and the `if` has no else branch"),
    (one_sided_with_else, (np.float64(1.0),), (), transpile.ConditionallyDefinedError,
     "but not in the false branch (line {def_line_plus_4})"),
    (tensor_break_in_python_loop, (1.0,), (), transpile.StagingError,
     "iterates over a list_iterator, so it runs in Python"),
    (used_after_zero_trip_loop, (0,), (), RunError, "variable 'y' is used at {file}:{line} but was never assigned"),
    (loop_structure_change, (3,), (), transpile.StagingError,
     "variable 'h' is tuple (value,) before the loop and tuple (value, value) after one iteration"),
    (generator, (1.0,), (), transpile.ConversionError, "`yield` is not supported"),
    (endless_recursion, (np.int64(3),), (), transpile.StagingError, "calls itself more than"),
    (branch_structures_differ, (np.float64(1.0),), (), transpile.StagingError,
     "variable 'h' is tuple (value, value) in the true branch (line {def_line_plus_2}) but a float64[] tensor in "
     "the false branch (line {def_line_plus_4})"),
    (vector_condition, (V,), (), transpile.StagingError, "the truth value of more than one element is ambiguous"),
    (coroutine, (1.0,), (), transpile.ConversionError, "coroutines are not supported"),
    (returns_none_on_one_path, (np.float64(1.0),), (), transpile.StagingError, "return a value on every path"),
    (python_unbound, (1.0, False), ("flag",), UnboundLocalError, "local variable 'y' is used before it is assigned"),
    (failing_assert, (V, 3), (), RunError, "x must be positive"),
    (out_of_range, (V, 7), (), RunError, "index 7 is out of bounds"),
    (print_to_file, (V,), (), transpile.StagingError, "file="),
    (bool_vs_float_branches, (np.float64(1.0),), (), transpile.StagingError, "has dtype bool in the true branch"),
    # errors name the user's argument or variable, never a graph node (`n:0`, `while/Switch_4:1`)
    (list_indexed_by_argument, (1.0, 1), (), SymbolicIndexError,
     "input 'n' (an int64[] graph tensor) cannot be used as a Python index"),
    (list_indexed_by_loop_variable, (1.0, 2), (), SymbolicIndexError,
     "loop variable 'i' of the loop at test_errors.py:{def_line_plus_3} (an int64[] graph tensor) cannot be used "
     "as a Python index"),
    (list_repeated_by_argument, (2,), (), SymbolicIndexError, "list * input 'n' (an integer graph scalar)"),
    # the message of an assert without one is its test, to the last character
    (assert_without_message, (V,), (), RunError, "assertion failed: x.sum() > len(LIMITS)\n"),
]


def _marked_line(fn) -> int:
    lines, first = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if "# <- error" in text:
            return first + i
    raise AssertionError(f"{fn.__name__} has no `# <- error` marker")


@pytest.mark.parametrize("fn,args,static,exc_type,text", CASES, ids=[c[0].__name__ for c in CASES])
def test_bad_program_is_rejected_at_the_users_line(fn, args, static, exc_type, text):
    filename = fn.__code__.co_filename
    line = _marked_line(fn)
    def_line = fn.__code__.co_firstlineno
    expected = text.format(file=filename, line=line, **{f"def_line_plus_{k}": def_line + k for k in range(6)})
    compiled = transpile.function(fn, static_argnames=static)
    with pytest.raises(exc_type) as info:
        compiled(*args)
    message = str(info.value)
    assert expected in message
    assert f"{filename}:{line}" in message or f"{filename}:{line}" in "".join(getattr(info.value, "__notes__", []))


def test_source_unavailable_is_a_conversion_error():
    namespace = {}
    exec("def hidden(x):\n    return x\n", namespace)
    with pytest.raises(transpile.ConversionError, match="source code is unavailable"):
        transpile.function(namespace["hidden"])(1.0)


def test_callee_without_source_names_itself_when_it_needs_conversion():
    namespace = {}
    exec("def hidden(x):\n    if x > 0:\n        return x\n    return -x\n", namespace)
    hidden = namespace["hidden"]

    def caller(x):
        return hidden(x)

    with pytest.raises(Exception) as info:
        transpile.function(caller)(1.0)
    assert "hidden runs unconverted" in "".join(getattr(info.value, "__notes__", []))


def test_traceback_points_at_the_users_lines():
    with pytest.raises(ZeroDivisionError) as info:
        transpile.function(_divides)(1.0)
    frames = [(f.filename, f.lineno) for f in traceback.extract_tb(info.tb)]
    assert (__file__, _marked_line(_divides)) in frames
    assert linecache.getline(__file__, _marked_line(_divides)).strip().startswith("return 1 // 0")


def _divides(x):
    if x > 0:
        x = x + 1
    return 1 // 0  # <- error
