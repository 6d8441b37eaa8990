"""memory_policy in converted functions: `transpile.function(memory_policy=...)` for every graph loop of its
traces, `transpile.loop_options(memory_policy=..., checkpoint_every=...)` in a loop body for that loop alone."""
import numpy as np
import pytest

import grad
import graph
import transpile
from exec.device import SimulatedDevice


def rnn_loss(w, n):
    h = w
    i = 0
    while i < n:
        h = np.tanh(h * w + 0.5)
        j = 0
        while j < n // 2:
            transpile.loop_options(memory_policy="recompute", checkpoint_every=2)
            h = np.sin(h) * 1.2
            j += 1
        i += 1
    return np.sum(h * h)


def flat_loss(w, n):
    h = w
    i = 0
    while i < n:
        h = np.tanh(h * w + 0.5)
        i += 1
    return np.sum(h * h)


def _policies(f, *args):
    """{loop frame: (memory_policy, checkpoint_every)} of the trace of f for args (the forward loops)."""
    g = f.get_graph(*args)
    return {n.frame.frame_name: (n.frame.memory_policy, n.frame.checkpoint_every) for n in g.nodes
            if n.op == "Enter" and not n.frame.frame_name.startswith(("gradients", "recompute"))}


@pytest.mark.parametrize("mode", ["dataflow", "compiled"])
def test_the_decorators_policy_applies_to_every_loop(mode):
    def step(w, n):
        return grad.gradients(flat_loss(w, n), [w])[0]
    w = np.array([0.3, -0.2, 0.7])
    recomputed = transpile.function(step, memory_policy="recompute", checkpoint_every=3, mode=mode)
    kept = transpile.function(step, mode=mode)
    for n in (0, 1, 5, 9):
        np.testing.assert_allclose(recomputed(w, n), kept(w, n), rtol=1e-12, atol=1e-12)
    assert set(_policies(recomputed, w, 5).values()) == {("recompute", 3)}
    assert set(_policies(kept, w, 5).values()) == {("keep", 1)}


def test_loop_options_sets_the_policy_of_its_own_loop():
    def step(w, n):
        return grad.gradients(rnn_loss(w, n), [w])[0]
    w = np.array([0.3, -0.2, 0.7])
    f = transpile.function(step, mode="dataflow")
    policies = sorted(_policies(f, w, 4).values())
    assert policies == [("keep", 1), ("recompute", 2)]    # the outer loop keeps, the inner one recomputes
    eps = 1e-6
    numeric = [rnn_loss(w + eps * e, 4) - rnn_loss(w - eps * e, 4) for e in np.eye(3)]
    np.testing.assert_allclose(f(w, 4), np.array(numeric) / (2 * eps), rtol=1e-6)


@pytest.mark.parametrize("k", [1, 3])
def test_a_list_built_in_a_recomputed_loop(k):
    """A list appended to in the loop is a TensorArray written in the body: its flows are saved (references,
    no bytes), not written again."""
    def step(x, n):
        h = x
        hs = []
        for _ in range(n):
            h = np.tanh(h * 1.1 + 0.2)
            hs.append(h)
        return grad.gradients(np.sum(np.stack(hs) ** 2), [x])[0]
    x = np.linspace(-1.0, 1.0, 3)
    kept = transpile.function(step, mode="dataflow")
    for mode in ("dataflow", "compiled"):
        recomputed = transpile.function(step, mode=mode, memory_policy="recompute", checkpoint_every=k)
        for n in (0, 1, 7):
            np.testing.assert_array_equal(recomputed(x, np.int64(n)), kept(x, np.int64(n)))


def test_bad_policies_are_value_errors():
    with pytest.raises(ValueError, match="memory_policy must be one of"):
        transpile.function(flat_loss, memory_policy="fast")
    with pytest.raises(ValueError, match="checkpoint_every must be a Python int >= 1"):
        transpile.loop_options(memory_policy="recompute", checkpoint_every=0)


def test_a_training_step_trains_alike_under_each_policy():
    """An LSTM-like training step (a list of states, Variables read in the loop, SGD after it): the
    same losses, step after step, whether the loop keeps or recomputes."""
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(6, 4, 3)), rng.normal(size=(6, 4, 8)) * 0.5
    W0, U0 = rng.normal(size=(3, 32)) * 0.3, rng.normal(size=(8, 32)) * 0.3
    losses = {}
    for policy, k in (("keep", None), ("recompute", 1), ("recompute", 4)):
        W, U = graph.Variable(W0, name="W"), graph.Variable(U0, name="U")

        def train_step(X, Y, n):
            h = np.zeros((4, 8))
            c = np.zeros((4, 8))
            hs = []
            for t in range(n):
                i, f, g, o = np.split(X[t] @ W + h @ U, 4, axis=1)
                c = graph.sigmoid(f) * c + graph.sigmoid(i) * np.tanh(g)
                h = graph.sigmoid(o) * np.tanh(c)
                hs.append(h)
            loss = np.mean((np.stack(hs) - Y) ** 2)
            grad.SGD(0.5).apply(grad.gradients(loss, [W, U]), [W, U])
            return loss
        opts = {} if policy == "keep" else {"memory_policy": policy, "checkpoint_every": k}
        step = transpile.function(train_step, **opts)
        losses[policy, k] = [float(step(X, Y, np.int64(6))) for _ in range(3)]
    assert losses["keep", None][2] < losses["keep", None][0]
    for key in (("recompute", 1), ("recompute", 4)):
        np.testing.assert_allclose(losses[key], losses["keep", None], rtol=1e-12)


def _device_for(policy: str) -> dict:
    """The decorator's device option a policy needs: "swap" moves values to the host of a device whose
    memory it manages (without one the decorator refuses it)."""
    return {"device": SimulatedDevice(memory_limit=1 << 30)} if policy == "swap" else {}


@pytest.mark.parametrize("policy", ["keep", "swap", "recompute"])
def test_every_policy_is_taken_by_the_decorator_and_by_loop_options(policy):
    """Each policy without checkpoint_every, as users write it (the decorator's and loop_options' defaults)."""
    def in_body(w, n):
        h = w
        i = 0
        while i < n:
            transpile.loop_options(memory_policy=policy)
            h = np.tanh(h * w + 0.5)
            i += 1
        return grad.gradients(np.sum(h * h), [w])[0]

    def step(w, n):
        return grad.gradients(flat_loss(w, n), [w])[0]
    w = np.array([0.3, -0.2, 0.7])
    want = transpile.function(step)(w, 4)
    for f in (transpile.function(step, memory_policy=policy, **_device_for(policy)),
              transpile.function(in_body, **_device_for(policy))):
        np.testing.assert_allclose(f(w, 4), want, rtol=1e-12, atol=1e-12)
        assert set(_policies(f, w, 4).values()) == {(policy, 1)}


@pytest.mark.parametrize("policy", ["keep", "swap"])
def test_a_methods_per_instance_function_keeps_the_policy(policy):
    """A decorated method gets a Function per instance, made from the decorator's options."""
    class Model:
        @transpile.function(memory_policy=policy, **_device_for(policy))
        def step(self, w, n):
            return grad.gradients(flat_loss(w, n), [w])[0]
    w = np.array([0.3, -0.2, 0.7])
    want = transpile.function(lambda w, n: grad.gradients(flat_loss(w, n), [w])[0])(w, 4)
    np.testing.assert_allclose(Model().step(w, 4), want, rtol=1e-12, atol=1e-12)
