"""Loops that never end: `maximum_iterations` (a decorator option, or `transpile.loop_options` in a loop's
body) turns one into an error naming the user's loop; Ctrl-C stops a run with a message naming the loop and
its iteration, and Variables keep whole values."""
import inspect
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import grad
import transpile
from exec import IterationLimitExceeded, RunError


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def nested(n, m):
    total = 0
    while n > 0:
        transpile.loop_options(maximum_iterations=3)
        j = 0
        while j < m:
            j += 1
        total += j
        n -= 1
    return total


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("mode", ["dataflow", "compiled"])
def test_maximum_iterations_is_an_error_naming_the_users_loop(mode):
    f = transpile.function(collatz_steps, maximum_iterations=20, mode=mode)
    assert f(6) == collatz_steps(6) == 8
    with pytest.raises(RunError) as info:
        f(27)   # 111 steps
    assert isinstance(info.value.cause, IterationLimitExceeded)
    line = _line_of(collatz_steps, "while n != 1")
    assert f"the while loop at {__file__}:{line} (frame while) ran 20 iterations" in str(info.value)
    assert transpile.function(collatz_steps, mode=mode)(27) == collatz_steps(27) == 111


def test_loop_options_limits_its_own_loop_and_overrides_the_decorator():
    f = transpile.function(nested, maximum_iterations=5)
    assert f(3, 5) == nested(3, 5) == 15
    with pytest.raises(RunError, match=f"while loop at {__file__}:{_line_of(nested, 'while n > 0')} .* ran 3 "):
        f(4, 1)                 # the outer loop's own limit, 3
    with pytest.raises(RunError, match=f"while loop at {__file__}:{_line_of(nested, 'while j < m')} .* ran 5 "):
        f(1, 6)                 # the inner loop has the decorator's, 5
    assert transpile.function(nested)(1, 6) == 6   # the inner loop has none without the decorator's


def test_loop_options_is_ignored_by_python_loops_and_plain_python():
    def python_loop(x):
        for k in range(10):     # a Python loop (static range): unrolled, nothing to limit
            transpile.loop_options(maximum_iterations=2)
            x = x + k
        return x
    assert transpile.function(python_loop)(1.0) == python_loop(1.0) == 46.0
    with pytest.raises(ValueError, match="maximum_iterations must be an int >= 0"):
        transpile.loop_options(maximum_iterations=-1)
    with pytest.raises(ValueError, match="maximum_iterations must be an int >= 0"):
        transpile.function(python_loop, maximum_iterations=1.5)


def test_a_limited_loop_differentiates_as_without_the_limit():
    def loss(w, n):
        h = w
        i = 0
        while i < n:
            h = np.tanh(h * 1.5)
            i += 1
        return np.sum(h * h)

    def step(w, n):
        return grad.gradients(loss(w, n), [w])[0]
    w = np.array([0.3, -0.2])
    limited, free = transpile.function(step, maximum_iterations=10), transpile.function(step)
    np.testing.assert_allclose(limited(w, 4), free(w, 4))
    with pytest.raises(RunError, match="ran 10 iterations"):
        limited(w, 11)


SCRIPT = '''
import sys
import numpy as np
import graph
import transpile
from exec import RunInterrupted

counter = graph.Variable(np.zeros(3), name="counter")


@transpile.function(mode=sys.argv[1])
def spin(n):
    i = 0
    while i < n:
        counter.assign_add(np.ones(3))
        i += 1
    return i


spin(2)                          # traced and run once before the endless call
print("ready", flush=True)
try:
    spin(2 ** 62)
except RunInterrupted as e:
    value = counter.value
    print("interrupted:", e, flush=True)
    print("whole:", bool(np.all(value == value[0]) and value[0] >= 3), flush=True)
    print("again:", spin(3), counter.value[0] - value[0], flush=True)
    raise
'''


@pytest.mark.parametrize("mode", ["dataflow", "compiled"])
def test_sigint_stops_a_converted_endless_loop_naming_it(tmp_path, mode):
    script = tmp_path / "spin.py"
    script.write_text(textwrap.dedent(SCRIPT))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=root, env={**os.environ, "PYTHONPATH": root})
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    loop_line = SCRIPT.splitlines().index("    while i < n:") + 1
    assert "in iteration " in out and f"of the while loop at {script}:{loop_line}" in out, (out, err)
    assert "whole: True" in out and "again: 3 3.0" in out, out
    assert "RunInterrupted" in err and proc.returncode != 0


@transpile.function(maximum_iterations=50)
def count_down(n):
    s = 0
    while n > 0:
        n -= 1
        s += 1
    return s


class Counter:
    @transpile.function(maximum_iterations=50)
    def count(self, n):
        return count_down.python_function(n)


def calls_count_down(n, m):
    k = 0
    while k < m:   # the caller's own loop keeps the caller's limit
        k += 1
    return count_down(n) + Counter().count(n) + k


def test_a_nested_transpile_function_keeps_its_own_maximum_iterations():
    strict = transpile.function(calls_count_down, maximum_iterations=3)
    assert strict(10, 2) == 22              # count_down's loops run 10 iterations: their limit is 50
    with pytest.raises(RunError, match=f"{_line_of(calls_count_down, 'while k < m')} .* ran 3 iterations"):
        strict(10, 5)
    unlimited = transpile.function(calls_count_down)
    with pytest.raises(RunError, match=f"{_line_of(count_down, 'while n > 0')} .* ran 50 iterations"):
        unlimited(60, 1)
