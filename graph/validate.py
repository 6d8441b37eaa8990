"""Structural checks of a graph: inputs exist, frames agree, the only cycles are loop back edges.

The frame rules are the shared analysis's (graph/control_structure.py: frames as the dataflow gives them,
and the edges that leave one outside an Enter or an Exit). What is the validator's own: every input is in
the graph, the frames the dataflow gives are those the nodes were built in (their recorded contexts), a
frame name is one loop, NextIterations feed Merges only, Merges wait for no control inputs, and the
graph has no other cycles.
"""
from __future__ import annotations

from graph.control_structure import ControlStructure, FrameProblem, StaticFrame
from graph.errors import GraphError
from graph.frames import parent_frame
from graph.index import producers
from graph.node import LoopFrame, Node
from graph.op_names import ENTER, MERGE, NEXT_ITERATION
from graph.printing import format_graph


def validate(graph) -> None:
    """Raises GraphError listing what is structurally wrong (see the module doc)."""
    ids = {id(n) for n in graph.nodes}
    flow = ControlStructure(graph.nodes)
    problems: list[str] = []
    for n in graph.nodes:
        problems.extend(_input_problems(n, ids))
        problems.extend(_control_problems(n, ids))
        problems.extend(_shape_problems(n))
        problems.extend(_recorded_frame_problems(n, flow))
    problems.extend(_frames(graph))
    problems.extend(str(p) for p in flow.problems)
    problems.extend(_cycles(graph))
    if problems:
        raise GraphError("invalid graph:\n  " + "\n  ".join(problems[:20]) + "\n\n" + _listing(graph), None)


def _input_problems(n: Node, ids: set[int]) -> list[str]:
    """Data inputs in the graph; a NextIteration feeds only a Merge (the loop's back edge)."""
    problems = []
    for t in n.inputs:
        if id(t.node) not in ids:
            problems.append(f"{n.name}: input {t.name} is not in the graph")
        if t.node.op == NEXT_ITERATION and n.op != MERGE:
            problems.append(f"{n.name}: NextIteration {t.node.name} may only feed a Merge")
    return problems


def _recorded_frame_problems(n: Node, flow: ControlStructure) -> list[str]:
    """Where the dataflow first puts a node in another frame than the one it was built in: the node whose
    frame comes from a node in the frame it was built in (its followers disagree for the same reason)."""
    derived = flow.frame(n)
    if not (n.inputs or n.control_inputs) or _same_frame(derived, n.frame):
        return []
    source = next(iter(producers(n)), None)
    if source is not None and source in flow.frame_of and not _same_frame(flow.frame(source), source.frame):
        return []
    built = "<root>" if n.frame is None else n.frame.frame_name
    return [str(FrameProblem(n, f"{n.name} ({n.op}): built in frame {built}, but its inputs put it in frame "
                                f"{derived.describe()}"))]


def _same_frame(derived: StaticFrame, recorded: LoopFrame | None) -> bool:
    """Whether a frame of the analysis is the recorded loop: the same frame names from the root."""
    for f in derived.enclosing():
        if f.parent is None:
            return recorded is None
        if recorded is None or recorded.frame_name != f.name:
            return False
        recorded = parent_frame(recorded)
    return recorded is None


def _control_problems(n: Node, ids: set[int]) -> list[str]:
    """Control inputs in the graph; none on a Merge."""
    problems = [f"{n.name}: control input {c.name} is not in the graph" for c in n.control_inputs if id(c) not in ids]
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
