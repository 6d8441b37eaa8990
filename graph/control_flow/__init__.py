"""Control-flow primitives and the builders made of them."""
from graph.control_flow import (
    primitives,  # noqa: F401  (registers the op types)
    stack,  # noqa: F401  (StackNew/StackPush/StackPop)
)
from graph.control_flow.cond import cond
from graph.control_flow.contexts import CondContext, WhileContext
from graph.control_flow.functional import foldl, foldr, map_fn, scan
from graph.control_flow.memory_policy import loop_memory_policy, set_memory_policy
from graph.control_flow.tensor_array import TensorArray
from graph.control_flow.while_loop import set_iteration_limit, while_loop

__all__ = ["cond", "while_loop", "set_iteration_limit", "loop_memory_policy", "set_memory_policy", "CondContext", "WhileContext", "TensorArray", "scan",
           "map_fn", "foldl", "foldr"]
