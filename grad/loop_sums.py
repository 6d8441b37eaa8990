"""Gradients of loop constants that a gradient loop would sum row by row, computed after it at once.

A weight W used as `x_t @ W` in every iteration of a loop gets the gradient
sum_t x_tᵀ @ g_t, and a bias b added to every row of [rows, n] values gets
sum_t (g_t summed over its rows). Both are sums over iterations of functions that
add up over rows: with X = [x_1; ...; x_N] and G = [g_1; ...; g_N] the rows of all
iterations joined, they are Xᵀ @ G and G summed over its rows. So instead of a
small matmul, a weight-sized add and a loop variable per iteration, the forward
loop saves x_t and the gradient loop saves g_t (once, however many constants read
them), and after the gradient loop one StackConcat per stack and one matmul (or
reduction) per use give the gradient: the same sum in another order, and one
large matmul instead of N with inner dimension `rows`.

It applies to a loop differentiated outside any other loop being differentiated
(its stacks are keyed by its iteration alone), for a constant whose every use in
the body (not inside a cond of it) is the right operand of a 2-D MatMul, or the
operand of an Add that adds it to every row of such a matmul's result (whose
gradient rows are saved for the matmul anyway).
"""
from __future__ import annotations

from grad import saved as _saved
from grad.accumulate import add_n
from graph import shapes as _sh
from graph.control_flow.contexts import WhileContext
from graph.control_flow.stack import stack_concat
from graph.core import Node, Tensor, route
from graph.ops.array import transpose
from graph.ops.math import matmul
from graph.ops.reduce import reduce_sum


def plan(state, loop: WhileContext, consts) -> dict[Tensor, "RowSums"]:
    """{constant's Enter: its RowSums} for the constants of `loop` (pairs (outer value, Enter))
    whose gradient is summed after the gradient loop; the others are accumulated in it."""
    if state.loops:
        return {}
    uses = {e: [(u.node, u.index) for u in state.index.forward.uses(e) if _active_node(state, u.node)]
            for _, e in consts}
    weights = {e for e, us in uses.items() if us and all(_weight_use(n, i, loop) for n, i in us)}

    def deferred(n, i):
        # a bias's row sums are deferred only when a weight's product saves the same gradient anyway:
        # alone, saving every iteration's gradient would cost more memory than it saves work
        return _weight_use(n, i, loop) or _bias_use(n, i, loop) and _feeds_weight(state, n.inputs[1 - i], loop, weights)

    rows = LoopRows(state, loop)
    return {e: RowSums(rows) for e, us in uses.items() if us and all(deferred(n, i) for n, i in us)}


def _active_node(state, n: Node) -> bool:
    return any(state.is_active(o) for o in n.outputs)


def _rows_known(n: Node, x: Tensor) -> bool:
    out = n.outputs[0]
    return out.shape is not None and x.shape is not None and _sh.is_fully_defined(out.shape[1:]) \
        and out.dtype == x.dtype


def _weight_use(n: Node, i: int, loop: WhileContext) -> bool:
    """`x_t @ W` for input i (W): its gradient sum_t x_tᵀ @ g_t adds up over rows."""
    if n.context is not loop or n.op != "MatMul" or i != 1 or not _rows_known(n, n.inputs[1]):
        return False
    a, w = n.inputs
    return len(w.shape) == 2 and a.shape is not None and len(a.shape) == 2 and a.shape[1] is not None \
        and a.dtype == w.dtype and not loop.is_invariant(a)


def _bias_use(n: Node, i: int, loop: WhileContext) -> bool:
    """`v_t + b` adding input i (b) to every row: its gradient sum_t (g_t summed over rows) adds up over rows."""
    x = n.inputs[i]
    return n.context is loop and n.op == "Add" and _rows_known(n, x) and _sh.is_fully_defined(x.shape) \
        and tuple(n.outputs[0].shape[1:]) == tuple(x.shape)


def _feeds_weight(state, t: Tensor, loop: WhileContext, weights: set) -> bool:
    """Whether `t`'s gradient is, unchanged, that of a deferred weight's matmul: t is such a matmul
    or a sum of values without broadcasting, each of them used once."""
    n = t.node
    if n.context is not loop or sum(1 for u in state.index.forward.uses(t) if _active_node(state, u.node)) != 1:
        return False
    if n.op == "MatMul":
        return n.inputs[1] in weights
    if n.op == "Add" and all(x.shape == t.shape for x in n.inputs) and _sh.is_fully_defined(t.shape):
        return any(_feeds_weight(state, x, loop, weights) for x in n.inputs)
    return False


class LoopRows:
    """The rows one gradient loop's deferred sums read, each saved once per iteration."""

    def __init__(self, state, loop: WhileContext):
        self.state = state
        self.loop = loop
        self._stacks: dict[Tensor, tuple[Tensor, Tensor]] = {}   # saved value -> (handle, its shape)
        self._joined: dict[Tensor, Tensor] = {}

    def saved(self, value: Tensor, shape) -> Tensor:
        """The stack holding `value` of every iteration: a forward value of the loop body, saved by
        the forward loop, or a value of the gradient loop body being built, saved by it."""
        got = self._stacks.get(value)
        if got is not None:
            return got[0]
        state = self.state
        rec = state.loops[-1]
        handle = state.new_stack("rows_of_" + value.node.name)
        if value.node.context is self.loop:
            state.push(handle, [value], self.loop, [rec.counter.body])
        else:
            state.push(handle, [value], state.graph.context, [rec.index])
        self._stacks[value] = (handle, shape)
        return handle

    def joined(self, value: Tensor) -> Tensor:
        """After the gradient loop: the rows of `value` of all iterations, in iteration order."""
        out = self._joined.get(value)
        if out is None:
            handle, shape = self._stacks[value]
            graph = self.state.graph
            where = graph.context
            if value.node.context is self.loop:  # forward rows: joined while the gradient loop runs
                waits = [_saved.counter_for(self.loop).exit.node]
            else:
                waits = [_saved.counter_for(self.state.mirror[self.loop]).exit.node]
            handle = route(where, handle) if where is not None else handle
            # raw: the forward loop's counter may sit in the other branch of a cond on the same predicate
            gate = graph.create_node("Identity", [handle], name="rows_saved", control_inputs=waits,
                                     context=where).outputs[0]
            out = self._joined[value] = stack_concat(gate, value.dtype, shape[1:], name="rows")
        return out


class RowSums:
    """One loop constant's gradient contributions, each a sum over iterations of a function that adds
    up over rows: recorded by gradient rules while the gradient loop is built, computed after it."""

    def __init__(self, rows: LoopRows):
        self.rows = rows
        self._products: list[tuple[Tensor, Tensor]] = []
        self._sums: list[Tensor] = []

    def add_product(self, x: Tensor, g: Tensor, g_shape) -> None:
        """Adds sum_t x_tᵀ @ g_t (x: the forward value, g: its gradient-loop counterpart)."""
        self.rows.saved(x, x.shape)
        self.rows.saved(g, g_shape)
        self._products.append((x, g))

    def add_row_sum(self, g: Tensor, g_shape) -> None:
        """Adds sum_t (g_t summed over its first axis)."""
        self.rows.saved(g, g_shape)
        self._sums.append(g)

    def total(self) -> Tensor | None:
        """The sum of the contributions, built after the gradient loop."""
        rows = self.rows
        parts = [matmul(transpose(rows.joined(x)), rows.joined(g)) for x, g in self._products]
        parts += [reduce_sum(rows.joined(g), axis=0) for g in self._sums]
        if not parts:
            return None
        return add_n(parts)
