"""Rejection sampling from the Beta(2, 2) density 6 x (1 - x) with a uniform proposal under the envelope M:
draw until n samples are accepted, counting the trials; and the same over proposals drawn beforehand."""
import numpy as np


def target_density(x):
    return 6.0 * x * (1.0 - x)


def rejection_sample(n, M=1.5):
    samples = []
    trials = 0
    while len(samples) < n:
        x = np.random.uniform(0, 1)
        u = np.random.uniform(0, M)
        trials += 1
        if u <= target_density(x):
            samples.append(x)
    return np.array(samples), trials


def rejection_sample_from(proposals, uniforms, M=1.5):
    samples = []
    for x, u in zip(proposals, uniforms):
        if u * M <= target_density(x):
            samples.append(x)
    return np.array(samples), len(samples) / max(len(proposals), 1)


def cases():
    """Arguments of `rejection_sample_from`."""
    rng = np.random.default_rng(7)
    return [
        (rng.random(12), rng.random(12)),
        (rng.random(5), rng.random(5), 3.0),
        (np.zeros(0), np.zeros(0)),        # nothing drawn
    ]
