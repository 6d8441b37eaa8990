"""The runtime helpers that converted code calls as `ag.<name>`: control flow, logic, lists, builtins.

Each helper's docstring gives its meaning as the plain Python it replaces.
With Python values a helper runs exactly that Python; when a condition or an
iterable is a graph tensor it builds graph control flow instead (graph.cond,
graph.while_loop), so that the decision is made when the graph runs.
`ag_namespace` is the object converted code calls `ag` (see calls.py).

Modules, each with one job (the later ones build on the earlier ones):

    trace_state      what the helpers know about the code around them (per thread)
    staging          StagingError, rebuilding a cond or loop until it settles, graph conditions, effect order
    uncatchable      exceptions that happen only when the graph runs, which an `except` clause cannot catch
    arrays           numpy arrays written in place whose contents are graph values (MutableArray)
    leaves           the leaves of a value: kinds, dtypes, conversion to tensors, descriptions
    data_structures  lists built in graph loops (TensorList), list.append, item assignment
    values           variables without a value (Undefined, MaybeDefined), ld, globals
    encoding         state tuples, placeholders, and lists that cross cond/loop boundaries as TensorArrays
    carried_state    what a cond's branches or a loop's body write besides the carried variables
    cond_outputs     how each variable leaves a graph cond
    conditionals     if_stmt, if_exp (graph_cond)
    logical          and_, or_, not_
    iterables        range_, enumerate_, zip_ and what a graph `for` loop reads from them
    loop_vars        how each variable enters and leaves a graph loop
    loops            while_stmt, for_stmt
    loop_options     loop_options: what a loop body asks of its graph loop (an iteration limit)
    statements       assert_stmt, print_
    formatting       text of graph values: f-strings (fstr, fmt), str_, repr_, format_, percent, format_method
    list_items       lst[k].append(v), also at a graph-tensor index k (append_at)
    py_builtins      len_, abs_, min_, max_, sum_, int_, float_, bool_, isinstance_
    calls            call (converts user functions on first use), ag_namespace

Naming:
- A helper that replaces a statement or expression is named after it:
  `if_stmt`, `while_stmt`, `for_stmt`, `assert_stmt`, `if_exp`.
- A helper that stands for a keyword or a builtin takes its name with a
  trailing underscore (`and_`, `not_`, `len_`, `print_`); `ag_namespace`
  exposes the builtins' versions under the builtins' own names (`ag.len`),
  since that is what the converters write.
- `graph_*` / `Graph*` names are the graph form of a construct (`graph_cond`,
  `GraphRange`); `*_like` / `*_of` name what is made from or read off a value.
- A name without a leading underscore is used by another module (or by
  transpile.api); one with it is private to its module.
"""
from transpile.operators.arrays import MutableArray
from transpile.operators.calls import ag_namespace, call, conversion_of, converted_function
from transpile.operators.conditionals import graph_cond, if_exp, if_stmt
from transpile.operators.data_structures import TensorList, list_append, set_item, share_element_specs, stacked_list
from transpile.operators.formatting import fmt, fstr
from transpile.operators.iterables import GraphEnumerate, GraphRange, GraphZip, enumerate_, range_, zip_
from transpile.operators.leaves import is_composite, is_tensor
from transpile.operators.logical import and_, not_, or_
from transpile.operators.loop_options import loop_options
from transpile.operators.loops import for_stmt, while_stmt
from transpile.operators.py_builtins import abs_, bool_, float_, int_, isinstance_, len_, max_, min_, sum_
from transpile.operators.staging import StagingError
from transpile.operators.statements import assert_stmt, print_
from transpile.operators.trace_state import is_tracing, tracing
from transpile.operators.values import (
                                        ConditionallyDefinedError,
                                        MaybeDefined,
                                        PartiallyDefined,
                                        Undefined,
                                        UndefinedReturn,
                                        ld,
                                        to_global,
                                        undefined_return,
)

__all__ = [
    # control flow
    "if_stmt", "if_exp", "while_stmt", "for_stmt", "and_", "or_", "not_", "graph_cond", "loop_options",
    # variables
    "Undefined", "UndefinedReturn", "PartiallyDefined", "MaybeDefined", "undefined_return", "ld", "to_global",
    "ConditionallyDefinedError",
    # lists, arrays and items
    "MutableArray", "TensorList", "list_append", "set_item", "stacked_list", "share_element_specs",
    # statements and builtins
    "assert_stmt", "print_", "fstr", "fmt", "range_", "enumerate_", "zip_", "GraphRange",
    "GraphEnumerate", "GraphZip", "len_", "abs_", "min_", "max_", "sum_", "int_", "float_", "bool_",
    "isinstance_",
    # calls and tracing
    "call", "converted_function", "conversion_of", "ag_namespace", "tracing", "is_tracing", "StagingError",
    # kinds of values
    "is_tensor", "is_composite",
]
