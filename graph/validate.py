"""Structural checks of a graph: inputs exist, frames agree, the only cycles are loop back edges."""
from __future__ import annotations

from graph.errors import GraphError
from graph.frames import input_frame, parent_frame
from graph.index import is_back_edge
from graph.node import Node
from graph.op_names import ENTER, EXIT, MERGE, NEXT_ITERATION
from graph.printing import format_graph


def validate(graph) -> None:
    """Raises GraphError listing what is structurally wrong (see the module doc)."""
    ids = {id(n) for n in graph.nodes}
    problems: list[str] = []
    for n in graph.nodes:
        problems.extend(_input_problems(n, ids))
        problems.extend(_control_problems(n, ids))
        problems.extend(_shape_problems(n))
    problems.extend(_frames(graph))
    problems.extend(_cycles(graph))
    if problems:
        raise GraphError("invalid graph:\n  " + "\n  ".join(problems[:20]) + "\n\n" + _listing(graph), None)


def _input_problems(n: Node, ids: set[int]) -> list[str]:
    """Data inputs in the graph and in the frame `input_frame` says; Exits leave a loop directly inside
    their own frame; back edges stay in their frame."""
    problems, want = [], input_frame(n)
    for t in n.inputs:
        have = t.node.frame
        if id(t.node) not in ids:
            problems.append(f"{n.name}: input {t.name} is not in the graph")
        elif n.op == EXIT:
            if have is None or parent_frame(have) is not n.frame:
                problems.append(f"{n.name}: Exit input {t.name} is not in a loop directly inside this frame")
        elif is_back_edge(t.node, n):
            if have is not n.frame:
                problems.append(f"{n.name}: back edge from {t.name} crosses frames")
        elif have is not want:
            problems.append(f"{n.name} ({n.op}): input {t.name} is in frame {_name(have)}, expected {_name(want)}")
        if t.node.op == NEXT_ITERATION and n.op != MERGE:
            problems.append(f"{n.name}: NextIteration {t.node.name} may only feed a Merge")
    return problems


def _control_problems(n: Node, ids: set[int]) -> list[str]:
    """Control inputs in the graph and in the frame of the node's inputs (an Exit waits in its loop's);
    none on a Merge."""
    problems, want = [], input_frame(n)
    for c in n.control_inputs:
        if id(c) not in ids:
            problems.append(f"{n.name}: control input {c.name} is not in the graph")
        elif c.frame is not want:
            problems.append(f"{n.name}: control input ^{c.name} is in frame {_name(c.frame)}, expected {_name(want)}")
    if n.op == MERGE and n.control_inputs:  # it fires on its first live input: none can wait
        problems.append(f"{n.name}: a Merge cannot have control inputs "
                        f"({', '.join('^' + c.name for c in n.control_inputs)}); order its inputs instead")
    return problems


def _shape_problems(n: Node) -> list[str]:
    if not n.inputs and not n.control_inputs and n.frame is not None:
        return [f"{n.name}: a node inside a loop frame needs at least one input"]
    return []


def _listing(graph) -> str:
    lines = format_graph(graph).splitlines()
    if len(lines) > 200:
        lines = lines[:200] + [f"... ({len(lines) - 200} more nodes)"]
    return "\n".join(lines)


def _frames(graph) -> list[str]:
    """Every Enter names the frame it enters; one frame name is one loop with one parallel_iterations."""
    problems, loops, windows = [], {}, {}
    for n in graph.nodes:
        if n.op != ENTER:
            continue
        frame, name = n.frame, n.attrs.get("frame_name")
        if frame is None or frame.frame_name != name:
            problems.append(f"{n.name}: Enter into frame {name!r} but it belongs to frame {_name(frame)}")
            continue
        if loops.setdefault(name, frame) is not frame:
            problems.append(f"{n.name}: two different loops use the frame name {name!r}")
        windows.setdefault(name, {}).setdefault(n.attrs.get("parallel_iterations"), n.name)
    for name, by_window in windows.items():
        if len(by_window) > 1:
            seen = ", ".join(f"parallel_iterations={par} at {node}" for par, node in by_window.items())
            problems.append(f"the Enters of frame {name!r} disagree: {seen}")
    return problems


def _name(frame) -> str:
    return "<root>" if frame is None else frame.frame_name


def _cycles(graph) -> list[str]:
    """Kahn's algorithm over the graph minus its loop back edges."""
    index = graph.index()
    indeg = dict.fromkeys(graph.nodes, 0)
    for n in graph.nodes:
        for c in index.forward_consumers(n):
            indeg[c] += 1
    queue = [n for n in graph.nodes if indeg[n] == 0]
    seen = 0
    while queue:
        n = queue.pop()
        seen += 1
        for c in index.forward_consumers(n):
            indeg[c] -= 1
            if indeg[c] == 0:
                queue.append(c)
    if seen == len(graph.nodes):
        return []
    stuck = [n.name for n in graph.nodes if indeg[n] > 0][:8]
    return ["the graph has a cycle that is not a loop back edge, through: " + ", ".join(stuck)]
