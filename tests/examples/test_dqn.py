"""Smoke tests of examples/dqn.py: tiny sizes, a few steps."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import dqn  # noqa: E402

import transpile  # noqa: E402

TINY = dqn.Config(hidden=(8,), memory_size=16, batch_size=4, learn_start=8, train_every=3, target_every=5,
                  epsilon_decay_steps=20)
STEPS = 30


def transitions(n, seed=0):
    """(obs, action, reward, next_obs, terminated, new_obs) as an environment loop hands them to the agent."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        obs, next_obs = rng.standard_normal((2, dqn.OBSERVATION_SIZE)).astype(np.float32)
        terminated = bool(rng.random() < 0.2)
        new_obs = rng.standard_normal(dqn.OBSERVATION_SIZE).astype(np.float32) if terminated else next_obs
        out.append((obs, int(rng.integers(2)), np.float32(1.0), next_obs, terminated, new_obs))
    return out


def due_counts(t, c=TINY):
    """Learning steps and target copies the algorithm has taken after t interactions."""
    train = sum(1 for k in range(1, t + 1) if min(k, c.memory_size) >= c.learn_start and k % c.train_every == 0)
    return train, t // c.target_every


def run_agent(in_graph: bool):
    agent = dqn.Agent(TINY, seed=0)
    step = agent.step if in_graph else dqn.PythonDecisions(agent, seed=0).step
    for t, tr in enumerate(transitions(STEPS), 1):
        action = step(*tr)
        assert int(action) in (0, 1)
        assert (int(agent.train_steps.value), int(agent.target_copies.value)) == due_counts(t), f"after step {t}"
    return agent


@pytest.mark.parametrize("in_graph", [True, False], ids=["in_graph", "out_of_graph"])
def test_learning_steps_and_target_copies_happen_exactly_when_due(in_graph):
    agent = run_agent(in_graph)
    memory = agent.memory
    assert int(memory.stored.value) == STEPS and int(agent.steps.value) == STEPS
    data = transitions(STEPS)
    for t in range(STEPS - TINY.memory_size, STEPS):  # the ring buffer holds the last 16 transitions
        obs, action, reward, next_obs, terminated, _ = data[t]
        slot = t % TINY.memory_size
        np.testing.assert_array_equal(memory.obs.value[slot], obs)
        np.testing.assert_array_equal(memory.next_obs.value[slot], next_obs)
        assert memory.action.value[slot] == action and memory.terminated.value[slot] == terminated
    # step 30 copied the network to the target network
    for target, q in zip(agent.target_net.params, agent.q_net.params):
        np.testing.assert_array_equal(target.value, q.value)


def test_in_graph_and_out_of_graph_agents_learn_the_same_weights():
    # same transitions, same minibatches (the sampling op has the same seed in both graphs)
    a, b = run_agent(True), run_agent(False)
    for p, q in zip(a.q_net.params, b.q_net.params):
        np.testing.assert_allclose(p.value, q.value, rtol=1e-5, atol=1e-6)


def test_a_q_learning_step_reduces_the_td_loss_on_a_fixed_batch():
    agent = dqn.Agent(dqn.Config(hidden=(16,), learning_rate=1e-2), seed=1)
    rng = np.random.default_rng(3)
    n = 32
    batch = (rng.standard_normal((n, 4)).astype(np.float32), rng.integers(0, 2, n),
             np.ones(n, np.float32), rng.standard_normal((n, 4)).astype(np.float32),
             (rng.random(n) < 0.3).astype(np.float32))
    td_loss = transpile.function(dqn.Agent.td_loss)
    before = float(td_loss(agent, *batch))
    returned = float(agent.learn_from(*batch))
    after = float(td_loss(agent, *batch))
    assert returned == pytest.approx(before, rel=1e-6)
    assert after < before
    assert int(agent.train_steps.value) == 1


def test_cartpole_driver_runs_and_saves(tmp_path, capsys):
    path = str(tmp_path / "q.npz")
    dqn.main(["--steps", "40", "--no-progress", "--eval-episodes", "1", "--save", path])
    out = capsys.readouterr().out
    assert "40 steps" in out and "greedy policy" in out
    agent = dqn.Agent(dqn.Config(), seed=5)
    dqn.load(agent, path)
    with np.load(path) as saved:
        np.testing.assert_array_equal(agent.q_net.params[0].value, saved["arr_0"])
        np.testing.assert_array_equal(agent.target_net.params[0].value, saved["arr_0"])


def test_show_code_prints_the_converted_step(capsys):
    dqn.main(["--show-code"])
    code = capsys.readouterr().out
    assert code.startswith("def step(self") and "ag.if_stmt" in code
