"""The "recompute" memory policy: a gradient loop that computes forward values again instead of popping them.

Under "keep" (grad/mirrors.py) a forward loop saves, in every iteration, each value
its gradient reads. A loop built with `memory_policy="recompute", checkpoint_every=k`
saves only its loop state (the values of its loop variables at the start of an
iteration) every k-th iteration, and its gradient loop rebuilds what the rules read:

- k == 1: the backward iteration for forward iteration i pops the state of i and runs
  the ops of the body that lead to the values its rules read (a *replay* of those
  ops, built in the gradient loop body, conds of the body included);
- k > 1: the forward loop saves the state of iterations 0, k, 2k, ... (a push inside
  a cond on `i % k == 0`). The backward iteration that reaches the last iteration e
  of a segment [c, c+k) (the first one of the segment the gradient loop meets) pops
  the checkpoint c and runs the body forward from it, in an inner loop, up to e,
  keeping on a stack, per iteration, the values of the body's own context that the
  gradient reads (which that forward run computes anyway); each backward iteration
  then pops its own slot, and replays from those only what lies in conds of the body.
  Memory: N/k checkpoints and the values of one segment of k iterations, instead of
  those of all N; work: one more forward pass. A token carried by the gradient loop
  orders each pop after the refill of its segment, and each refill after the pops of
  the segment before, whatever `parallel_iterations` allows.

Loop variables that the body passes on unchanged are not saved (their value is the
one they entered with), nor are values computed from loop constants alone
(mirrors.py computes those once, outside the gradient loop).

A loop nested in the body is replayed as a copy of it (a while loop built from its
condition and body again, counting its iterations: its own gradient loop reads the trip
count); its own gradient saves or recomputes as its own policy says.

TensorArray writes of the body's own context (a list appended to in a converted loop)
are not run again: the flows they give (references to the array, no bytes of their own)
are saved in every iteration instead, and replays read the array through them.

A replay is only right when running the body's ops again gives the same values:
`check_body` refuses bodies (nested loops included) with effects (Variable reads of a
Variable the loop changes, Variable writes, random draws, prints, asserts), stack ops,
TensorArray writes inside conds or loops of the body, and ordering control edges, naming
the loop and the op and saying to use "keep" or "swap" for that loop.
"""
from __future__ import annotations

import weakref

import numpy as np

from grad import saved as _saved
from grad.analysis import is_within, variable_of
from graph import dtypes as _dt
from graph.control_flow.cond import cond
from graph.control_flow.contexts import CondContext, WhileContext
from graph.control_flow.stack import add_popped_value, add_pushed_value, stack_pop
from graph.control_flow.while_loop import while_loop
from graph.core import Node, Tensor, route
from graph.errors import GraphError
from graph.op_names import ENTER, EXIT, IDENTITY, MERGE, SWITCH
from graph.op_registry import get_opdef
from graph.ops.conversion import constant
from graph.ops.math import add, equal, less, logical_or, mod, sub

# loops whose bodies were found fit for a replay (a body does not change once its loop is built)
_CHECKED: "weakref.WeakSet[WhileContext]" = weakref.WeakSet()
# gradient loops that refill segments of states (k > 1) -> the forward loop they differentiate
_SEGMENTED: "weakref.WeakKeyDictionary[WhileContext, WhileContext]" = weakref.WeakKeyDictionary()


def check_differentiable(loop: WhileContext) -> None:
    """Raises if `loop` is the gradient loop of a loop recomputed from checkpoints every k > 1
    iterations: its segment refills (stacks pushed in an inner loop) have no gradient of their own."""
    forward = _SEGMENTED.get(loop)
    if forward is not None:
        raise GraphError(
            f"gradients: the gradient of {forward.describe()} is differentiated again here, but that loop has "
            f"memory_policy='recompute' with checkpoint_every={forward.checkpoint_every}: the segments its "
            "gradient loop recomputes cannot be differentiated. Use checkpoint_every=1, or memory_policy='keep' "
            "or 'swap', for that loop.", forward.source)


def check_body(loop: WhileContext) -> None:
    """Raises a GraphError at the loop's line when running its body again could give other values
    or effects (see the module docstring)."""
    if loop in _CHECKED:
        return
    for n in loop.graph.nodes:
        ctx = n.context
        if ctx is None or not is_within(ctx, loop):
            continue
        what = _effect(n, ctx is loop)
        if what is not None:
            raise _refusal(loop, n, *what)
    if loop.has_effects:
        raise _refusal(loop, None, "has effects (ordered ops)", "they would happen again")
    _CHECKED.add(loop)


# TensorArray ops that write: in the loop's own context their flows are saved, not computed again
_ARRAY_WRITES = frozenset({"TensorArrayWrite", "TensorArrayUnstack", "TensorArrayScatter"})


def _effect(n: Node, in_body: bool):
    """(what the op does, why a replay cannot do it again) for an op that a replay must not run;
    `in_body`: `n` is in the loop's own context (not in a cond or loop inside it)."""
    op = n.op
    if op == "ReadVariable":   # reads of a Variable the loop never assigns are hoisted out of it
        return f"reads Variable {_variable_name(n)}, which the loop assigns", \
            "a replay would read the value it has when the gradient runs"
    if op.startswith("Assign"):
        return f"assigns Variable {_variable_name(n)}", "a replay would assign it again"
    if op in ("RandomUniform", "RandomNormal", "Categorical") or op.startswith("Random"):
        return "draws random numbers", "a replay would draw other numbers"
    if op in ("Print", "Assert"):
        return f"has a {op}", "a replay would run it again"
    if op == "TensorArrayNew" or (op in _ARRAY_WRITES and in_body):
        return None
    if op in _ARRAY_WRITES:
        return "writes a TensorArray inside a cond or a loop of the body", "a replay would write it again"
    if op.startswith("TensorArray") and get_opdef(op).stateful:
        return f"has a {op}", "a replay would write the array again"
    if op.startswith("Stack"):
        return "uses a stack", "a replay would push or pop again"
    d = get_opdef(op)
    if d.stateful or d.ordered:
        return f"has a stateful op ({op})", "a replay could give another value"
    return None


def _variable_name(n: Node) -> str:
    try:
        return repr(variable_of(n).name)
    except (GraphError, AttributeError):
        return n.name


def _refusal(loop: WhileContext, n: Node | None, what: str, why: str) -> GraphError:
    at = f" ({n.op} at {n.source})" if n is not None and n.source is not None else ""
    return GraphError(
        f"gradients: {loop.describe()} has memory_policy='recompute', but its body {what}{at}: its gradient "
        f"cannot compute forward values again ({why}). Build this loop with memory_policy='keep' or 'swap' "
        "(transpile.loop_options(memory_policy=...) inside a converted loop).", loop.source)


class Recompute:
    """The forward values of one recomputed loop, rebuilt inside its gradient loop (one per gradient
    loop built: `gradients` builds one gradient loop per forward loop and call)."""

    def __init__(self, state, loop: WhileContext, counter):
        check_body(loop)
        self.state = state
        self.graph = loop.graph
        self.loop = loop
        self.counter = counter
        self.k = loop.checkpoint_every
        saved_vars = [k for k, sw in enumerate(loop.switches) if sw.outputs[1] is not counter.body]
        # loop variables the body passes on unchanged hold the value they entered with
        self.fixed = [k for k in saved_vars if loop.next_iterations[k].inputs[0] is loop.switches[k].outputs[1]]
        self.carried = [k for k in saved_vars if k not in self.fixed]
        self.values = [loop.switches[k].outputs[1] for k in self.carried]
        self._checkpoints: Tensor | None = None     # the stack of saved states
        self._refill: _Refill | None = None         # k > 1: how a segment is computed again and kept
        self._kept_values: dict[Tensor, Tensor] = {}
        self._replay: _Replay | None = None
        # TensorArray flows of the body's own context (see `flow`): their forward push, the flows in
        # its slot, and per context that pops them, the pop (all pops of a slot give all its values)
        self._flow_handle: Tensor | None = None
        self._flow_push: Node | None = None
        self._flows: list[Tensor] = []
        self._flow_pops: dict[int, tuple] = {}
        self._flow_outs: dict[tuple[Tensor, int], Tensor] = {}
        self.backward = None
        self.index = None
        self._token_in = self._token_out = None

    # -- the gradient loop's side -----------------------------------------------------------
    def loop_vars(self) -> list[Tensor]:
        """Initial values of the gradient-loop variables this adds (k > 1: the segment token)."""
        return [constant(np.int64(0))] if self.k > 1 else []

    def start(self, rec, extra: list[Tensor]) -> None:
        """The gradient loop body (`rec.backward`) is being built; `extra` are the loop_vars' values."""
        self.backward = rec.backward
        self.index = rec.index
        self._token_in = self._token_out = extra[0] if extra else None

    def finish(self) -> list[Tensor]:
        """Next values of the loop_vars, once the gradient loop body is built."""
        return [self._token_out] if self.k > 1 else []

    def value(self, t: Tensor) -> Tensor:
        """Forward tensor `t` of the loop body (or of a cond in it), computed again where the
        gradient of its context is built."""
        if self._replay is None:
            if self.k == 1:
                leaves = self._state_leaves(self._restored_state())
                self._replay = _Replay(self, leaves, self.index, {self.loop: self.backward})
            else:   # values of the loop's own context come from the segment (see `_kept`)
                self._replay = _Replay(self, {}, self.index, {self.loop: self.backward}, kept=self._kept)
        return self._replay.value(t)

    # -- checkpoints ------------------------------------------------------------------------
    def _keys(self, key: Tensor) -> list[Tensor]:
        """Stack keys: the indices of the enclosing loops being differentiated, then `key`."""
        recs = self.state.records_upto(self.loop)
        return [r.index for r in recs[:-1]] + [key]

    def _save_checkpoints(self) -> Tensor:
        """The stack that the forward loop fills with its state every k-th iteration."""
        if self._checkpoints is not None:
            return self._checkpoints
        state, graph, loop = self.state, self.graph, self.loop
        handle = state.new_stack("checkpoints of " + loop.describe())
        keys = [r.counter.body for r in state.records_upto(loop)]
        if self.k == 1 and self.values:
            state.push(handle, self.values, loop, keys, name="checkpoint")
        elif self.values:
            with graph.in_context(loop), graph.control_dependencies(None), \
                    graph.name_scope(loop.frame_name + "/"):
                every_k = equal(mod(self.counter.body, np.int64(self.k)), np.int64(0))

                branch = []
                cond(every_k, lambda: branch.append(graph.context), lambda: None, name="checkpoint_every")
                # pushed once both branches exist: the counter waits for the branch taken (grad.saved)
                with graph.in_context(branch[0]):
                    state.push(handle, [route(branch[0], v) for v in self.values], branch[0], keys,
                               name="checkpoint")
        self._checkpoints = handle
        return handle

    def _pop(self, handle: Tensor, key: Tensor, name: str, after: Node | None = None) -> list[Tensor]:
        """The saved state under `key` (built here, after node `after` of this context if given)."""
        if not self.values:
            return []
        if after is not None:
            handle = self.graph.create_node(IDENTITY, [handle], name=name + "_after",
                                            control_inputs=[after]).outputs[0]
        return stack_pop(handle, self._keys(key), [v.dtype for v in self.values], [v.shape for v in self.values],
                         name=name)

    def _push(self, handle: Tensor, values: list[Tensor], key: Tensor) -> Node:
        keys = self._keys(key)
        return self.graph.create_node("StackPush", [handle, *values, *keys],
                                      {"swap_memory": False, "num_values": len(values)}, name="segment")

    def _restored_state(self) -> list[Tensor]:
        """k == 1, in the gradient loop body: the state at the start of the forward iteration `index`."""
        checkpoints = self._save_checkpoints()
        with self.graph.in_context(self.backward), self.graph.control_dependencies(None), \
                self.graph.name_scope("recompute/"):
            return self._pop(checkpoints, self.index, "checkpoint")

    def _kept(self, t: Tensor) -> Tensor:
        """k > 1: forward tensor `t` of the loop's own context in iteration `index`, as the refill of
        its segment computed it and kept it on the segment stack (the refill computes the body anyway:
        keeping what the gradient reads saves computing it once more)."""
        got = self._kept_values.get(t)
        if got is not None:
            return got
        if self._refill is None:
            self._build_refill()
        r, graph = self._refill, self.graph
        with graph.control_dependencies(None):
            for replay, push, ctx in ((r.step, r.push_step, r.inner), (r.last, r.push_last, r.branch)):
                with graph.in_context(ctx):
                    add_pushed_value(push, route(ctx, replay.value(t)))
        out = self._kept_values[t] = add_popped_value(r.pop, t.dtype, t.shape)
        return out

    def _build_refill(self) -> None:
        """k > 1, in the gradient loop body: the refill of a segment's stack (see the module docstring)
        and the pop of this iteration's slot. A slot starts with the iteration index alone; `_kept`
        adds the values the gradient reads."""
        graph, state = self.graph, self.state
        checkpoints = self._save_checkpoints()
        refill = _Refill()
        with graph.in_context(self.backward), graph.control_dependencies(None), graph.name_scope("recompute/"):
            segment = state.new_stack("segment of " + self.loop.describe())
            _SEGMENTED[self.backward] = self.loop
            index, k = self.index, np.int64(self.k)
            trips = state.resolve(self.counter.exit)
            start = sub(index, mod(index, k))
            # the backward iteration that meets a segment first: its last iteration
            first_met = logical_or(equal(index, sub(trips, np.int64(1))), equal(mod(index, k), k - 1))
            token = self._token_in

            def refill_segment():
                # after the pops of the segment before (see the token below): one segment held at a time
                after = graph.create_node(IDENTITY, [token], name="previous_popped")
                ckpt = self._pop(checkpoints, start, "checkpoint", after=after)

                def body(j, *s):
                    refill.inner, refill.j = graph.context, j
                    refill.push_step = self._push(segment, [j], j)
                    refill.step = _Replay(self, self._state_leaves(list(s)), j, {self.loop: graph.context})
                    nxt = [refill.step.value(self.loop.next_iterations[c].inputs[0]) for c in self.carried]
                    j = graph.create_node(IDENTITY, [add(j, np.int64(1))], name="pushed",
                                          control_inputs=[refill.push_step]).outputs[0]
                    return (j, *nxt)
                j, *s = while_loop(lambda j, *s: less(j, index), body, (start, *ckpt), parallel_iterations=1,
                                   name="forward_again", memory_policy="keep")
                refill.branch = graph.context
                refill.last = _Replay(self, self._state_leaves(list(s)), index, {self.loop: graph.context})
                refill.push_last = self._push(segment, [route(graph.context, index)], index)
                return graph.create_node(IDENTITY, [token], name="refilled",
                                         control_inputs=[refill.push_last, j.node]).outputs[0]

            refilled = cond(first_met, refill_segment, lambda: token, name="segment")
            ready = graph.create_node(IDENTITY, [segment], name="segment_ready",
                                      control_inputs=[refilled.node]).outputs[0]
            refill.pop = stack_pop(ready, self._keys(index), [np.int64], [()], name="kept")[0].node
            # the token the next backward iteration gets: its segment is refilled and this slot popped
            self._token_out = graph.create_node(IDENTITY, [refilled], name="popped",
                                                control_inputs=[refill.pop]).outputs[0]
        self._refill = refill
        # flows read while the inner loop was traced: the iteration after it pops its slot too
        self._flow_pop(refill.inner, refill.j)
        self._flow_pop(refill.branch, index)

    def flow(self, t: Tensor, ctx, key: Tensor) -> Tensor:
        """A value of `variant` dtype of the body's own context (a TensorArray flow: what a write gives,
        a new array), for a replay in `ctx` of the iteration `key`. It is not computed again (a replay
        would write the array again) but saved by the forward loop in every iteration: a reference to
        the array, which holds no bytes of its own; its storage has every element written by then."""
        out = self._flow_outs.get((t, id(ctx)))
        if out is not None:
            return out
        state = self.state
        if not any(f is t for f in self._flows):
            if self._flow_push is None:
                self._flow_handle = state.new_stack("TensorArray flows of " + self.loop.describe())
                keys = [r.counter.body for r in state.records_upto(self.loop)]
                self._flow_push = state.push(self._flow_handle, [t], self.loop, keys, name="flows")
            else:
                add_pushed_value(self._flow_push, t)
            self._flows.append(t)
            for c, pop in self._flow_pops.values():
                self._flow_outs[(t, id(c))] = add_popped_value(pop, t.dtype, t.shape)
        self._flow_pop(ctx, key)
        return self._flow_outs[(t, id(ctx))]

    def _flow_pop(self, ctx, key: Tensor) -> None:
        """The pop of the flows' slot of iteration `key` in context `ctx` (every key is popped once:
        k == 1 in the gradient loop body; k > 1 in the refill's inner loop and after it)."""
        if id(ctx) in self._flow_pops or self._flow_push is None:
            return
        graph = self.graph
        with graph.in_context(ctx), graph.control_dependencies(None):
            outs = stack_pop(self._flow_handle, self._keys(key), [f.dtype for f in self._flows],
                             [f.shape for f in self._flows], name="flows")
        self._flow_pops[id(ctx)] = (ctx, outs[0].node)
        for f, o in zip(self._flows, outs, strict=True):
            self._flow_outs[(f, id(ctx))] = o

    def _state_leaves(self, values: list[Tensor]) -> dict[Tensor, Tensor]:
        """Forward loop-variable tensors of the body -> their values in a replay."""
        loop, leaves = self.loop, {}
        for k, v in zip(self.carried, values, strict=True):
            leaves[loop.switches[k].outputs[1]] = leaves[loop.merges[k].outputs[0]] = v
        return leaves


class _Refill:
    """The parts of a segment's refill (k > 1) that `Recompute._kept` adds values to."""
    inner = branch = None     # the inner loop's body; the branch of the cond that runs it
    j = None                  # the inner loop's iteration index
    step = last = None        # replays in them: of iterations start..index-1, and of `index`
    push_step = push_last = None
    pop = None                # the StackPop of this backward iteration's slot


class _Replay:
    """The body's ops that lead to the values asked for, built again in other contexts: the forward
    loop's own context in `targets[loop]`, a cond of the body in the mirror of its branch (the
    gradient cond, which takes the same branch) or in a copy of the cond built here."""

    def __init__(self, owner: Recompute, leaves: dict, index: Tensor, targets: dict, kept=None):
        self.owner = owner
        self.kept = kept      # values of the loop's own context: kept(t) gives them (k > 1)
        self.state = owner.state
        self.loop = owner.loop
        self.graph = owner.graph
        self.leaves = leaves
        self.leaves[owner.counter.body] = index
        self.index = index
        self.targets = targets
        self.memo: dict = {}

    def value(self, t: Tensor, where=None) -> Tensor:
        """`t` computed again, in the target of its context (`where`, the consumer's target, for a
        context that has none: see `_target`)."""
        got = self.leaves.get(t)
        if got is not None:
            return got
        state, loop = self.state, self.loop
        n = t.node
        if n.op == ENTER and n.context is loop:
            if not n.attrs["is_constant"]:
                raise GraphError(f"gradients: internal error: loop variable Enter {n.name} reached in a replay")
            return state.resolve(n.inputs[0])
        if n.op == ENTER and n.context is not loop and is_within(n.context, loop):
            if not n.attrs["is_constant"]:
                raise GraphError(f"gradients: internal error: loop variable Enter {n.name} of a nested loop "
                                 "reached in a replay")
            return self.value(n.inputs[0], where)  # routed into the copy of the nested loop by its consumer
        ctx = state.value_context(t)
        if ctx is None or not is_within(ctx, loop):
            return state.resolve(t)
        for k in self.owner.fixed:
            if t is loop.switches[k].outputs[1] or t is loop.merges[k].outputs[0]:
                return state.resolve(loop.enters[k].inputs[0])
        if self.kept is not None and ctx is loop and not state._loop_invariant(n, loop):
            return self.kept(t)
        if ctx is loop and t.dtype is _dt.variant:
            return self.owner.flow(t, self.targets[loop], self.index)
        target = self._target(ctx, where)
        key = (t, id(target))
        out = self.memo.get(key)
        if out is not None:
            return out
        unit = state.index.cond_unit.get(n)
        if ctx is loop and state._loop_invariant(n, loop):
            out = state._recomputed(t)
        elif unit is not None and n.op == SWITCH:
            out = route(target, self.value(n.inputs[0], target))
        elif unit is not None and n.op == MERGE and n in unit.merges:
            out = self._cond(unit, target)[unit.merges.index(n)]
        elif n.op == EXIT:
            inner = state.index.exit_loop.get(n) or n.inputs[0].node.frame
            out = self._loop(inner, target)[inner.exits.index(n)]
        else:
            out = self._op(n, target).outputs[t.index]
        self.memo[key] = out
        return out

    def _target(self, ctx, where=None):
        """Where values of forward context `ctx` are built: the loop's replay context, a branch of a
        cond copy being built, the mirror of a branch (the gradient cond takes the same branch), else
        `where`: a value a gradient built in the body read from another cond's branch, through a
        Switch that is live only when that branch ran (grad.mirrors's imports), is computed again
        where it is read."""
        got = self.targets.get(ctx)
        if got is not None:
            return got
        mirror = self.state.mirror.get(ctx)
        if mirror is not None and self.state.visible(mirror):
            return mirror
        if where is not None:
            return where
        raise GraphError(f"gradients: internal error: no context to compute a value of {ctx.describe()} again in")

    def _op(self, n: Node, target) -> Node:
        controls = [c for c in n.control_inputs if not _is_pivot(c)]
        if controls:
            raise _refusal(self.loop, n, f"orders {n.op} {n.name} after {controls[0].name} by a control "
                           "dependency", "a replay cannot keep that order")
        ins = [self.value(x, target) for x in n.inputs]
        with self.graph.in_context(target), self.graph.control_dependencies(None):
            return self.graph.create_node(n.op, ins, dict(n.attrs), name="recomputed_" + n.name.rsplit("/", 1)[-1],
                                          source=n.source)

    def _cond(self, s, target) -> list[Tensor]:
        """Outputs of a copy of forward cond `s` (with its predicate recomputed), built in `target`."""
        key = (s, id(target))
        out = self.memo.get(key)
        if out is not None:
            return out
        pred = self.value(s.pred)

        def branch(b):
            def build():
                ctx = next(c for c in s.branches if c.branch == b)
                self.targets[ctx] = self.graph.context
                try:
                    return [self.value(m.inputs[b]) for m in s.merges]
                finally:
                    del self.targets[ctx]
            return build
        with self.graph.in_context(target), self.graph.control_dependencies(None):
            out = cond(pred, branch(1), branch(0), name="recomputed_cond")
        self.memo[key] = out
        return out


    def _loop(self, inner: WhileContext, target) -> list[Tensor]:
        """Exit values of a copy of nested loop `inner`, built in `target`: its condition and body
        computed again from the copy's loop variables. Its iteration counter (grad.saved: the trip
        count its own gradient loop reads) is counted again too."""
        key = (inner, id(target))
        out = self.memo.get(key)
        if out is not None:
            return out
        graph = self.graph
        counter = _saved.counter_for(inner)   # made now, so that the copy counts as the loop will
        shapes = [m.outputs[0].shape for m in inner.merges]
        init = []
        for k, e in enumerate(inner.enters):
            counts = inner.switches[k].outputs[1] is counter.body
            v = constant(np.int64(0)) if counts else self.value(e.inputs[0], target)
            with graph.in_context(target):
                v = graph.create_node(IDENTITY, [v], name="loop_init").outputs[0]
            v.shape = shapes[k]   # the loop's relaxed shapes: the copy is traced once
            init.append(v)
        traced = []

        def bind(ports, values):
            traced.append(graph.context)
            if len(traced) > 2:   # a retrace would find this replay's records of the first one rolled back
                raise GraphError(f"gradients: internal error: the copy of {inner.describe()} was traced again")
            self.targets[inner] = graph.context
            for p, v in zip(ports, values, strict=True):
                self.leaves[p] = v

        def unbind(ports):
            del self.targets[inner]
            for p in ports:
                del self.leaves[p]

        def cond_fn(*vs):
            ports = [m.outputs[0] for m in inner.merges]
            bind(ports, vs)
            try:
                return self.value(inner.loop_cond.inputs[0])
            finally:
                unbind(ports)

        def body_fn(*vs):
            ports = [sw.outputs[1] for sw in inner.switches]
            bind(ports, vs)
            try:
                return [add(v, np.int64(1)) if sw.outputs[1] is counter.body else self.value(nxt.inputs[0])
                        for v, sw, nxt in zip(vs, inner.switches, inner.next_iterations, strict=True)]
            finally:
                unbind(ports)
        with graph.in_context(target), graph.control_dependencies(None):
            out = while_loop(cond_fn, body_fn, init, parallel_iterations=inner.parallel_iterations,
                             memory_policy="keep", name="recomputed_loop")
        self.memo[key] = out
        return out


def _is_pivot(node: Node) -> bool:
    """Whether `node` is a gate of its context (a pivot), not a dependence on a value or an effect."""
    ctx = node.context
    if isinstance(ctx, WhileContext):
        return ctx.is_pivot(node)
    if isinstance(ctx, CondContext):
        return getattr(ctx, "_pivot", None) is node
    return False
