"""Reverse-mode differentiation of graphs with control flow, gradient rules, optimizers."""
from grad import array_grad, control_flow_grad, math_grad, stack_grad, tensor_array_grad  # noqa: F401  (rules)
from grad.gradients import gradients
from grad.registry import GradOp, register_gradient

__all__ = ["gradients", "register_gradient", "GradOp"]
