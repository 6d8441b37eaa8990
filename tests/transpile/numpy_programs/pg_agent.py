"""A policy-gradient agent: a two-layer policy, discounted rewards, hand-written backprop, RMSProp."""
import numpy as np

D, H = 8, 6
gamma, decay_rate, learning_rate = 0.99, 0.99, 1e-2


def reset(seed=0):
    global model, grad_buffer, rmsprop_cache, epx
    rng = np.random.RandomState(seed)
    model = {"W1": rng.randn(H, D) / np.sqrt(D), "W2": rng.randn(H) / np.sqrt(H)}
    grad_buffer = {k: np.zeros_like(v) for k, v in model.items()}
    rmsprop_cache = {k: np.zeros_like(v) for k, v in model.items()}
    epx = np.zeros((1, D))


reset()


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def discount_rewards(r):
    discounted_r = np.zeros_like(r)
    running_add = 0
    for t in reversed(range(0, r.size)):
        if r[t] != 0:
            running_add = 0
        running_add = running_add * gamma + r[t]
        discounted_r[t] = running_add
    return discounted_r


def policy_forward(x):
    h = np.dot(model["W1"], x)
    h[h < 0] = 0
    logp = np.dot(model["W2"], h)
    p = sigmoid(logp)
    return p, h


def policy_backward(eph, epdlogp):
    dW2 = np.dot(eph.T, epdlogp).ravel()
    dh = np.outer(epdlogp, model["W2"])
    dh[eph <= 0] = 0
    dW1 = np.dot(dh.T, epx)
    return {"W1": dW1, "W2": dW2}


def rmsprop_update():
    for k, v in model.items():
        g = grad_buffer[k]
        rmsprop_cache[k] = decay_rate * rmsprop_cache[k] + (1 - decay_rate) * g ** 2
        model[k] += learning_rate * g / (np.sqrt(rmsprop_cache[k]) + 1e-5)
        grad_buffer[k] = np.zeros_like(v)


def observation(rng):
    return rng.randn(D)
