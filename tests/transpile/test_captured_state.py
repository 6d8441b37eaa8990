"""numpy state outside a transpile.function's arguments (globals, closures, objects): read at each call,
written as in Python, retraced when what the trace assumed changes. Each test runs the plain function
and the converted one over several calls, changing the state between calls as a program would."""
import inspect

import numpy as np
import pytest

import transpile

W = np.zeros(3)
MEMORY = np.zeros(3)
MODEL = {}
SCALE = 2.0
EPISODE = np.zeros((2, 3))


def predict(x):
    return W @ x                   # a global array


def adagrad_step(grad):
    global_arrays = [W, MEMORY]    # aliases of the globals
    mem = global_arrays[1]
    mem += grad * grad             # in place: the global changes, as in Python
    W[...] = W - 0.1 * grad / np.sqrt(mem + 1e-8)
    return W.sum()


def reset():
    W[:] = [1.0, 2.0, 3.0]
    MEMORY[:] = 0.0


def run_calls(fn, calls, between=None):
    """The results of `fn` over successive calls (with `between(k)` run after call k), copied."""
    out = []
    for k, args in enumerate(calls):
        result = fn(*args)
        out.append(np.array(result, copy=True))
        if between is not None:
            between(k)
    return out


def assert_same_calls(plain, converted, calls, between=None, before=None):
    if before:
        before()
    want = run_calls(plain, calls, between)
    if before:
        before()
    got = run_calls(converted, calls, between)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, err_msg=f"call {k}")


def test_a_global_array_updated_in_place_between_calls_is_read_at_each_call():
    x = np.array([1.0, 0.5, -1.0])

    def train(k):
        W[:] += 0.5 * (k + 1)      # the numpy training loop, between calls

    f = transpile.function(predict)
    assert_same_calls(predict, f, [(x,)] * 4, train, reset)
    assert f.traces == 1


def test_a_global_array_rebound_between_calls_is_seen():
    global EPISODE
    frames = [np.full((2, 3), float(k)) for k in range(3)]

    def episode_sum(scale):
        return EPISODE.sum() * scale

    def next_episode(k):
        global EPISODE
        EPISODE = np.vstack([frames[k], frames[k]])  # a new array each episode, of a new shape

    f = transpile.function(episode_sum)
    EPISODE = np.zeros((2, 3))
    want = run_calls(episode_sum, [(1.0,)] * 3, next_episode)
    EPISODE = np.zeros((2, 3))
    got = run_calls(f, [(1.0,)] * 3, next_episode)
    np.testing.assert_allclose(got, want)
    assert "global 'EPISODE': float64[2,3] -> float64[4,3]" in f.last_retrace_report


def test_writes_to_global_arrays_happen_at_each_call_through_any_alias():
    f = transpile.function(adagrad_step)
    grads = [(np.array([0.1, -0.2, 0.3]) * (k + 1),) for k in range(4)]
    reset()
    want = run_calls(adagrad_step, grads)
    want_state = W.copy(), MEMORY.copy()
    reset()
    w_before = W
    got = run_calls(f, grads)
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(W, want_state[0])
    np.testing.assert_allclose(MEMORY, want_state[1])
    assert W is w_before and f.traces == 1    # the same array, written in place


def test_a_closure_array_and_a_dict_of_arrays():
    weights = np.ones((2, 2))

    def forward(x):
        h = np.maximum(MODEL["W1"] @ x, 0)
        return weights @ h + MODEL["b"]

    f = transpile.function(forward)
    x = np.array([1.0, -1.0])

    def before():
        weights[:] = 1.0
        MODEL.clear()
        MODEL.update(W1=np.eye(2), b=np.zeros(2))

    def update(k):
        weights[0, 0] += 1.0               # the closure's array, in place
        MODEL["W1"] = MODEL["W1"] * 2      # the dict's item, rebound
        MODEL["b"] += 1.0

    assert_same_calls(forward, f, [(x,)] * 4, update, before)


class Layer:
    def __init__(self, n):
        self.W = np.eye(n)
        self.b = np.zeros(n)
        self.calls = 0
        self.last = None

    def forward(self, x):
        y = self.W @ x + self.b
        self.last = y                      # an attribute assigned a graph value
        return y

    def step(self, grad, lr):
        self.W -= lr * np.outer(grad, grad)  # in place, through the attribute
        self.b = self.b - lr * grad          # rebound to a new array
        return self.b


def test_object_attributes_are_read_and_assigned_as_in_python():
    plain, converted = Layer(2), Layer(2)
    forward = transpile.function(converted.forward)
    step = transpile.function(converted.step)
    for k in range(3):
        x = np.array([1.0, 2.0]) * (k + 1)
        np.testing.assert_allclose(forward(x), plain.forward(x))
        assert isinstance(converted.last, np.ndarray)      # a value after the call, not a graph tensor
        np.testing.assert_allclose(converted.last, plain.last)
        np.testing.assert_allclose(step(x, 0.01), plain.step(x, 0.01))
        np.testing.assert_allclose(converted.W, plain.W)
        np.testing.assert_allclose(converted.b, plain.b)


def test_a_method_decorated_in_its_class_reads_its_instance():
    class Scaler:
        def __init__(self):
            self.factor = np.array([1.0, 2.0])

        @transpile.function
        def __call__(self, x):
            return self.factor * x

    s = Scaler()
    x = np.ones(2)
    np.testing.assert_allclose(s(x), [1.0, 2.0])
    s.factor *= 3                          # in place
    np.testing.assert_allclose(s(x), [3.0, 6.0])
    s.factor = np.array([5.0, 5.0])        # rebound
    np.testing.assert_allclose(s(x), [5.0, 5.0])


def test_a_python_number_in_state_is_assumed_and_once_it_changes_is_an_input():
    global SCALE

    def scaled(x):
        return x * SCALE

    f = transpile.function(scaled)
    SCALE = 2.0
    assert f(1.5) == 3.0
    SCALE = 3.0
    assert f(1.5) == 4.5
    assert f.last_retrace_report.endswith(".scaled: global 'SCALE': 2.0 -> 3.0 (from now on a graph input)")
    SCALE = 4.0
    assert f(1.5) == 6.0 and f.traces == 2


def test_relax_shapes_relaxes_a_captured_array():
    global EPISODE

    def total(scale):
        return EPISODE.sum() * scale

    f = transpile.function(total, relax_shapes=True)
    for n in (2, 3, 4, 5):
        EPISODE = np.ones((n, 3))
        assert f(1.0) == 3.0 * n
    assert f.traces == 2


def test_a_rebound_global_function_retraces():
    def call_helper(x):
        return helper(x)

    f = transpile.function(call_helper)
    assert f(2.0) == 4.0
    globals()["helper"] = lambda x: x * 10
    try:
        assert f(2.0) == 20.0
    finally:
        globals()["helper"] = _double


def _double(x):
    return x * 2


helper = _double


def test_the_state_is_restored_when_tracing_fails():
    def broken(x):
        if (W @ x).shape == ():    # W was read (a stand-in while tracing) when the trace fails
            raise ValueError("no")
        return x

    reset()
    before = W
    with pytest.raises(ValueError):
        transpile.function(broken)(np.ones(3))
    assert W is before and isinstance(W, np.ndarray)


class Log:
    def __init__(self):
        self.items = []
        self.last = None

    def add(self, v):
        self.items.append(v)

    def note(self, v):
        self.last = v


LOG = Log()


def log_in_a_graph_loop(x, n):
    for i in range(n):             # a graph loop: one trace of the body stands for every iteration
        LOG.add(x * i)             # <- error
    return x


def note_in_a_graph_branch(x):
    if x > 0:
        LOG.note(x * 2)            # <- error
    return x


def test_a_value_of_a_graph_loop_left_in_a_list_through_a_call_is_refused_at_its_line():
    with pytest.raises(transpile.StagingError) as info:
        transpile.function(log_in_a_graph_loop)(1.0, 3)
    lines, first = inspect.getsourcelines(log_in_a_graph_loop)
    line = first + next(i for i, t in enumerate(lines) if "# <- error" in t)
    assert f"{__file__}:{line}: LOG.items[0] is left holding a value computed in the while loop" in str(info.value)
    assert LOG.items == []                        # the state is as it was


def test_an_attribute_a_graph_branch_assigns_through_a_call_is_carried_by_the_cond():
    f = transpile.function(note_in_a_graph_branch)
    LOG.last = None
    with pytest.raises(transpile.StagingError, match="attribute 'last' of a Log object .* is None there"):
        f(np.float64(1.0))  # (a Python float would be traced static instead: Python would set it)
    assert LOG.last is None
    LOG.last = 0.0
    f(3.0)
    assert LOG.last == 6.0
    f(-1.0)
    assert LOG.last == 6.0                        # the untaken branch leaves it


def test_an_attribute_assigned_in_a_graph_branch_of_the_function_itself():
    def remember(x):
        if x > 0:
            LOG.last = x * 2       # the if carries LOG.last: after the call it holds the run's value
        return x

    f = transpile.function(remember)
    LOG.last = 0.0
    f(3.0)
    assert LOG.last == 6.0
    f(-1.0)
    assert LOG.last == 6.0
    f(2.0)
    assert LOG.last == 4.0
    f(5.0)
    # the second call found LOG.last changed (by the first): from then on it is a graph input
    assert LOG.last == 10.0 and f.traces == 2


_SCALES = np.array([1.0, 2.0, 3.0])


def _scaled_sum(v):
    return (_SCALES * v).sum()


def _counted_under_a_tensor_if(x, n):
    s = 0
    i = 0
    while i < n:
        if x > 0:
            s = s + _scaled_sum(x)  # a float into the int `s`: the loop is built again
        i += 1
    return s


def test_a_global_first_read_inside_a_cond_that_is_built_again_is_read_at_each_call():
    """The global's placeholder made in the first attempt is rolled back with it; the next attempt
    captures the global again instead of reading a placeholder no longer in the graph."""
    f = transpile.function(_counted_under_a_tensor_if)
    assert f(np.float64(1.0), 2) == _counted_under_a_tensor_if(np.float64(1.0), 2) == 12.0
    old = _SCALES.copy()
    try:
        _SCALES[0] = 10.0
        assert f(np.float64(1.0), 2) == _counted_under_a_tensor_if(np.float64(1.0), 2) == 30.0
        assert f.traces == 1 and type(_SCALES) is np.ndarray
    finally:
        _SCALES[:] = old
