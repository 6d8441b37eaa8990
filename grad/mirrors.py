"""Where the backward graph is being built, and how forward values get there.

Gradient nodes for a forward context are built in its *mirror*: the top level
mirrors itself, a cond branch mirrors to the same branch of the gradient cond,
a loop body to the body of its gradient loop. A rule reading a forward value
gets, through `resolve`:

- the value itself when it is visible where the gradient is built (an enclosing
  context: the graph routes it in, through a Switch or a constant Enter);
- a loop constant's outer value (loop-invariant, never saved); a value the loop
  body computes from loop constants alone is computed again from them, once,
  outside the gradient loop (never saved either);
- for a value computed inside a loop being differentiated, a `StackPop` in the
  mirror of its context of what a `StackPush` saved in the forward loop, keyed
  by the iteration indices of every enclosing differentiated loop (all values
  of one context share the push and the pop: one slot per iteration); under
  the loop's memory policy "recompute", the value computed again from a saved
  loop state instead (grad/recompute.py);
- for a value of a cond branch outside any such loop, the value itself, captured
  into the mirror branch by a Switch (the gradient cond takes the same branch).
"""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import numpy as np

from grad import saved as _saved
from grad.analysis import ForwardIndex, ancestors, is_within, stacked_values
from grad.tensor_array_grad import gradient_array, spec_of
from graph import dtypes as _dt
from graph import shapes as _sh
from graph.control_flow.contexts import CondState, WhileContext
from graph.control_flow.stack import add_popped_value, add_pushed_value, stack_new, stack_pop
from graph.core import Node, Tensor, route
from graph.devices import canonical_device
from graph.errors import GraphError
from graph.op_names import ENTER, EXIT, IDENTITY, LOOP_COND, MERGE, NEXT_ITERATION, PLACEHOLDER, SWITCH
from graph.op_registry import get_opdef
from graph.ops.conversion import constant
from graph.ops.creation import zeros
from graph.ops.shape_ops import shape


@dataclass(frozen=True, slots=True)
class LoopRecord:
    """A forward loop whose gradient loop is being built."""
    forward: WhileContext
    backward: WhileContext
    counter: _saved.Counter
    index: Tensor            # in the gradient loop: the forward iteration it undoes
    replay: object = None    # grad.recompute.Recompute for a loop with memory_policy="recompute"


class GradState:
    """Everything one `gradients` call shares while it builds the backward graph."""

    def __init__(self, graph, top, index: ForwardIndex, active: set[Tensor]):
        self.graph = graph
        self.top = top                 # the context `gradients` was called in
        # where stacks are created: `top`, or the enclosing region being walked (grad.enclosing),
        # which runs whenever both a forward loop in it and the gradient built in `top` run
        self.home = top
        self.index = index
        self.active = active           # tensors on a differentiable path from xs to ys
        self.mirror: dict = {}
        self.loops: list[LoopRecord] = []
        self._record_of: dict[WhileContext, LoopRecord] = {}
        self._counter_index: dict[Tensor, LoopRecord] = {}
        self._pops: dict[Tensor, Tensor] = {}
        # (forward context, device) -> (its StackPush, the StackPop in its mirror)
        self._saves: dict = {}
        self._invariant: dict[Node, bool] = {}
        self._clones: dict[Node, Node] = {}
        self._shapes: dict[Tensor, Tensor] = {}
        self._imports: dict[Node, CondState] = {}   # Switches that capture forward values into gradient conds
        self.deferred: dict[WhileContext, list[Node]] = {}   # gradient loops under construction
        self.gradient_stacks: dict[Node, "GradientStack"] = {}
        self.row_sums: dict = {}   # loop constant's Enter -> its gradient summed after the loop (grad.loop_sums)
        # names this computation's TensorArray gradient arrays (gradients of gradients use others)
        self.source = graph.unique_name("gradient_arrays", mark_used=True)

    # -- contexts ---------------------------------------------------------------------------
    def is_active(self, t: Tensor) -> bool:
        return t in self.active

    def value_context(self, t: Tensor):
        """The context in which `t` is live: a cond Switch's output port lives in its branch."""
        n = t.node
        if n.op == SWITCH:
            s = self.index.cond_unit.get(n) or self._imports.get(n)
            if s is not None:
                return next(b for b in s.branches if b.branch == t.index)
        return n.context

    def is_reversed(self, ctx) -> bool:
        """Whether `ctx` is inside a loop whose gradient loop is being built."""
        return ctx is not None and ctx.frame in self._record_of

    def visible(self, ctx) -> bool:
        """Whether values of context `ctx` can be used (routed) where nodes are being built now."""
        return ctx is None or any(c is ctx for c in ancestors(self.graph.context))

    @contextmanager
    def walking(self, region):
        """While the units of `region`, an enclosing region of `top` in the same frame, are being
        differentiated (grad.enclosing): their stacks are created there."""
        if (region.frame if region is not None else None) is not (self.top.frame if self.top is not None else None):
            raise GraphError("gradients: internal error: stacks for a region of another frame")
        home, self.home = self.home, region
        try:
            yield
        finally:
            self.home = home

    @contextmanager
    def reversing(self, forward: WhileContext, backward: WhileContext, counter, index: Tensor, replay=None):
        rec = LoopRecord(forward, backward, counter, index, replay)
        self.loops.append(rec)
        self._record_of[forward] = rec
        self._counter_index[counter.body] = rec
        self.mirror[forward] = backward
        self.deferred[backward] = []
        try:
            yield rec
        finally:
            self.loops.pop()
            del self._record_of[forward]
            del self._counter_index[counter.body]

    def built(self, ctx) -> None:
        """A gradient loop or cond branch is complete: the saves inside it can now be waited for."""
        for node in self.deferred.pop(ctx, ()):
            _saved.wait_in_iteration(node, self.top, self.deferred)

    # -- forward values ---------------------------------------------------------------------
    def resolve(self, t: Tensor) -> Tensor:
        """Forward tensor `t`, usable where the gradient is being built (see the module docstring)."""
        ctx = self.value_context(t)
        if self.visible(ctx):
            return t
        n = t.node
        if n.op == ENTER and n.attrs["is_constant"]:
            return self.resolve(n.inputs[0])
        rec = self._counter_index.get(t)
        if rec is not None:
            return rec.index
        if ctx.frame is not None and ctx.frame in self._record_of:
            if ctx is ctx.frame and self._loop_invariant(t.node, ctx):
                return self._recomputed(t)
            replay = self._record_of[ctx.frame].replay
            if replay is not None:   # memory_policy="recompute": computed again, not saved
                return replay.value(t)
            return self._popped(t, ctx)
        return self._imported(t, ctx)

    def outside(self, fn, *ts: Tensor):
        """`fn(*ts)` for values visible here, built in the innermost context they come from:
        work that depends only on loop constants is done once, not in every backward iteration."""
        where = {id(self.value_context(t)) for t in ts}
        target = None
        for c in ancestors(self.graph.context):
            if id(c) in where:
                target = c
                break
        with self.graph.in_context(target):
            return fn(*ts)

    def _mirror(self, ctx):
        b = self.mirror.get(ctx)
        if b is None or not self.visible(b):
            raise GraphError(f"gradients: internal error: no gradient context for {ctx.describe()} "
                             f"is visible here (needed to read a forward value)")
        return b

    def _imported(self, t: Tensor, ctx) -> Tensor:
        """A value of forward cond branch `ctx` (outside differentiated loops), seen in its mirror.

        The gradient cond takes the same branch, so the value is live whenever the
        mirror branch runs: it is captured like an outer value, by a Switch on the
        gradient cond's predicate (a second gradient then flows back to it).
        """
        b = self._mirror(ctx)
        out = b.captured.get(t)
        if out is None:
            sw = self.graph.create_node(SWITCH, [t, b.state.pred], name="forward_value", context=b.outer)
            b.state.switches[t] = sw
            self._imports[sw] = b.state
            out = b.captured[t] = sw.outputs[b.branch]
            b.captured[out] = out  # already inside: ops built in the branch use it as it is
        return out

    def _loop_invariant(self, n: Node, loop: WhileContext) -> bool:
        """Whether `n`, in the body of `loop`, computes the same value in every iteration: a pure op
        of loop constants and of such values. (TensorArray handles are not values: the array may
        change under a constant handle.)"""
        known = self._invariant
        todo = [n]
        while todo:  # iterative: a body may be a chain of thousands of ops
            m = todo[-1]
            if m in known:
                todo.pop()
                continue
            if m.context is not loop or m.op in _NOT_PURE or get_opdef(m.op).stateful \
                    or not all(loop.is_pivot(c) for c in m.control_inputs) \
                    or any(t.dtype is _dt.variant for t in m.inputs):
                known[m] = False
                todo.pop()
                continue
            ins = [t.node for t in m.inputs if not loop.is_invariant(t)]
            if any(known.get(i) is False for i in ins):
                known[m] = False
                todo.pop()
                continue
            unknown = [i for i in ins if i not in known]
            if unknown:
                todo.extend(unknown)
            else:
                known[m] = True
                todo.pop()
        return known[n]

    def _recomputed(self, t: Tensor) -> Tensor:
        """Loop-invariant `t`, computed again from the loop constants outside the gradient loop
        rather than saved on a stack in every forward iteration."""
        n = t.node
        clone = self._clones.get(n)
        if clone is None:
            def build(*ins):
                return self.graph.create_node(n.op, list(ins), dict(n.attrs), name="invariant_" + _short(t))
            clone = self._clones[n] = self.outside(build, *[self.resolve(x) for x in n.inputs])
        return clone.outputs[t.index]

    def records_upto(self, frame: WhileContext) -> list[LoopRecord]:
        out = []
        for rec in self.loops:
            out.append(rec)
            if rec.forward is frame:
                return out
        raise GraphError(f"gradients: internal error: {frame.describe()} is not being differentiated")

    def _popped(self, t: Tensor, ctx) -> Tensor:
        """`t`, saved by the forward iteration and taken back by the backward one. Everything one
        forward context saves on one device goes in one slot: one push and one pop per iteration
        and device.

        A value the user placed (`graph.device`) is saved on its device, in a stack of that
        device's values: saving it elsewhere would send it there every forward iteration and
        back every backward one, and make that device do every push and pop (a loop partitioned
        by layer would ship each layer's saved activations to one device)."""
        out = self._pops.get(t)
        if out is not None:
            return out
        device = _saving_device(t.node)
        batch = self._saves.get((ctx, device))
        if batch is None:
            recs = self.records_upto(ctx.frame)
            # a device scope overrides the colocation with the gradient rule that asked first
            with self.graph.device(device) if device else nullcontext():
                handle = self.new_stack("saved in " + ctx.describe())
                push = self.push(handle, [t], ctx, [r.counter.body for r in recs], name="save")
                with self.graph.in_context(self._mirror(ctx)):
                    (out,) = stack_pop(handle, [r.index for r in recs], [t.dtype], [t.shape], name="saved")
            self._saves[(ctx, device)] = (push, out.node)
        else:
            push, pop = batch
            add_pushed_value(push, t)
            out = add_popped_value(pop, t.dtype, t.shape)
        self._pops[t] = out
        return out

    def new_stack(self, what: str) -> Tensor:
        with self.graph.in_context(self.home):
            return stack_new(name=what)

    def push(self, handle: Tensor, values: list[Tensor], ctx, keys: list[Tensor], name: str | None = None) -> Node:
        """A StackPush of `values` in forward context `ctx`, which the loop counters wait for."""
        graph = self.graph
        with graph.name_scope(ctx.frame.frame_name + "/"):
            ins = [route(ctx, handle), *values] + [route(ctx, k) for k in keys]
            node = graph.create_node("StackPush", ins, {"swap_memory": bool(ctx.frame.swap_memory),
                                                        "num_values": len(values)},
                                     name=name or "save_" + _short(values[0]), context=ctx)
        _saved.wait_in_iteration(node, self.home, self.deferred)
        return node

    # -- shapes and zeros -------------------------------------------------------------------
    def resolve_shape(self, t: Tensor) -> Tensor:
        """`t`'s shape as an int64 vector; saves at most the shape, never the value."""
        if _sh.is_fully_defined(t.shape):
            return constant(np.asarray(t.shape, dtype=np.int64))
        t = _shape_source(t, self.index)
        ctx = t.node.context
        if self.visible(ctx) or ctx.frame is None or ctx.frame not in self._record_of:
            return shape(self.resolve(t))
        s = self._shapes.get(t)
        if s is None:
            with self.graph.in_context(ctx):
                s = self._shapes[t] = shape(t)
        return self.resolve(s)

    def zeros_like(self, t: Tensor) -> Tensor:
        """Zeros shaped like forward tensor `t` (for a TensorArray handle: its gradient array)."""
        if t.dtype is _dt.variant:
            return gradient_array(self, self.resolve(t), spec_of(t)).handle
        z = zeros(self.resolve_shape(t), t.dtype)
        if t.shape is not None and _sh.compatible(z.shape, t.shape):
            z.shape = t.shape if z.shape is None else tuple(a if a is not None else b
                                                             for a, b in zip(t.shape, z.shape, strict=True))
        return z

    # -- gradient stacks (second order) -----------------------------------------------------
    def has_inner_sources(self, ctx) -> bool:
        """Whether values pushed inside `ctx` receive gradients from popped values (second order)."""
        for stack in self.gradient_stacks:
            for p in self.index.stack_pushes.get(stack, ()):
                if is_within(p.context, ctx) and any(self.is_active(v) for v in stacked_values(p)):
                    return True
        return False

    def gradient_stack(self, stack: Node) -> "GradientStack":
        gs = self.gradient_stacks.get(stack)
        if gs is None:
            gs = self.gradient_stacks[stack] = GradientStack(self.new_stack("gradient_of_" + stack.name))
        return gs


def _saving_device(node: Node, limit: int = 16) -> str:
    """The device to save `node`'s value on: its own, where the user placed it; else that of the
    nearest placed producer (a loop variable's Switch is unplaced, but the value it carries comes from
    its NextIteration's placed input, and dist.place puts it there); "" where none of the nearest
    `limit` producers is placed (dist.place then decides, with the gradient rule that asked first)."""
    seen, todo = {node}, [node]
    for n in todo:  # breadth first, growing as it goes
        if n.device:
            return canonical_device(n.device)
        for t in n.inputs:
            if t.node not in seen and len(seen) < limit:
                seen.add(t.node)
                todo.append(t.node)
    return ""


class GradientStack:
    """Gradients of the values popped from one forward stack, saved for the pushes' gradients."""

    def __init__(self, handle: Tensor):
        self.handle = handle
        self.pushes: list[Node] = []
        self.positions: list[int] = []   # which of a forward slot's values have gradients saved
        self._ready: dict[int, Tensor] = {}

    def ready_handle(self, state: GradState) -> Tensor:
        """The handle, for a pop built here, gated on every push of a gradient being done.

        The pushes are inside gradient loops; the counter of the outermost one (below
        the `gradients` call's frame) finishes after all of them. The gate sits in
        that frame, in the innermost context enclosing the pop.
        """
        top_frame = state.top.frame if state.top is not None else None
        where = next((c for c in ancestors(state.graph.context) if c.frame is top_frame), None)
        gate = self._ready.get(id(where))
        if gate is not None:
            return gate
        graph = state.graph
        waits = []
        for p in self.pushes:
            loop = _outermost_loop(p.context, state.home)
            waits.append(_saved.counter_for(loop).exit.node if loop is not None else p)
        handle = route(where, self.handle) if where is not None else self.handle
        # raw: a wait may sit in another branch of a cond on the same predicate, live exactly when this is
        gate = graph.create_node(IDENTITY, [handle], name="gradients_saved", control_inputs=waits,
                                 context=where).outputs[0]
        self._ready[id(where)] = gate
        return gate


# values that are not functions of their inputs alone in one iteration
_NOT_PURE = frozenset({MERGE, SWITCH, ENTER, EXIT, NEXT_ITERATION, LOOP_COND, PLACEHOLDER})


def _outermost_loop(ctx, top) -> WhileContext | None:
    found = None
    for c in ancestors(ctx):
        if c is top:
            break
        if isinstance(c, WhileContext):
            found = c
    return found


def _shape_source(t: Tensor, index: ForwardIndex) -> Tensor:
    """A tensor with the same shape as `t` in the outermost context possible."""
    while True:
        n = t.node
        if n.op == SWITCH and n in index.cond_unit:
            t = n.inputs[0]
        elif n.op == ENTER and n.attrs["is_constant"]:
            t = n.inputs[0]
        else:
            return t


def _short(t: Tensor) -> str:
    return t.node.name.rsplit("/", 1)[-1]
