"""A reference interpreter: evaluates graphs through their recorded cond/while structure.

It shares nothing with the executor but the kernels: a recursive, demand-driven
evaluation where a cond Merge evaluates its predicate and then only the taken
branch, and a loop's Exit runs the loop as a Python `while` over scopes of
bindings. Slow and simple on purpose; it is the oracle the executor is tested
against.
"""
from __future__ import annotations

import sys

from exec import kernels as _kernels
from exec.runtime import Runtime
from graph import nest
from graph.core import Node, Tensor
from graph.op_names import ENTER, EXIT, MERGE, NEXT_ITERATION, SWITCH

DEAD = type("Dead", (), {"__repr__": lambda self: "DEAD"})()


class _Scope:
    """Values of one loop iteration (or the root): memoised node outputs."""

    def __init__(self, loop, parent: "_Scope | None", iteration: int = 0):
        self.loop = loop
        self.parent = parent
        self.iteration = iteration
        self.memo: dict[Node, tuple] = {}

    def owner(self, frame) -> "_Scope":
        s = self
        while s.loop is not frame:
            s = s.parent
            if s is None:
                raise RuntimeError("reference interpreter: a value's frame is not an enclosing loop")
        return s


class ReferenceInterpreter:
    def __init__(self, runtime: Runtime | None = None):
        self.rt = runtime or Runtime()
        self._kernels: dict[Node, object] = {}

    def run(self, fetches, feed_dict=None):
        feeds = {(t if isinstance(t, Tensor) else t.outputs[0]): v for t, v in (feed_dict or {}).items()}
        self._kernels = {}  # built for these feeds (a fed value is never baked into a kernel)
        with _kernels.feeding(t.node for t in feeds):
            return self._run(fetches, feeds)

    def _run(self, fetches, feeds):
        root = _Scope(None, None)
        for t, v in feeds.items():
            root.memo[t.node] = (v,)
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20000))
        try:
            out = []
            for f in nest.flatten(fetches):
                if isinstance(f, Tensor):
                    v = self.value(f, root)
                    if v is DEAD:
                        raise RuntimeError(f"fetched tensor {f.name} is dead")
                    out.append(v)
                elif isinstance(f, Node):
                    self.outputs(f, root)
                    out.append(None)
                else:
                    out.append(None)
            # Variables are read after everything else has run, like Session.run
            out = [f.value if getattr(f, "is_variable", False) else v
                   for f, v in zip(nest.flatten(fetches), out, strict=True)]
            return nest.pack_as(fetches, out) if not isinstance(fetches, (Tensor, Node)) else out[0]
        finally:
            sys.setrecursionlimit(limit)

    # -- evaluation -------------------------------------------------------------------------
    def value(self, t: Tensor, scope: _Scope):
        return self.outputs(t.node, scope)[t.index]

    def outputs(self, node: Node, scope: _Scope) -> tuple:
        home = scope.owner(node.frame)
        got = home.memo.get(node)
        if got is None:
            got = self._compute(node, home)
            home.memo[node] = got
        return got

    def _compute(self, node: Node, scope: _Scope) -> tuple:
        op = node.op
        if op == ENTER:
            return (self.value(node.inputs[0], scope.parent),)
        if op == EXIT:
            return self._run_loop(node.inputs[0].node.context, scope)[node]
        if op == MERGE:
            if node.inputs[0].node.op == ENTER or any(t.node.op == NEXT_ITERATION for t in node.inputs):
                raise RuntimeError(f"loop Merge {node.name} evaluated outside its loop")
            return self._cond_merge(node, scope)
        dead_control = False
        for c in node.control_inputs:
            # a control input is dead when all its outputs are (as in the executor)
            if all(v is DEAD for v in self.outputs(c, scope)):
                dead_control = True
        args = [self.value(t, scope) for t in node.inputs]
        if op == SWITCH:
            data, pred = args
            if data is DEAD or pred is DEAD or dead_control:
                return (DEAD, DEAD)
            return (DEAD, data) if pred else (data, DEAD)
        if dead_control or any(a is DEAD for a in args):
            return (DEAD,) * max(len(node.outputs), 1)
        fn = self._kernels.get(node)
        if fn is None:
            fn = self._kernels[node] = _kernels.get_kernel(node, self.rt)
        result = fn(*args)
        if len(node.outputs) == 1:
            return (result,)
        if not node.outputs:
            return _LIVE
        return tuple(result)

    def _cond_merge(self, node: Node, scope: _Scope) -> tuple:
        """Evaluates the predicate, then only the input from the taken branch."""
        branch_ctx = [_branch_of(t.node) for t in node.inputs]
        pred_t = next(c.pred for c in branch_ctx if c is not None)
        pred = self.value(pred_t, scope)
        if pred is DEAD:
            return (DEAD, DEAD)
        for k, (t, ctx) in enumerate(zip(node.inputs, branch_ctx, strict=True)):
            if ctx is not None and ctx.branch == bool(pred):
                v = self.value(t, scope)
                return (v, k) if v is not DEAD else (DEAD, DEAD)
        raise RuntimeError(f"cond Merge {node.name}: no input from the taken branch")

    def _run_loop(self, ctx, scope: _Scope) -> dict:
        """Runs loop `ctx` to completion in `scope`; returns {Exit node: outputs}."""
        key = ("loop", id(ctx))
        done = scope.memo.get(key)
        if done is not None:
            return done
        for enter in ctx.enters:
            for c in enter.control_inputs:
                self.outputs(c, scope)
        values = [self.value(enter.inputs[0], scope) for enter in ctx.enters]
        n = 0
        while True:
            it = _Scope(ctx, scope, n)
            for m, v in zip(ctx.merges, values, strict=True):
                it.memo[m] = (v, 0 if n == 0 else 1)
            pred = self.value(ctx.loop_cond.outputs[0], it)
            if pred is DEAD or any(v is DEAD for v in values):
                result = {e: (DEAD,) for e in ctx.exits}
                break
            if not pred:
                result = {e: (self.value(e.inputs[0], it),) for e in ctx.exits}
                break
            values = [self.value(nxt.inputs[0], it) for nxt in ctx.next_iterations]
            n += 1
        scope.memo[key] = result
        return result


_LIVE = ("live",)  # the outputs of a node without outputs that ran


def _branch_of(node: Node):
    """The CondContext whose branch produced `node`'s value, if any."""
    from graph.control_flow.contexts import CondContext
    ctx = node.context
    return ctx if isinstance(ctx, CondContext) else None


def run_reference(fetches, feed_dict=None, runtime: Runtime | None = None):
    """Evaluates `fetches` with the reference interpreter (same conventions as Session.run)."""
    return ReferenceInterpreter(runtime).run(fetches, feed_dict)
