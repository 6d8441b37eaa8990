"""memory_policy in converted functions: `transpile.function(memory_policy=...)` for every graph loop of its
traces, `transpile.loop_options(memory_policy=..., checkpoint_every=...)` in a loop body for that loop alone."""
import numpy as np
import pytest

import grad
import transpile


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
