"""Optimizers that build update ops on Variables: SGD, Momentum, Adam; and clip_by_global_norm.

`opt.apply(grads, params)` builds one update per (gradient, Variable) pair and
returns a NoOp that runs them all; `opt.minimize(loss, params)` differentiates
first. Updates are ordered effects, so they run after the reads that computed
the loss, in program order: in a training step `loss = ...; grads =
grad.gradients(loss, params); opt.apply(grads, params)` each run trains once.
An optimizer's own state (velocities, moments, the step count) lives in
Variables it creates on first use, so it persists across runs and graphs.
"""
from __future__ import annotations

import inspect

import numpy as np

from grad.gradients import gradients
from graph.ops import math as m
from graph.ops.basic import group
from graph.ops.conversion import convert
from graph.ops.reduce import reduce_sum
from graph.ops.variables import Variable


def _pairs(grads, params) -> list[tuple[object, Variable]]:
    grads, params = list(grads), list(params)
    if len(grads) != len(params):
        raise ValueError(f"apply got {len(grads)} gradients for {len(params)} parameters")
    for p in params:
        if not getattr(p, "is_variable", False):
            raise TypeError(f"optimizers update Variables; got {type(p).__name__} {p!r}")
    return [(g, p) for g, p in zip(grads, params, strict=True) if g is not None]


class Optimizer:
    """Base class: subclasses define `_update(grad, param) -> tensor or node`."""

    def __init__(self, learning_rate):
        self.learning_rate = learning_rate
        self._slots: dict[tuple[int, str], Variable] = {}

    def apply(self, grads, params, name: str | None = None):
        """Updates each Variable in `params` with its gradient (None gradients are skipped)."""
        updates = [self._update(convert(g), p) for g, p in _pairs(grads, params)]
        return group(*updates, name=name or type(self).__name__)

    apply_gradients = apply

    def minimize(self, loss, params, name: str | None = None):
        return self.apply(gradients(loss, list(params)), params, name=name)

    def slot(self, param: Variable, what: str, scalar: bool = False) -> Variable:
        """This optimizer's per-parameter state `what`: zeros shaped like the parameter (or a scalar)."""
        key = (id(param), what)
        v = self._slots.get(key)
        if v is None:
            v = Variable(np.zeros(() if scalar else param.shape, dtype=param.dtype), name=f"{param.name}/{what}",
                         trainable=False)
            self._slots[key] = v
        return v

    def __repr__(self) -> str:
        # the constructor's arguments as this optimizer holds them: `Adam(learning_rate=0.001, beta1=0.9, ...)`
        names = list(inspect.signature(type(self).__init__).parameters)[1:]
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names if hasattr(self, n))})"

    def _lr(self, param):
        lr = self.learning_rate
        return lr if not callable(lr) else lr()

    def _update(self, grad, param):
        raise NotImplementedError


class SGD(Optimizer):
    """`p -= lr * g`."""

    def __init__(self, learning_rate=0.01):
        super().__init__(learning_rate)

    def _update(self, grad, param):
        return param.assign_sub(m.mul(grad, self._lr(param)))


class Momentum(Optimizer):
    """`v = momentum * v + g; p -= lr * v` (Nesterov: `p -= lr * (g + momentum * v)`)."""

    def __init__(self, learning_rate=0.01, momentum=0.9, nesterov: bool = False):
        super().__init__(learning_rate)
        self.momentum = momentum
        self.nesterov = nesterov

    def _update(self, grad, param):
        v = self.slot(param, "momentum")
        v_new = v.assign(m.add(m.mul(v.read(), self.momentum), grad))
        step = m.add(grad, m.mul(v_new, self.momentum)) if self.nesterov else v_new
        return param.assign_sub(m.mul(step, self._lr(param)))


class Adam(Optimizer):
    """Adam (Kingma & Ba): bias-corrected moment estimates, per-parameter step sizes."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8):
        super().__init__(learning_rate)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon

    def _update(self, grad, param):
        b1, b2 = self.beta1, self.beta2
        t = self.slot(param, "adam_step", scalar=True).assign_add(1.0)
        mu = self.slot(param, "adam_m").assign(m.add(m.mul(self.slot(param, "adam_m").read(), b1),
                                                      m.mul(grad, 1.0 - b1)))
        nu = self.slot(param, "adam_v").assign(m.add(m.mul(self.slot(param, "adam_v").read(), b2),
                                                      m.mul(m.square(grad), 1.0 - b2)))
        # bias corrections: the moments start at zero
        correction = m.truediv(m.sqrt(m.sub(1.0, m.pow(b2, t))), m.sub(1.0, m.pow(b1, t)))
        step = m.truediv(m.mul(mu, correction), m.add(m.sqrt(nu), self.epsilon))
        return param.assign_sub(m.mul(step, self._lr(param)))


def global_norm(tensors) -> object:
    """`sqrt(sum of squares of all elements of all tensors)` (None entries are skipped)."""
    parts = [reduce_sum(m.square(convert(t))) for t in tensors if t is not None]
    if not parts:
        raise ValueError("global_norm needs at least one tensor")
    total = parts[0]
    for p in parts[1:]:
        total = m.add(total, m.cast(p, total.dtype))
    return m.sqrt(total)


def clip_by_global_norm(tensors, clip_norm, use_norm=None):
    """Scales all tensors by `clip_norm / max(global_norm, clip_norm)`; returns (clipped, global_norm).

    When the global norm is at most `clip_norm` the tensors are unchanged.
    """
    tensors = list(tensors)
    norm = use_norm if use_norm is not None else global_norm(tensors)
    limit = m.cast(convert(clip_norm, like=norm), norm.dtype)
    scale = m.truediv(limit, m.maximum(norm, limit))
    clipped = [None if t is None else m.mul(convert(t), m.cast(scale, convert(t).dtype)) for t in tensors]
    return clipped, norm


__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "clip_by_global_norm", "global_norm"]
