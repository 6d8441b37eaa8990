"""Discounted returns of an episode computed backwards, reset at episode ends."""
import numpy as np


def discounted_returns(rewards, dones, gamma=0.99):
    returns = np.zeros_like(rewards)
    running = 0.0
    for t in reversed(range(len(rewards))):
        if dones[t]:
            running = 0.0
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


def cases():
    rng = np.random.default_rng(11)
    return [
        (rng.standard_normal(7), np.array([0, 0, 1, 0, 0, 0, 1], dtype=bool)),
        (rng.standard_normal(4), np.zeros(4, dtype=bool), 0.5),
        (np.zeros(0), np.zeros(0, dtype=bool)),     # the empty episode
    ]
