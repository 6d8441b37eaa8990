"""Dataflow graphs with in-graph control flow (Switch/Merge/Enter/Exit/NextIteration)."""
from graph import dtypes, nest
from graph._version import __version__
from graph.control_flow import (
    CondContext,
    TensorArray,
    WhileContext,
    cond,
    foldl,
    foldr,
    loop_memory_policy,
    map_fn,
    scan,
    set_iteration_limit,
    set_memory_policy,
    while_loop,
)
from graph.core import (
                        Checkpoint,
                        Graph,
                        control_dependencies,
                        device,
                        get_default_graph,
                        make_op,
                        name_scope,
                        reset_default_graph,
)
from graph.errors import GraphError, SourceLocation
from graph.node import ControlFlowContext, Node, Tensor
from graph.op_registry import register_op
from graph.ops import *  # noqa: F401,F403
from graph.saving import load  # also makes Graph.save available
