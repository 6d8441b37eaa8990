"""Softmax and log-softmax kernels, shifted by the maximum so that exp never overflows."""
from __future__ import annotations

import numpy as np

from exec.kernels.registry import kernel


@kernel("Softmax")
def _softmax(node, rt):
    axis = node.attrs["axis"]

    def softmax(x):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        e /= np.sum(e, axis=axis, keepdims=True)
        return e
    return softmax


@kernel("LogSoftmax")
def _log_softmax(node, rt):
    axis = node.attrs["axis"]

    def log_softmax(x):
        shifted = x - np.max(x, axis=axis, keepdims=True)
        shifted -= np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
        return shifted
    return log_softmax
