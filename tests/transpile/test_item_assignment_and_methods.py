"""Item assignment to names the function does not bind (globals, closures, Variables), and methods
whose Variables belong to their instance."""
import inspect

import numpy as np
import pytest

import grad
import graph
import transpile

BUFFER = graph.Variable(np.zeros((4, 2)), name="transpile_test_ring")
COUNT = graph.Variable(0, name="transpile_test_ring_count")
CALLS = []


def store(x):
    BUFFER[COUNT % 4] = x          # a global Variable: assigns the item, like buffer.assign_at(i, x)
    COUNT.assign_add(1)
    CALLS.append(1)                # a global list: appended to at every call, as in Python
    return BUFFER[0]


def test_item_assignment_to_a_global_variable_assigns_its_item():
    BUFFER.reset()
    COUNT.reset()
    f = transpile.function(store)
    for k in range(6):
        f(np.full(2, float(k)))
    np.testing.assert_array_equal(BUFFER.value, [[4, 4], [5, 5], [2, 2], [3, 3]])
    # each call finds CALLS one longer than the trace it ran assumed, so it is traced again
    assert COUNT.value == 6 and CALLS == [1] * 6
    assert "ag.set_item(BUFFER, COUNT % 4, x, in_place='BUFFER')" in transpile.to_code(store)


class Ring:
    def __init__(self):
        self.slots = graph.Variable(np.zeros(3), name="transpile_test_ring_attr")

    @transpile.function
    def put(self, i, x):
        if x > 0:                  # in a branch too
            self.slots[i] = x
        return self.slots.read()


def test_item_assignment_to_a_variable_attribute_in_a_branch():
    r = Ring()
    r.put(1, 2.0)
    r.put(2, -1.0)
    np.testing.assert_array_equal(r.put(0, 5.0), [5.0, 2.0, 0.0])


def closure_array_write(x):
    y = x * 2

    def change():
        y[0] = 1.0

    change()
    return y


def test_item_assignment_to_a_closure_array_changes_it_as_in_python():
    np.testing.assert_array_equal(transpile.function(closure_array_write)(np.ones(3)), [1.0, 2.0, 2.0])


def closure_tensor_write(x):
    y = graph.identity(x * 2)      # a graph tensor, which no write can change

    def change():
        y[0] = 1.0                 # <- error

    change()
    return y


def test_item_assignment_to_a_closure_tensor_names_it_and_the_line():
    with pytest.raises(transpile.StagingError) as info:
        transpile.function(closure_tensor_write)(np.ones(3))
    lines, first = inspect.getsourcelines(closure_tensor_write)
    line = first + next(i for i, t in enumerate(lines) if "# <- error" in t)
    message = str(info.value)
    assert f"{__file__}:{line}" in message
    assert "`y[...] = ...` cannot change graph tensor 'y'" in message


def closure_list_write(x):
    out = [0.0, 0.0]

    def fill():
        out[1] = x                 # a Python list in the enclosing function: changed in place

    fill()
    return out[1] * 3


def test_item_assignment_to_a_closure_list_changes_it_in_place():
    assert transpile.function(closure_list_write)(2.0) == 6.0


class Model:
    """Creates its Variables (weights, optimizer slots) on the first call of a converted method."""

    def __init__(self, size):
        self.size = size
        self.w = None
        self.optimizer = grad.Adam(0.1)

    @transpile.function
    def train(self, x):
        if self.w is None:
            self.w = graph.Variable(np.zeros(self.size), name="transpile_test_model_w")
        loss = np.sum((self.w - x) ** 2)
        self.optimizer.apply(grad.gradients(loss, [self.w]), [self.w])
        return loss


def test_variables_created_in_a_method_belong_to_its_instance():
    a, b = Model(3), Model(5)
    a.train(np.ones(3))
    b.train(np.ones(5))            # its own weights and Adam slots, of its own shape
    b.train(np.ones(5))
    a.train(np.ones(3))
    assert a.w is not b.w and a.w.shape == (3,) and b.w.shape == (5,)
    np.testing.assert_allclose(a.w.value, b.w.value[:3])
    # the first call assigns self.w: the second finds it set, a different state, and is traced once more
    assert a.train.traces == 2 and b.train.traces == 2
