"""The variables a converted `if` or loop carries (from liveness) and the generated functions that carry them."""
from __future__ import annotations

from dataclasses import dataclass

import gast

from transpile import anno
from transpile import ast_util as A
from transpile.converters.base import Context, walk_same_scope
from transpile.liveness.activity import FUNCTION_SCOPE, node_effects
from transpile.liveness.qual_names import QN

GENERATED_FN = "generated_function"  # on a FunctionDef the converters created


@dataclass(frozen=True, slots=True)
class Var:
    """One state variable: its QN and the parameter name generated functions use for it."""

    qn: QN
    param: str
    kind: str  # "plain", "cell" (nonlocal), "global", "composite" (a.b)

    @property
    def text(self) -> str:
        return self.qn.name


class ScopeInfo:
    """What the converters need about the user function a statement belongs to."""

    def __init__(self, fn_node):
        self.fn_node = fn_node
        scope = anno.get_anno(fn_node, FUNCTION_SCOPE)
        self.cells = set(scope.cell_vars) | set(scope.nonlocals) if scope else set()
        self.globals = set(scope.globals) if scope else set()
        self.params = {q.name for q in scope.params} if scope else set()


def state_vars(modified, live_in, live_out, scope: ScopeInfo) -> list[QN]:
    """modified ∩ (live_in ∪ live_out): what a converted statement must carry.

    Locals captured by nested functions are always carried (their readers are
    calls this analysis cannot see). Subscripted names never appear: writing
    `a[i]` modifies `a`.
    """
    out = []
    for q in modified:
        if q.key is not None:
            continue
        if q.is_composite and any(p in modified for p in _parents(q)):
            continue  # `a.b` is carried by `a`
        if q in live_in or q in live_out or (not q.is_composite and q.name in scope.cells | scope.globals):
            out.append(q)
    return sorted(out, key=lambda q: q.name)


def _parents(q: QN):
    p = q.parent
    while p is not None:
        yield p
        p = p.parent


def make_vars(qns, scope: ScopeInfo, ctx: Context) -> list[Var]:
    out = []
    for q in qns:
        if q.is_composite:
            out.append(Var(q, ctx.namer.new(q.name.replace(".", "_")), "composite"))
        elif q.name in scope.globals:
            out.append(Var(q, ctx.namer.new(q.name + "_"), "global"))
        elif q.name in scope.cells:
            out.append(Var(q, ctx.namer.new(q.name + "_"), "cell"))
        else:
            out.append(Var(q, q.name, "plain"))
    return out


def preamble(params: list[Var]) -> list:
    """Statements that move renamed parameters into the variables the body uses."""
    out = []
    for v in params:
        if v.kind == "plain":
            continue
        if v.kind == "cell":
            out.append(gast.Nonlocal(names=[v.text]))
        elif v.kind == "global":
            out.append(gast.Global(names=[v.text]))
        out.append(A.assign(A.expr_from_qn_text(v.text, gast.Store()), A.name(v.param)))
    return out


def values_expr(vs: list[Var], ctx=None):
    """`x`, `(x, y)` or `()` for the variables' current values."""
    elts = [A.expr_from_qn_text(v.text, ctx or gast.Load()) for v in vs]
    if len(elts) == 1 and ctx is None:
        return elts[0]
    return A.tuple_(elts, ctx)


def targets_expr(vs: list[Var]):
    elts = [A.expr_from_qn_text(v.text, gast.Store()) for v in vs]
    return elts[0] if len(elts) == 1 else A.tuple_(elts, gast.Store())


def state_tuple(vs: list[Var]):
    """The state argument: always a tuple, `(x,)` for one variable."""
    return A.tuple_([A.expr_from_qn_text(v.text) for v in vs])


def names_tuple(vs: list[Var]):
    return A.tuple_([A.const(v.text) for v in vs])


def function(ctx: Context, fn_name: str, params: list[str], param_vars: list[Var], body: list, returns,
             origin) -> gast.FunctionDef:
    """`def <fn_name>(params): <preamble> <body> return <returns>` located at `origin`."""
    body = [s for s in body if not isinstance(s, gast.Pass)]
    stmts = preamble(param_vars) + body
    if returns is not None:
        stmts.append(A.ret(returns))
    if not stmts:
        stmts = [A.pass_(origin)]
    fn = A.function_def(fn_name, params, stmts)
    A.locate(fn, origin)
    anno.set_anno(fn, GENERATED_FN, True)
    return fn


def facts(ctx: Context, record: str, defaults: dict, **fields):
    """`ag.<record>(field=..., ...)`: what the operators are told about a loop or `if` (operators/facts.py),
    written into the generated call; fields equal to their `defaults` are left out."""
    return ctx.ag_call(record, keywords=[A.keyword(k, v if isinstance(v, gast.AST) else A.literal(v))
                                         for k, v in fields.items() if k not in defaults or defaults[k] != v])


def return_vars(ctx: Context) -> tuple[str, ...]:
    """The names of the generated variables that hold the function's return value."""
    return tuple(sorted(ctx.return_vars))


def undefined_inits(vs: list[Var], node, ctx: Context) -> list:
    """`x = ag.Undefined('x')` for carried names that no path has assigned yet."""
    # membership of each carried name, not the set of every name defined before (a long function's
    # names at each of its conds: quadratic in its length)
    maybe = anno.get_anno(node, anno.MAYBE_DEFINED_BEFORE, frozenset())
    out = []
    for v in vs:
        if v.kind == "composite" or QN(v.text) in maybe:
            continue
        out.append(A.locate(A.assign(A.name(v.text, gast.Store()),
                                     ctx.ag_call("Undefined", [A.const(v.text)])), node))
    return out


def first_assignments(stmts) -> dict[str, int]:
    """The line where each name is first assigned in `stmts` (for error messages)."""
    lines: dict[str, int] = {}
    for s in stmts:
        for n in walk_same_scope(s):
            if isinstance(n, gast.stmt) or (isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)):
                modified = node_effects(n)[1] if isinstance(n, gast.stmt) else {QN(n.id)}
                for q in modified:
                    if q.name not in lines or n.lineno < lines[q.name]:
                        lines[q.name] = n.lineno
    return lines


def test_effects(node) -> frozenset:
    return node_effects(node)[1]
