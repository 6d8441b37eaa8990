"""Send and Recv: the two halves of a cross-device edge, as `dist.partition` cuts it.

- Send(x)[tensor_name, send_device, recv_device]: hands x (or a dead token, when x is
  dead) to the rendezvous under a key built at run time from its attrs and the tag of the
  iteration it runs in (exec/rendezvous.py: `rendezvous_key`). It has no outputs.
- Recv()[tensor_name, send_device, recv_device, dtype, shape]: the value the matching Send
  sent in the same iteration. It has no data inputs; inside a loop it gets a control input
  from its partition's copy of the loop's control structure, which fires it once per iteration.

A cut control edge is a Send of a dummy value (`CONTROL_DUMMY`) whose Recv becomes the
control input of the destination: the executor waits on it as on any other input.

Both are stateful (never deduplicated or folded) and not differentiable: gradients are
taken on the unpartitioned graph, which is partitioned afterwards.
"""
from __future__ import annotations

import numpy as np

from graph import shapes as _sh
from graph.core import make_op
from graph.node import Node, Tensor
from graph.op_registry import register_op

# The tensor name of a Send/Recv pair that carries a control edge (no value, only "it ran" or dead).
CONTROL_DUMMY = "^"

register_op("Send", lambda inputs, attrs: [], stateful=True, differentiable=False)
register_op("Recv", lambda inputs, attrs: [(attrs["dtype"], attrs["shape"])], stateful=True, differentiable=False)


def send(x: Tensor, tensor_name: str, send_device: str, recv_device: str, name: str | None = None,
         control_inputs=()) -> Node:
    """A Send of `x` to `recv_device` (see the module docstring)."""
    return make_op("Send", [x], {"tensor_name": tensor_name, "send_device": send_device,
                                 "recv_device": recv_device}, name=name or "Send", control_inputs=control_inputs)


def recv(dtype, shape, tensor_name: str, send_device: str, recv_device: str, name: str | None = None,
         control_inputs=()) -> Tensor:
    """A Recv of the tensor that a Send with the same `tensor_name` and devices sends."""
    return make_op("Recv", [], {"tensor_name": tensor_name, "send_device": send_device,
                                "recv_device": recv_device, "dtype": dtype if dtype is not None else np.dtype(bool),
                                "shape": _sh.as_shape(shape)},
                   name=name or "Recv", control_inputs=control_inputs).outputs[0]


__all__: list[str] = []  # built by dist.partition, not by users
