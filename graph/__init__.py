"""Dataflow graphs with in-graph control flow (Switch/Merge/Enter/Exit/NextIteration)."""
from graph import dtypes
from graph.core import (Graph, Node, Tensor, control_dependencies, device, get_default_graph, make_op,
                        name_scope, register_op, reset_default_graph)
from graph.errors import GraphError, SourceLocation
from graph.ops import *  # noqa: F401,F403
from graph.control_flow import (CondContext, TensorArray, WhileContext, cond, foldl, foldr, map_fn, scan,
                                while_loop)
from graph import nest
