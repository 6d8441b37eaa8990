"""Text listing (`str(graph)`) and Graphviz output (`graph.to_dot()`).

Reads only the node records (graph/node.py), so that graph/core.py can use it
to give Graph its `__str__` and `to_dot`.
"""
from __future__ import annotations

import numpy as np

from graph import shapes as _sh
from graph.node import Node

_HIDDEN_ATTRS = {"dtype", "spec"}


def _ref(t) -> str:
    return f"%{t.node.name}" if t.index == 0 else f"%{t.node.name}:{t.index}"


def _attr_value(v) -> str:
    if isinstance(v, np.ndarray):
        if v.size <= 6:
            return np.array2string(v, separator=",").replace("\n", "")
        return f"<{v.dtype}{list(v.shape)}>"
    if isinstance(v, np.dtype):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (tuple, list)) and len(v) > 8:
        return f"<{len(v)} items>"
    return repr(v) if isinstance(v, str) else str(v)


def _attrs(node) -> str:
    if node.op == "Enter":
        a = node.attrs
        return f"[frame={a['frame_name']}{', const' if a['is_constant'] else ''}, par={a['parallel_iterations']}]"
    items = [(k, v) for k, v in sorted(node.attrs.items()) if k not in _HIDDEN_ATTRS and not k.startswith("_")]
    if not items:
        return ""
    return "[" + ", ".join(f"{k}={_attr_value(v)}" for k, v in items) + "]"


def _type(t) -> str:
    dt = t.dtype
    return f"{getattr(dt, 'name', dt)}{_sh.format_shape(t.shape)}"


def format_node(node: Node) -> str:
    """`%name = Op[attrs](%input:port, ^control) : types @frame`."""
    args = [_ref(t) for t in node.inputs] + [f"^{c.name}" for c in node.control_inputs]
    outs = ", ".join(_type(t) for t in node.outputs)
    frame = node.frame
    where = f" @{frame.frame_name}" if frame is not None else ""
    return f"%{node.name} = {node.op}{_attrs(node)}({', '.join(args)}) : {outs or '()'}{where}"


def format_graph(graph) -> str:
    """The listing of a Graph: one `format_node` line per node, in creation order."""
    return "\n".join(format_node(n) for n in graph.nodes)


# --------------------------------------------------------------------------- graphviz

_FILL = {"Switch": "#f9d5a7", "Merge": "#f9d5a7", "Enter": "#c6e2ff", "Exit": "#c6e2ff",
         "NextIteration": "#c6e2ff", "LoopCond": "#c6e2ff", "Const": "#eeeeee", "Placeholder": "#d8f0d0"}


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph, show_types: bool = True) -> str:
    """Graphviz source: loop frames and cond branches are drawn as nested clusters."""
    children: dict[int, list] = {}
    members: dict[int, list] = {}
    contexts: dict[int, object] = {}
    for n in graph.nodes:
        ctx = n.context
        # Enter belongs inside its loop; Exit outside. Draw each node in its own context.
        members.setdefault(id(ctx), []).append(n)
        while ctx is not None and id(ctx) not in contexts:
            contexts[id(ctx)] = ctx
            children.setdefault(id(ctx.outer), []).append(ctx)
            ctx = ctx.outer
    lines = ["digraph G {", "  compound=true; rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica", fontsize=10];']

    def emit(ctx, indent: str) -> None:
        for n in members.get(id(ctx), []):
            label = f"{n.name}\\n{n.op}"
            if show_types and n.outputs:
                label += "\\n" + ", ".join(_type(t) for t in n.outputs)
            lines.append(f"{indent}{_q(n.name)} [label={_q(label).replace(chr(92) * 2 + 'n', chr(92) + 'n')}, "
                         f"fillcolor={_q(_FILL.get(n.op, 'white'))}];")
        for child in children.get(id(ctx), []):
            title, color = child.dot_cluster()
            lines.append(f"{indent}subgraph cluster_{id(child)} {{")
            lines.append(f"{indent}  label={_q(title)}; color={_q(color)}; style=rounded; fontsize=10;")
            emit(child, indent + "  ")
            lines.append(f"{indent}}}")

    emit(None, "  ")
    for n in graph.nodes:
        for t in n.inputs:
            attrs = []
            if t.index:
                attrs.append(f"taillabel={_q(str(t.index))}")
            if t.node.op == "NextIteration" and n.op == "Merge":
                attrs.append('color="#3b7dd8", constraint=false')
            lines.append(f"  {_q(t.node.name)} -> {_q(n.name)}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
        for c in n.control_inputs:
            lines.append(f"  {_q(c.name)} -> {_q(n.name)} [style=dashed, color=gray];")
    lines.append("}")
    return "\n".join(lines)
