"""Classes defined inside a converted function: their bodies are left as written (no crash in the
analyses), and their methods are converted when called, so tensor control flow in them works."""
import pytest

import transpile
from tests.transpile.helpers import assert_converted_equivalent


def class_with_tensor_loops_and_returns(x, n):
    class Acc:
        scale = 2.0

        def __init__(self, start):
            self.v = start

        def clipped(self, bound):
            if self.v > bound:
                return bound
            return self.v

        def grow(self, k):
            while k > 0:
                self.v = self.v * self.scale
                k -= 1
                if self.v > 100:
                    break
            return self.v

    a = Acc(x)
    return a.grow(n), a.clipped(50.0)


def class_using_the_enclosing_functions_variables(x, n):
    offset = n * 2

    class Shifted:
        def apply(self, v):
            if v > offset:
                return v - offset
            return v + offset

    s = Shifted()
    total = 0.0
    for i in range(n):
        total += s.apply(x * i)
    return total


def nested_classes_and_a_method_without_tensors(x, n):
    class Outer:
        class Inner:
            def twice(self, v):
                return v * 2

        def run(self, v):
            return self.Inner().twice(v) if v > 0 else -v

    return Outer().run(x), Outer.Inner().twice(3)


@pytest.mark.parametrize("fn", [class_with_tensor_loops_and_returns, class_using_the_enclosing_functions_variables,
                                nested_classes_and_a_method_without_tensors], ids=lambda f: f.__name__)
def test_local_class_converted_equals_python(fn):
    assert_converted_equivalent(fn, (1.0, 3), (4.0, 0), (60.0, 2), (-2.0, 4))


def test_class_body_is_left_as_written():
    code = transpile.to_code(class_with_tensor_loops_and_returns)
    body = code[code.index("class Acc"):code.index("a = ")]
    assert "ag." not in body and "while k > 0:" in body and "return bound" in body
