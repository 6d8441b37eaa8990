"""Reverse-mode differentiation of graphs with control flow, gradient rules, optimizers."""
from grad import array_grad, control_flow_grad, math_grad, reduce_grad, stack_grad, tensor_array_grad  # noqa: F401
from grad.gradients import gradients
from grad.optimizers import SGD, Adam, Momentum, Optimizer, clip_by_global_norm, global_norm
from grad.registry import GradOp, register_gradient

__all__ = ["gradients", "register_gradient", "GradOp", "Optimizer", "SGD", "Momentum", "Adam",
           "clip_by_global_norm", "global_norm"]
