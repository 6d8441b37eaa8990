"""Structural checks of a graph: inputs exist, frames agree, the only cycles are loop back edges."""
from __future__ import annotations

from graph.errors import GraphError
from graph.printing import format_graph


def _frame(node):
    return node.frame


def expected_input_frame(node):
    """The frame a node's inputs must come from (Enter reads its parent's; Exit its loop's)."""
    if node.op == "Enter":
        ctx = node.context
        return ctx.outer.frame if ctx.outer is not None else None
    return _frame(node)


def _control_frame(node, want):
    """The frame a node's control inputs must come from: its inputs' (an Exit's loop)."""
    if node.op == "Exit" and node.inputs:
        return _frame(node.inputs[0].node)
    return want


def validate(graph) -> None:
    problems: list[str] = []
    ids = {id(n) for n in graph.nodes}
    for n in graph.nodes:
        want = expected_input_frame(n)
        for t in n.inputs:
            if id(t.node) not in ids:
                problems.append(f"{n.name}: input {t.name} is not in the graph")
                continue
            have = _frame(t.node)
            if n.op == "Exit":
                if have is None or have.outer is None and want is not None or (
                        have is not None and (have.outer.frame if have.outer else None) is not want):
                    problems.append(f"{n.name}: Exit input {t.name} is not in a loop directly inside this frame")
            elif n.op == "Merge" and t.node.op == "NextIteration":
                if have is not _frame(n):
                    problems.append(f"{n.name}: back edge from {t.name} crosses frames")
            elif have is not want:
                problems.append(f"{n.name} ({n.op}): input {t.name} is in frame {_name(have)}, "
                                f"expected {_name(want)}")
        for c in n.control_inputs:
            if id(c) not in ids:
                problems.append(f"{n.name}: control input {c.name} is not in the graph")
            elif _frame(c) is not _control_frame(n, want):  # an Exit waits in its loop's frame, as its input
                problems.append(f"{n.name}: control input ^{c.name} is in frame {_name(_frame(c))}, "
                                f"expected {_name(_control_frame(n, want))}")
        if n.op == "Merge" and n.control_inputs:  # it fires on its first live input: none can wait
            problems.append(f"{n.name}: a Merge cannot have control inputs "
                            f"({', '.join('^' + c.name for c in n.control_inputs)}); order its inputs instead")
        for t in n.inputs:
            if t.node.op == "NextIteration" and n.op != "Merge":
                problems.append(f"{n.name}: NextIteration {t.node.name} may only feed a Merge")
        if not n.inputs and not n.control_inputs and _frame(n) is not None:
            problems.append(f"{n.name}: a node inside a loop frame needs at least one input")
    problems.extend(_frames(graph))
    problems.extend(_cycles(graph))
    if problems:
        listing = format_graph(graph)
        lines = listing.splitlines()
        if len(lines) > 200:
            listing = "\n".join(lines[:200]) + f"\n... ({len(lines) - 200} more nodes)"
        raise GraphError("invalid graph:\n  " + "\n  ".join(problems[:20]) + "\n\n" + listing, None)


def _frames(graph) -> list[str]:
    """Every Enter names the frame it enters; one frame name is one loop with one parallel_iterations."""
    problems, loops, windows = [], {}, {}
    for n in graph.nodes:
        if n.op != "Enter":
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
