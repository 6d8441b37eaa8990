"""The listing (`str(graph)`) and the Graphviz picture (`graph.to_dot()`) speak of the user's lines:
each node's file:line, loops and conds labelled by the line that built them, collapsed by default."""
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import graph as G

HERE = "test_printing.py"


def _line() -> int:
    """The caller's line number."""
    return sys._getframe(1).f_lineno


def _drawn_nodes(dot: str) -> list[str]:
    """The labels of the nodes a Graphviz source draws (boxes included)."""
    return re.findall(r'^\s*"[^"]+" \[label="((?:[^"\\]|\\.)*)"', dot, re.M)


def _construct_boxes(dot: str) -> list[str]:
    """The first label line of each collapsed loop or cond."""
    return [label.split("\\n")[0] for label in re.findall(r'\[label="((?:[^"\\]|\\.)*)", shape=box3d', dot)]


def _loop_in_loop():
    g = G.Graph()
    with g.as_default():
        n = G.placeholder(np.int64, [], name="n")
        lines = {}

        def inner(i, s):
            lines["inner"] = _line() + 1
            return G.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t + j), (G.constant(0), s))[1]

        lines["outer"] = _line() + 1
        out = G.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, inner(i, s)), (G.constant(0), G.constant(0)))
        lines["after"] = _line() + 1
        G.identity(out[1] * 2)
    return g, lines


def test_listing_gives_each_node_the_users_file_and_line():
    g, lines = _loop_in_loop()
    listing = str(g).splitlines()
    assert len(listing) == len(g.nodes)
    for node, text in zip(g.nodes, listing, strict=True):
        assert text.endswith(f"  # {HERE}:{node.source.lineno}"), text
    inner_adds = [t for t in listing if "Add" in t and "@while/while" in t]
    assert inner_adds and all(t.endswith(f"# {HERE}:{lines['inner']}") for t in inner_adds)
    assert any(t.startswith("%Mul = Mul") and t.endswith(f"# {HERE}:{lines['after']}") for t in listing)


def test_picture_collapses_loops_into_boxes_labelled_by_the_users_line():
    g, lines = _loop_in_loop()
    dot = g.to_dot()
    drawn = _drawn_nodes(dot)
    loops = [d for d in drawn if d.startswith("while")]
    body_size = sum(1 for n in g.nodes if n.frame is not None or n.op == "Exit")
    assert len(loops) == 1
    title, code, count = loops[0].split("\\n")
    assert title == f"while  {HERE}:{lines['outer']}" and count == f"{body_size} nodes"
    assert code.startswith("out = G.while_loop(lambda i, s: i < n,") and code.endswith("...")  # shortened
    assert "cluster_" not in dot and "while while" not in dot
    assert any(d.startswith("n\\nPlaceholder") for d in drawn)  # inputs keep their names
    # the other ops are one box per user line
    assert f"{HERE}:{lines['after']}\\nG.identity(out[1] * 2)\\n3 nodes" in drawn


def test_expand_true_draws_every_node_in_clusters_labelled_by_line():
    g, lines = _loop_in_loop()
    dot = g.to_dot(expand=True)
    assert len(_drawn_nodes(dot)) == len(g.nodes)
    labels = re.findall(r'label="(while[^"]*)"; color', dot)
    assert [label.split("\\n")[0] for label in labels] == [f"while  {HERE}:{lines['outer']}",
                                                           f"while/while  {HERE}:{lines['inner']}"]
    assert "while while" not in dot


def test_expand_names_the_lines_to_open():
    g, lines = _loop_in_loop()
    dot = g.to_dot(expand={f"{HERE}:{lines['outer']}"})
    drawn = _drawn_nodes(dot)
    # the outer loop is a cluster; the inner loop, built on another line, stays one box inside it
    assert re.search(rf'label="while  {HERE}:{lines["outer"]}\\n', dot) and "subgraph cluster_" in dot
    assert _construct_boxes(dot) == [f"while/while  {HERE}:{lines['inner']}"]
    assert sum(1 for d in drawn if d.startswith("while/Merge")) == 2
    # a frame name opens that loop too; the full path works as well as the base name
    assert g.to_dot(expand={"while/while"}).count("subgraph cluster_") == 2
    assert g.to_dot(expand={f"{__file__}:{lines['outer']}"}) == dot


def _cond_graph():
    g = G.Graph()
    with g.as_default():
        x = G.placeholder(np.float64, [], name="x")
        line = _line() + 1
        G.identity(G.cond(x > 0, lambda: x * 2.0, lambda: -x))
    return g, line


def test_a_cond_is_one_box_or_one_cluster_with_a_cluster_per_branch():
    g, line = _cond_graph()
    drawn = _drawn_nodes(g.to_dot())
    assert _construct_boxes(g.to_dot()) == [f"cond  {HERE}:{line}"]
    assert not any("Switch" in d or "Merge" in d for d in drawn)   # the cond's plumbing is in its box
    dot = g.to_dot(expand=True)
    assert re.search(rf'subgraph cluster_\d+ {{\n\s+label="cond  {HERE}:{line}\\n', dot)
    assert 'label="true branch"' in dot and 'label="false branch"' in dot
    cond_cluster = dot[dot.index(f'label="cond  {HERE}'):]
    assert '"cond/Switch" [label=' in cond_cluster and '"cond/Merge" [label=' in cond_cluster


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
@pytest.mark.parametrize("expand", [False, True])
def test_graphviz_accepts_the_pictures(expand):
    for g in (_loop_in_loop()[0], _cond_graph()[0]):
        done = subprocess.run(["dot", "-Tsvg"], input=g.to_dot(expand=expand), capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
