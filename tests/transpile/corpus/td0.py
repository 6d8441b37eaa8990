"""Tabular TD(0) policy evaluation over logged transitions: `V[s] += alpha * (target - V[s])` at a state
read from the data, the TD errors collected in a list; and the version that updates the caller's table."""
import numpy as np


def td0(V, states, rewards, next_states, dones, alpha=0.1, gamma=0.9, sweeps=1):
    V = V.copy()
    errors = []
    for sweep in range(sweeps):
        for s, r, s2, done in zip(states, rewards, next_states, dones):
            target = r if done else r + gamma * V[s2]
            delta = target - V[s]
            V[s] += alpha * delta
            errors.append(abs(delta))
    return V, np.mean(errors) if errors else 0.0


def td0_in_place(V, states, rewards, next_states, dones, alpha=0.1, gamma=0.9):
    """Updates the table it is given, as tabular RL code usually does; returns nothing."""
    for s, r, s2, done in zip(states, rewards, next_states, dones):
        target = r if done else r + gamma * V[s2]
        V[s] += alpha * (target - V[s])


def cases():
    rng = np.random.default_rng(13)
    n_states, N = 4, 9
    states = rng.integers(0, n_states, N)
    next_states = rng.integers(0, n_states, N)
    dones = rng.random(N) < 0.2
    return [
        (np.zeros(n_states), states, rng.standard_normal(N), next_states, dones),
        (rng.standard_normal(n_states), states, rng.standard_normal(N), next_states, dones, 0.5, 0.99, 3),
        (np.zeros(n_states), states, rng.standard_normal(N), next_states, dones, 0.1, 0.9, 0),   # no sweep
        (np.ones(n_states), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64),
         np.zeros(0, dtype=bool)),                                                             # no data
    ]
