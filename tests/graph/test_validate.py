"""graph.validate(): every graph the builders make is valid (and lists deterministically); each kind
of corruption is reported with the node it concerns and the listing."""
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import graph as G
from graph.errors import GraphError
from tests.exec import programs as P


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(P.programs)
def test_built_graphs_are_valid_and_list_deterministically(program):
    g, _, _ = P.build_graph(program)
    g.validate()
    again, _, _ = P.build_graph(program)
    assert str(g) == str(again)
    assert g.to_dot().count("->") == again.to_dot().count("->")


def _loop_and_cond():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float32, [], name="x")
        _, s = G.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * x),
                            (G.constant(0), G.constant(1.0, np.float32)))
        G.cond(s > 1, lambda: s + 1, lambda: s - 1)
    return g


def _first(g, op, in_loop=None):
    return next(n for n in g.nodes if n.op == op and (in_loop is None or (n.frame is not None) == in_loop))


def _set_attr(node, key, value):
    node.attrs[key] = value


CORRUPTIONS = {
    "loop body reads an outer tensor without Enter": (
        lambda g: _first(g, "Mul").update_input(1, g.get_tensor("x:0")), "while/Mul", "expected while"),
    "outer node reads a loop-body tensor": (
        lambda g: _first(g, "Greater").update_input(0, _first(g, "Mul").outputs[0]), "Greater", "in frame while"),
    "NextIteration feeds a non-Merge": (
        lambda g: _first(g, "Mul").update_input(0, _first(g, "NextIteration").outputs[0]), "while/Mul",
        "may only feed a Merge"),
    "Merge back edge that is not a NextIteration": (
        lambda g: _first(g, "Merge", True).update_input(1, _first(g, "Add", True).outputs[0]), "while/Merge",
        "cycle"),
    "Enter names another frame": (
        lambda g: _set_attr(_first(g, "Enter"), "frame_name", "elsewhere"), "while/Enter", "'elsewhere'"),
    "Enters of one frame disagree on parallel_iterations": (
        lambda g: _set_attr(_first(g, "Enter"), "parallel_iterations", 1), "parallel_iterations=1 at while/Enter",
        "parallel_iterations=32 at while/Enter_1"),
    "Exit reads from the root frame": (
        lambda g: _first(g, "Exit").update_input(0, g.get_tensor("x:0")), "while/Exit", "not in a loop"),
    "control dependency cycle": (
        lambda g: _first(g, "Greater").add_control_input(_first(g, "Merge", False)), "Greater", "cycle"),
}


@pytest.mark.parametrize("what", list(CORRUPTIONS))
def test_corruption_is_reported(what):
    corrupt, node, text = CORRUPTIONS[what]
    g = _loop_and_cond()
    g.validate()
    corrupt(g)
    with pytest.raises(GraphError, match="invalid graph") as info:
        g.validate()
    problems = str(info.value).split("\n\n")[0]
    assert node in problems and text in problems, problems
    assert "%x = Placeholder" in str(info.value)  # the listing is shown


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(P.programs)
def test_dot_output_is_accepted_by_graphviz(program):
    g, _, _ = P.build_graph(program)
    for dot in (g.to_dot(), g.to_dot(expand=True)):
        done = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    has_control_flow = any(n.context is not None for n in g.nodes)
    assert ("cluster_" in g.to_dot(expand=True)) == has_control_flow
    assert ("shape=box3d" in g.to_dot()) == has_control_flow  # collapsed loops and conds
