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
from graph.index import GraphIndex, Use, in_graph_order, upstream
from graph.node import ControlFlowContext, Node, Tensor
from graph.op_registry import register_op
from graph.ops import *  # noqa: F401,F403
from graph.saving import load  # also makes Graph.save available

# what `from graph import *` gives and what the API is: the IR, graph building, control flow, op builders
# (tests/graph/test_public_names.py checks that each exists and that every op builder graph exposes is here)
__all__ = [
    # modules
    "dtypes", "nest",
    # the IR and building graphs
    "Checkpoint", "ControlFlowContext", "Graph", "GraphError", "Node", "SourceLocation", "Tensor",
    "GraphIndex", "Use", "in_graph_order", "upstream",
    "control_dependencies", "device", "get_default_graph", "load", "make_op", "name_scope", "register_op",
    "reset_default_graph",
    # control flow
    "CondContext", "TensorArray", "WhileContext", "cond", "foldl", "foldr", "loop_memory_policy", "map_fn",
    "scan", "set_iteration_limit", "set_memory_policy", "while_loop",
    # op builders and Variables
    "Variable", "abs", "add", "add_at", "all", "amax", "amin", "any", "arange", "argmax", "argmin", "argsort",
    "assert_",
    "atan2", "bitwise_and", "bitwise_or", "bitwise_xor", "broadcast_to", "cast", "categorical", "ceil", "clip",
    "clip_by_value", "concat", "constant", "convert", "cos", "cumprod", "cumsum", "einsum", "equal", "exp",
    "expand_dims", "expm1", "Field", "fill", "floor", "floordiv", "full", "full_like", "gather", "get_item_grad", "getitem",
    "global_variables", "greater", "greater_equal", "group", "identity", "invert", "isfinite", "isnan", "l2_loss",
    "less", "less_equal", "log", "log1p", "log_softmax", "logical_and", "logical_not", "logical_or", "logical_xor",
    "logsumexp", "matmul", "max", "maximum", "mean", "min", "minimum", "mod", "mul", "neg", "no_op", "not_equal",
    "numpy_call", "one_hot", "ones", "ones_like", "pad", "placeholder", "pow", "print_", "prod", "random_normal",
    "random_uniform", "range", "rank", "reciprocal", "reduce_all", "reduce_any", "reduce_max", "reduce_mean",
    "reduce_min", "reduce_prod", "reduce_sum", "reduce_to_shape", "relu", "reshape", "round", "select", "set_item",
    "shape", "shape_of", "sigmoid", "sigmoid_grad", "sign", "sin", "size", "softmax", "softmax_cross_entropy",
    "softplus", "sort", "sparse_softmax_cross_entropy", "split", "sqrt", "square", "squeeze", "stack",
    "static_value", "std", "stop_gradient", "string_format", "sub", "sum", "take", "tanh", "tanh_grad", "tile",
    "trainable_variables", "transpose", "truediv", "unstack", "var", "variable_creator_scope", "where", "zeros",
    "zeros_like"
]
