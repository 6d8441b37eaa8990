"""Reverse-mode differentiation of graphs with control flow, gradient rules, optimizers."""
# Importing the rule modules registers their rules: op gradients, and the cond and while
# loop gradients that the walk over a region (grad.backprop) looks up by construct.
from grad import (  # noqa: F401
           along_axis_grad,
           array_grad,
           control_flow_grad,
           einsum_grad,
           linalg_grad,
           math_grad,
           numpy_call_grad,
           reduce_grad,
           stack_grad,
           tensor_array_grad,
           ufunc_grad,
)
from grad.gradients import gradients
from grad.non_differentiable import NonDifferentiableWarning
from grad.optimizers import SGD, Adam, Momentum, Optimizer, clip_by_global_norm, global_norm
from grad.registry import GradOp, register_gradient
from graph._version import __version__

__all__ = ["gradients", "NonDifferentiableWarning", "register_gradient", "GradOp", "Optimizer", "SGD", "Momentum",
           "Adam", "clip_by_global_norm", "global_norm"]
