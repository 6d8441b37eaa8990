"""Static analyses over gast functions: CFG, activity, reaching definitions, liveness."""
from __future__ import annotations

import gast

from transpile import anno
from transpile.liveness import activity, cfg, liveness, reaching_definitions
from transpile.liveness.qual_names import QN

_FUNCTIONS = (gast.FunctionDef, gast.AsyncFunctionDef)


def analyze(fn_node) -> activity.Scope:
    """Runs every analysis on a function and the functions nested in it.

    Afterwards each statement carries SCOPE, LIVE_IN, LIVE_OUT, DEFINED_IN and
    MAYBE_DEFINED_IN annotations; compound statements also BODY_SCOPE /
    ORELSE_SCOPE. Returns the function's own Scope.
    """
    scope = activity.analyze(fn_node)
    for node in gast.walk(fn_node):
        if isinstance(node, _FUNCTIONS):
            fn_scope = anno.get_anno(node, activity.FUNCTION_SCOPE)
            graph = cfg.build(node)
            # a global or nonlocal name is defined outside the function: it has a value on entry
            outside = {QN(name) for name in fn_scope.globals | fn_scope.nonlocals}
            effects = activity.node_effects_of(graph)  # both analyses need them: worked out once
            reaching_definitions.analyze(node, graph, set(fn_scope.params) | outside, effects)
            liveness.analyze(node, graph, effects)
    return scope


__all__ = ["analyze", "activity", "cfg", "liveness", "reaching_definitions", "QN"]
