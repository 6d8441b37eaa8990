"""Forward-loop instrumentation for gradient loops: iteration counters and save barriers.

A loop that is differentiated gets an iteration counter, an extra loop variable
(0, 1, 2, ...; appended to the WhileContext's records) whose exit value is the trip count the gradient loop runs
backwards over, and whose body value keys the stack slots that iteration saves.
The counter's increment waits for every push of its iteration (through a
barrier Merge for pushes inside conds, and through the exit of the counter of
each nested loop), so the counter's exit fires only when everything the loop
saved is on its stacks: the gradient loop, which needs the trip count, can
never pop a slot before it is filled, whatever `parallel_iterations` lets run
concurrently. The loop's own predicate does not depend on the counter, so the
forward iterations are not serialised by it.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from grad.analysis import ancestors, is_within
from graph.control_flow.contexts import CondContext, CondState, WhileContext
from graph.core import Node, Tensor
from graph.op_names import IDENTITY, MERGE, NEXT_ITERATION, SWITCH
from graph.ops.conversion import constant

_COUNTERS: "weakref.WeakKeyDictionary[WhileContext, Counter]" = weakref.WeakKeyDictionary()
_BARRIERS: "weakref.WeakKeyDictionary[CondState, Barrier]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True, slots=True)
class Counter:
    loop: WhileContext
    body: Tensor   # the iteration index, live in iterations that run the body
    exit: Tensor   # the trip count, in the loop's outer context
    inc: Node      # index + 1: waits for everything its iteration saved


@dataclass(frozen=True, slots=True)
class Barrier:
    done: dict      # branch (0/1) -> Identity in that branch that waits for the branch's saves
    merge: Node     # fires once the taken branch's saves are done


def _alive(node: Node) -> bool:
    """False once a graph rollback (loop re-tracing) removed the node."""
    nodes = node.graph.nodes
    return 0 <= node.id < len(nodes) and nodes[node.id] is node


def counter_for(loop: WhileContext) -> Counter:
    """The loop's iteration counter, added on first use."""
    c = _COUNTERS.get(loop)
    if c is not None and _alive(c.inc):
        return c
    graph = loop.graph
    outer = loop.outer
    with graph.name_scope(loop.frame_name + "/"), graph.control_dependencies(None):
        zero = constant(np.int64(0))
        if outer is not None:
            with graph.in_context(outer):
                zero = graph.create_node(IDENTITY, [zero], name="counter_init").outputs[0]
        enter = loop.make_enter(zero, is_constant=False)
        with graph.in_context(loop):
            merge = graph.create_node(MERGE, [enter, enter], name="counter")
            switch = graph.create_node(SWITCH, [merge.outputs[0], loop.loop_cond.outputs[0]],
                                       name="counter_switch")
            exit_ = loop.make_exit(switch.outputs[0])
            inc = graph.create_node("Add", [switch.outputs[1], constant(np.int64(1))], name="counter_next")
            nxt = graph.create_node(NEXT_ITERATION, [inc.outputs[0]], name="counter_next_iteration")
        merge.update_input(1, nxt.outputs[0])
    # recorded like any loop variable, so readers of the loop structure see all of it
    loop.enters.append(enter.node)
    loop.merges.append(merge)
    loop.switches.append(switch)
    loop.exits.append(exit_)
    loop.next_iterations.append(nxt)
    c = Counter(loop, switch.outputs[1], exit_.outputs[0], inc)
    _COUNTERS[loop] = c
    return c


def existing_counter(loop: WhileContext) -> Counter | None:
    c = _COUNTERS.get(loop)
    return c if c is not None and _alive(c.inc) else None


def barrier_for(state: CondState) -> Barrier:
    """A Merge that fires when the taken branch of the cond has done its saves."""
    b = _BARRIERS.get(state)
    if b is not None and _alive(b.merge):
        return b
    outer = state.branches[0].outer
    graph = state.pred.graph
    done = {}
    with graph.control_dependencies(None):
        for ctx in state.branches:
            pivot = ctx.pivot
            with graph.in_context(ctx):
                done[ctx.branch] = graph.create_node(IDENTITY, [pivot.outputs[0]], name="saved")
        merge = graph.create_node(MERGE, [done[0].outputs[0], done[1].outputs[0]], name="saved_merge",
                                  context=outer)
    b = Barrier(done, merge)
    _BARRIERS[state] = b
    return b


def wait_in_iteration(node: Node, top, deferred: dict) -> None:
    """Makes the counter of node's loop wait for `node`, and so on outwards up to the frame of
    context `top` (where nothing counts iterations).

    A node inside a gradient loop or cond still being built (a key of `deferred`)
    is collected there instead, and handed back here once that is complete.
    """
    for c in ancestors(node.context):
        if c in deferred:
            deferred[c].append(node)
            return
    top_frame = top.frame if top is not None else None
    while True:
        ctx = node.context
        if ctx is None or ctx.frame is top_frame or not is_within(ctx, top):
            return
        if isinstance(ctx, CondContext):
            b = barrier_for(ctx.state)
            b.done[ctx.branch].add_control_input(node)
            node = b.merge
            continue
        c = counter_for(ctx)
        c.inc.add_control_input(node)
        node = c.exit.node
