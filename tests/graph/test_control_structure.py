"""graph.control_structure: frames and guards read off the dataflow, on graphs built by hand from the
primitives (no recorded contexts), malformed ones included; and, on random programs, that the executor's
branch skipping, the compiler and the validator agree with it."""
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import graph as G
from exec import Session
from exec.compiled.structure import Loop as CompiledLoop
from exec.compiled.structure import Unstructured, structure
from exec.plan import build_plan
from graph.control_structure import NEVER, ControlStructure, Literal
from graph.errors import GraphError
from graph.frames import enclosing_frames
from graph.index import in_graph_order, upstream
from graph.op_names import ENTER, EXIT, IDENTITY, LOOP_COND, MERGE, NEXT_ITERATION, SWITCH
from tests.exec import programs as P

HERE = "test_control_structure.py"


@dataclass(frozen=True)
class HandLoop:
    enter: G.Node
    merge: G.Node
    pred: G.Tensor
    switch: G.Node
    exit: G.Node


def _loop(g, name, init, cond_fn, body_fn, constants=()):
    """`while cond_fn(v): v = body_fn(v)` from the primitives; `constants` enter as loop constants and are
    passed to both functions after v."""
    attrs = {"frame_name": name, "is_constant": False, "parallel_iterations": 1}
    enter = g.create_node(ENTER, [init], attrs, context=None)
    consts = [g.create_node(ENTER, [c], {**attrs, "is_constant": True}, context=None).outputs[0] for c in constants]
    merge = g.create_node(MERGE, [enter.outputs[0], enter.outputs[0]], context=None)
    pred = g.create_node(LOOP_COND, [cond_fn(merge.outputs[0], *consts)], context=None).outputs[0]
    switch = g.create_node(SWITCH, [merge.outputs[0], pred], context=None)
    nxt = g.create_node(NEXT_ITERATION, [body_fn(switch.outputs[1], *consts)], context=None)
    merge.update_input(1, nxt.outputs[0])
    return HandLoop(enter, merge, pred, switch, g.create_node(EXIT, [switch.outputs[0]], context=None))


def _cond(g, pred, x, true_fn, false_fn):
    """Merge(false_fn(Switch(x, pred):0), true_fn(Switch(x, pred):1)): (the Switch, the Merge)."""
    switch = g.create_node(SWITCH, [x, pred], context=None)
    merge = g.create_node(MERGE, [false_fn(switch.outputs[0]), true_fn(switch.outputs[1])], context=None)
    return switch, merge


def _nested_loops():
    """for i < 3: (for j < i: j += i); i += j, the inner loop's start and bound from the outer body."""
    g = G.Graph()
    with g.as_default():
        three = G.constant(np.int64(3))
        inner = {}

        def outer_body(i, _n):
            inner["loop"] = _loop(g, "inner", G.sub(i, i), lambda j, b: G.less(j, b),
                                  lambda j, b: G.add(j, b), constants=(i,))
            return G.add(i, G.identity(inner["loop"].exit.outputs[0]))

        outer = _loop(g, "outer", G.constant(np.int64(0)), lambda i, n: G.less(i, n), outer_body, constants=(three,))
    return g, outer, inner["loop"]


def test_nested_loops_have_nested_frames():
    g, outer, inner = _nested_loops()
    flow = ControlStructure(g.nodes)
    assert flow.problems == []
    fo, fi = flow.frame(outer.merge), flow.frame(inner.merge)
    assert (fo.name, fi.name) == ("outer", "inner")
    assert fo.parent is flow.root and fi.parent is fo and list(flow.root.children.values()) == [fo]
    assert fi.is_inside(fo) and fi.is_inside(flow.root) and not fo.is_inside(fi) and not fo.is_inside(fo)
    assert flow.frame(inner.enter) is fi and flow.input_frame(inner.enter) is fo
    assert flow.frame(inner.exit) is fo and flow.exit_frame(inner.exit) is fi and flow.input_frame(inner.exit) is fi
    assert flow.frame(outer.exit) is flow.root and fi.exits == [inner.exit] and fo.exits == [outer.exit]
    assert [f.name for f in flow.frames()] == ["", "outer", "inner"]
    assert sum(len(f.nodes) for f in flow.frames()) == len(g.nodes)


def test_a_cond_in_a_loop_is_guarded_relative_to_the_loop_frame():
    g = G.Graph()
    with g.as_default():
        parts = {}

        def body(x, _limit, five):
            p = G.greater(x, five)
            parts["p"] = p
            parts["switch"], parts["merge"] = _cond(g, p, x, lambda t: G.mul(t, t), lambda f: G.add(f, f))
            return parts["merge"].outputs[0]

        loop = _loop(g, "loop", G.constant(1.0), lambda x, limit, _five: G.less(x, limit), body,
                     constants=(G.constant(100.0), G.constant(5.0)))
    flow = ControlStructure(g.nodes)
    assert flow.problems == []
    taken = Literal(flow.value_key(loop.pred), True)
    p = Literal(flow.value_key(parts["p"]), True)
    mul, add = parts["merge"].inputs[1].node, parts["merge"].inputs[0].node
    assert flow.guard(loop.merge) == frozenset() and flow.guard(loop.pred.node) == frozenset()
    assert flow.guard(parts["switch"]) == {taken}
    assert flow.guard(mul) == {taken, p} and flow.guard(add) == {taken, Literal(p.key, False)}
    assert flow.guard(parts["merge"]) == {taken}  # live when either branch is
    assert flow.port_guard(loop.switch.outputs[0]) == {Literal(taken.key, False)}
    assert flow.guard(loop.exit) == frozenset()  # at the root, where the loop always runs


def test_a_loop_in_a_cond_runs_under_the_branch_guard():
    g = G.Graph()
    with g.as_default():
        q = G.placeholder(np.bool_, [], name="q")
        built = {}

        def true_fn(t):
            built["loop"] = _loop(g, "loop", t, lambda v, n: G.less(v, n), lambda v, n: G.add(v, v),
                                  constants=(G.constant(10.0),))
            return built["loop"].exit.outputs[0]

        _, merge = _cond(g, q, G.constant(0.0), true_fn, lambda f: G.neg(f))
    flow = ControlStructure(g.nodes)
    assert flow.problems == []
    loop = built["loop"]
    branch = frozenset({Literal(flow.value_key(q), True)})
    assert flow.loop_guard(flow.frame(loop.merge)) == branch and flow.entry_guard(loop.enter) == branch
    assert flow.guard(loop.exit) == branch and flow.guard(merge) == frozenset()
    assert flow.guard(loop.enter) == frozenset()  # in its own frame: there in every iteration


def test_predicates_are_told_apart_by_the_value_they_forward():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [], name="x")
        p = G.greater(x, 0.0)
        same = g.create_node(IDENTITY, [p]).outputs[0]
        s1 = g.create_node(SWITCH, [x, p])
        s2 = g.create_node(SWITCH, [s1.outputs[1], same])
        never = G.neg(s2.outputs[0])  # needs p true (s1) and false (s2)
        both = G.neg(s2.outputs[1])
    flow = ControlStructure(g.nodes)
    assert flow.value_key(p) == flow.value_key(same)
    assert flow.guard(never.node) is NEVER and flow.guard(both.node) == {Literal(flow.value_key(p), True)}


def _body_reads_outside():
    """A loop body that reads a root value directly, without an Enter."""
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [], name="x")
        loop = _loop(g, "loop", G.constant(0.0), lambda v, n: G.less(v, n), lambda v, n: G.add(v, x),
                     constants=(G.constant(3.0),))
    return g, loop


def test_an_edge_across_frames_is_a_problem_naming_the_node_and_line():
    g, loop = _body_reads_outside()
    (problem,) = ControlStructure(g.nodes).problems
    assert problem.node.op == "Add" and "input x:0 is in frame <root>, expected loop" in str(problem)
    assert HERE in str(problem)
    with pytest.raises(GraphError, match="expected loop") as info:
        g.validate()
    assert HERE in str(info.value).split("\n\n")[0]
    with pytest.raises(Unstructured, match=f"input x:0 is in frame <root>, expected loop .*{HERE}"):
        structure([loop.exit.outputs[0]], [], [g.get_tensor("x:0")])


def test_an_exit_from_the_root_and_a_merge_of_next_iterations_are_rejected():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [], name="x")
        out = g.create_node(EXIT, [x], context=None)
        lonely = g.create_node(MERGE, [x, x], context=None)
        nxt = g.create_node(NEXT_ITERATION, [G.neg(lonely.outputs[0])], context=None)
        lonely.update_input(0, nxt.outputs[0])
        lonely.update_input(1, nxt.outputs[0])
    messages = [str(p) for p in ControlStructure(g.nodes).problems]
    assert any(f"{out.name}: Exit input x:0 is not in a loop" in m and HERE in m for m in messages), messages
    assert any(f"Merge {lonely.name} has only NextIteration inputs" in m for m in messages), messages


def test_a_cycle_without_a_loop_merge_is_analysed_without_hanging():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [], name="x")
        a = G.add(x, x)
        b = G.neg(a)
        a.node.update_input(0, b)  # a -> b -> a
    flow = ControlStructure(g.nodes)
    assert flow.frame(a.node) is flow.root and flow.guard(a.node) == frozenset()
    with pytest.raises(GraphError, match="cycle that is not a loop back edge"):
        g.validate()


def test_fed_nodes_are_cut_and_live_in_the_root_frame():
    g, loop = _body_reads_outside()
    add = loop.switch.outputs[1]  # the body's Add reads the Switch's port 1 and x
    body_add = next(n for n in g.nodes if n.op == "Add")
    flow = ControlStructure(upstream([loop.exit], cut={body_add}), cut={body_add})
    assert flow.frame(body_add) is flow.root and flow.guard(body_add) == frozenset()
    assert add.node in flow.frame_of


# ----------------------------------------------------------------------------- the consumers agree

def _recorded_names(frame) -> tuple:
    return tuple(reversed([f.frame_name for f in enclosing_frames(frame)]))


def _static_names(frame) -> tuple:
    return tuple(reversed([f.name for f in frame.enclosing() if f.parent is not None]))


def _loops(steps):
    for s in steps:
        if isinstance(s, CompiledLoop):
            yield s
            yield from _loops(s.head + s.body + s.tail)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(P.programs)
def test_the_branch_skipping_the_compiler_and_the_validator_agree(program):
    g, ph, outs = P.build_graph(program)
    fetches, feeds = list(outs.values()), list(ph.values())
    g.validate()
    fed = {t.node for t in feeds}
    flow = ControlStructure(in_graph_order(upstream([t.node for t in fetches], cut=fed)), cut=fed)
    assert flow.problems == []
    for n in flow.nodes:  # the dataflow's frames are the ones the builders recorded
        if n not in fed:
            assert _static_names(flow.frame(n)) == _recorded_names(n.frame), n
    compiled = structure(fetches, [], feeds)
    by_name = {_static_names(f): f for f in flow.frames()}
    for loop in _loops(compiled.steps):
        assert [n.name for n in loop.frame.nodes] == [n.name for n in by_name[_static_names(loop.frame)].nodes]
    plan = build_plan(g, fetches, [], feeds, Session(g).runtime, False)
    for s, (b0, b1, *_) in plan.cond_switches.items():
        switch = plan.nodes[s]
        for port, b in ((0, b0), (1, b1)):
            if b >= 0:
                _assert_branch_guarded(flow, plan, switch, port, plan.branches[b])


def _assert_branch_guarded(flow, plan, switch, port, branch):
    """Every node a skipped branch drops what arrives for is live only where the Switch's port is (or
    never): the executor's branches are the analysis's guards."""
    literal = Literal(flow.value_key(switch.inputs[1]), bool(port))
    frame = flow.frame(switch)
    for x in branch.guarded:
        n = plan.nodes[x]
        if n.op == SWITCH and flow.value_key(n.inputs[1]) == literal.key:
            continue  # a Switch on the predicate that feeds only this branch
        g = _guard_in(flow, n, frame)
        assert g is NEVER or literal in g, (n, g, literal)


def _guard_in(flow, n, frame):
    """When `n` is live, seen from `frame`: its own guard there, else that of the loop nested in `frame`
    that holds it (an Enter into such a loop: when its input is live)."""
    if n.op == ENTER and flow.input_frame(n) is frame:
        return flow.entry_guard(n)
    if flow.frame(n) is frame:
        return flow.guard(n)
    loop = flow.frame(n)
    assert loop.is_inside(frame), n
    while loop.parent is not frame:
        loop = loop.parent
    return flow.loop_guard(loop)
