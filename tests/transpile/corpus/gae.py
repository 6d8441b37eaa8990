"""Generalized advantage estimation as in CleanRL's PPO: a backwards loop over the steps of a batch of
environments, the last step bootstrapped from the next value, a chained assignment
`advantages[t] = lastgaelam = ...`."""
import numpy as np


def compute_gae(rewards, values, dones, next_value, next_done, gamma=0.99, gae_lambda=0.95):
    num_steps = len(rewards)
    advantages = np.zeros_like(rewards)
    lastgaelam = 0
    for t in reversed(range(num_steps)):
        if t == num_steps - 1:
            nextnonterminal = 1.0 - next_done
            nextvalues = next_value
        else:
            nextnonterminal = 1.0 - dones[t + 1]
            nextvalues = values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
    returns = advantages + values
    return advantages, returns


def cases():
    rng = np.random.default_rng(12)
    T, n_envs = 5, 2
    dones = (rng.random((T, n_envs)) < 0.3).astype(np.float64)
    return [
        (rng.standard_normal((T, n_envs)), rng.standard_normal((T, n_envs)), dones,
         rng.standard_normal(n_envs), np.array([0.0, 1.0])),
        (rng.standard_normal((1, n_envs)), rng.standard_normal((1, n_envs)), np.zeros((1, n_envs)),
         rng.standard_normal(n_envs), np.zeros(n_envs), 0.9, 1.0),
        (np.zeros((0, n_envs)), np.zeros((0, n_envs)), np.zeros((0, n_envs)), np.zeros(n_envs), np.zeros(n_envs)),
    ]
