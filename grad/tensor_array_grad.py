"""Gradients of TensorArray ops."""
from __future__ import annotations

from graph.core import make_op


def gradient_array(handle):
    """The accumulating gradient array attached to the forward array `handle`."""
    return make_op("TensorArrayGrad", [handle], {"spec": None}, name="TensorArrayGrad").outputs[0]
