"""Text listing (`str(graph)`) and Graphviz output (`graph.to_dot()`).

Reads only the node records (graph/node.py), so that graph/core.py can use it
to give Graph its `__str__` and `to_dot`.
"""
from __future__ import annotations

import itertools
import linecache
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from graph import shapes as _sh
from graph.errors import SourceLocation
from graph.index import is_back_edge
from graph.node import DotCluster, Node
from graph.op_names import CONST, ENTER, EXIT, LOOP_COND, MERGE, NEXT_ITERATION, PLACEHOLDER, SWITCH

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
    if node.op == ENTER:
        a = node.attrs
        loop = node.frame   # its memory policy (graph.control_flow.memory_policy), when not the default
        policy = getattr(loop, "memory_policy", "keep")
        k = getattr(loop, "checkpoint_every", 1)
        memory = "" if policy == "keep" else f", memory={policy}" if k == 1 else f", memory={policy}/{k}"
        return f"[frame={a['frame_name']}{', const' if a['is_constant'] else ''}, par={a['parallel_iterations']}" \
            f"{memory}]"
    items = [(k, v) for k, v in sorted(node.attrs.items()) if k not in _HIDDEN_ATTRS and not k.startswith("_")]
    if not items:
        return ""
    return "[" + ", ".join(f"{k}={_attr_value(v)}" for k, v in items) + "]"


def _type(t) -> str:
    dt = t.dtype
    return f"{getattr(dt, 'name', dt)}{_sh.format_shape(t.shape)}"


def format_node(node: Node) -> str:
    """`%name = Op[attrs](%input:port, ^control) : types @frame  # file.py:line`, the line being the
    user's line that built the node."""
    args = [_ref(t) for t in node.inputs] + [f"^{c.name}" for c in node.control_inputs]
    outs = ", ".join(_type(t) for t in node.outputs)
    frame = node.frame
    where = f" @{frame.frame_name}" if frame is not None else ""
    line = f"  # {node.source.short}" if node.source is not None else ""
    return f"%{node.name} = {node.op}{_attrs(node)}({', '.join(args)}) : {outs or '()'}{where}{line}"


def format_graph(graph) -> str:
    """The listing of a Graph: one `format_node` line per node, in creation order."""
    return "\n".join(format_node(n) for n in graph.nodes)


def format_summary(graph) -> str:
    """`<Graph 42 nodes, 2 loops, 1 cond>`: the sizes a glance needs (`repr(graph)`), counted from the ops,
    so that a graph loaded or built by hand counts the same: a loop is its LoopCond, a cond the predicate
    its Switches share (conds on one predicate count once)."""
    loops = sum(n.op == LOOP_COND for n in graph.nodes)
    predicates = {n.inputs[1] for n in graph.nodes if n.op == SWITCH and n.inputs[1].node.op != LOOP_COND}
    parts = [_count(len(graph.nodes), "node")] + [_count(k, what) for k, what in ((loops, "loop"),
                                                                                  (len(predicates), "cond")) if k]
    return f"<Graph {', '.join(parts)}>"


def _count(k: int, what: str) -> str:
    return f"{k} {what}{'' if k == 1 else 's'}"


# --------------------------------------------------------------------------- graphviz

_FILL = {SWITCH: "#f9d5a7", MERGE: "#f9d5a7", ENTER: "#c6e2ff", EXIT: "#c6e2ff",
         NEXT_ITERATION: "#c6e2ff", LOOP_COND: "#c6e2ff", CONST: "#eeeeee", PLACEHOLDER: "#d8f0d0"}
_CODE_WIDTH = 60  # characters of the user's line shown in a label


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _line_title(loc: SourceLocation) -> str:
    """`rnn.py:123` and, on a second line, the code on that line."""
    title = loc.short
    code = linecache.getline(loc.filename, loc.lineno).strip()
    if len(code) > _CODE_WIDTH:
        code = code[:_CODE_WIDTH - 3] + "..."
    return title + (f"\n{code}" if code else "")


def _construct_title(style: DotCluster) -> str:
    """`while  rnn.py:123` and the code on that line: what a loop's or cond's cluster says."""
    return f"{style.kind}  {_line_title(style.location)}" if style.location is not None else style.kind


@dataclass(frozen=True, slots=True)
class _Box:
    """One box standing for several nodes: a collapsed loop or cond, or the ops one user line built."""

    key: tuple
    label: str
    color: str
    shape: str


class _Layout:
    """Where each node is drawn: inside which clusters, and as itself or as part of which box."""

    def __init__(self, graph, expand: bool | Collection[str]):
        self._expand = expand
        self._styles: dict[int, DotCluster] = {}
        self.construct_style: dict[int, DotCluster] = {}
        self.part_color: dict[tuple[int, str], str] = {}
        # per node: the (construct, part) levels around it, outermost first
        self.chain: dict[Node, tuple] = {n: self._context_chain(n.context) for n in graph.nodes}
        self._adopt_plumbing(graph)
        # a construct named by `expand` is opened with the constructs around it
        self._open: set[int] = set()
        for chain in self.chain.values():
            for k, (construct, _) in enumerate(chain):
                style = self.construct_style[id(construct)]
                if self._expanded(style.location, style.kind):
                    self._open.update(id(c) for c, _ in chain[:k + 1])

    def _style(self, ctx) -> DotCluster:
        style = self._styles.get(id(ctx))
        if style is None:
            style = self._styles[id(ctx)] = ctx.dot_cluster()
            self.construct_style.setdefault(id(style.construct), style)
            if style.part:
                self.part_color[id(style.construct), style.part] = style.part_color
        return style

    def _context_chain(self, ctx) -> tuple:
        chain = []
        while ctx is not None:
            style = self._style(ctx)
            chain.append((style.construct, style.part))
            ctx = ctx.outer
        return tuple(reversed(chain))

    def _adopt_plumbing(self, graph) -> None:
        """Draws a construct's plumbing that lives in the context around it inside it: a loop's Exits,
        a cond's Merges (all inputs from the construct) and Switches (all consumers in it)."""
        index = graph.index()
        for op, neighbours in ((EXIT, lambda n: [t.node for t in n.inputs]),
                               (MERGE, lambda n: [t.node for t in n.inputs]),
                               (SWITCH, index.data_consumers)):
            for n in graph.nodes:
                if n.op == op:
                    inner = self._common_child(self.chain[n], [self.chain[m] for m in neighbours(n)])
                    if inner is not None:
                        self.chain[n] = self.chain[n] + ((inner, ""),)

    @staticmethod
    def _common_child(own: tuple, others: list[tuple]):
        """The construct directly inside `own` that all of `others` are in, if there is one."""
        depth = len(own)
        inside = [c[depth][0] for c in others if len(c) > depth and c[:depth] == own]
        if not inside or len(inside) != len(others) or any(c is not inside[0] for c in inside):
            return None
        return inside[0]

    def _expanded(self, loc: SourceLocation | None, *names: str) -> bool:
        if isinstance(self._expand, bool):
            return self._expand
        wanted = set(names) | ({loc.short, str(loc)} if loc is not None else set())
        return not wanted.isdisjoint(self._expand)

    def place(self, n: Node) -> tuple[tuple, _Box | None]:
        """The cluster levels `n` is drawn in, and the box that stands for it (None: drawn itself)."""
        levels = []
        for construct, part in self.chain[n]:
            if id(construct) not in self._open:
                style = self.construct_style[id(construct)]
                return tuple(levels), _Box(("construct", id(construct)), _construct_title(style), style.color, "box3d")
            levels.append(("construct", id(construct)))
            if part:
                levels.append(("part", id(construct), part))
        # outside an expanded construct, the ops of one user line are one box; inputs keep their names
        if n.source is not None and n.op != PLACEHOLDER and not self._expanded(n.source):
            key = ("line", tuple(levels), n.source.filename, n.source.lineno)
            return tuple(levels), _Box(key, _line_title(n.source), "#888888", "box")
        return tuple(levels), None

    def level_label(self, level: tuple) -> tuple[str, str]:
        """The label and colour of a cluster level."""
        style = self.construct_style[level[1]]
        if level[0] == "construct":
            return _construct_title(style), style.color
        return f"{level[2]} branch", self.part_color[level[1:]]


def to_dot(graph, show_types: bool = True, expand: bool | Collection[str] = False) -> str:
    """Graphviz source of `graph`.

    By default a model's picture shows its structure: each loop and cond is one box
    labelled with what built it (the user's file:line and the code on it), and the
    other ops are one box per user line, each box saying how many ops it stands for;
    placeholders are drawn with their names. `expand=True` draws every op, with loop
    bodies and cond branches as nested clusters; a collection of names expands only
    what was built by the lines it names (`"rnn.py:123"`, or the full path) and the
    loops it names by frame (`"while_1"`), with the loops and conds around them: an
    expanded loop or cond is a cluster of what its body holds.
    """
    dot = _DotWriter(_Layout(graph, expand), graph.nodes)
    for n in graph.nodes:
        dot.add_node(n, show_types)
    return dot.render()


class _DotWriter:
    """The Graphviz statements of `to_dot`: nodes and boxes in their clusters, and the edges between them."""

    def __init__(self, layout: _Layout, nodes: list[Node]):
        self.layout = layout
        self.placed = {n: layout.place(n) for n in nodes}
        self.sizes: dict[tuple, int] = {}   # box key -> the number of nodes it stands for
        for _, box in self.placed.values():
            if box is not None:
                self.sizes[box.key] = self.sizes.get(box.key, 0) + 1
        self.items: dict[tuple, list[str]] = {(): []}   # cluster levels -> its statements
        self.children: dict[tuple, list[tuple]] = {}
        self.box_ids: dict[tuple, str] = {}
        self.edges: list[str] = []
        self.seen: set[tuple] = set()   # edges to or from a box: one per pair and kind

    def endpoint(self, n: Node) -> str:
        """The name `n` is drawn under (its own, or its box's), its clusters and box declared on first use."""
        levels, box = self.placed[n]
        for k in range(len(levels)):
            if levels[:k + 1] not in self.items:
                self.items[levels[:k + 1]] = []
                self.children.setdefault(levels[:k], []).append(levels[:k + 1])
        if box is None:
            return n.name
        name = self.box_ids.get(box.key)
        if name is None:
            name = self.box_ids[box.key] = f"box_{len(self.box_ids)}"
            count = self.sizes[box.key]
            label = f"{box.label}\n{count} {'node' if count == 1 else 'nodes'}"
            self.items[levels].append(f"{_q(name)} [label={_q(label)}, shape={box.shape}, color={_q(box.color)}];")
        return name

    def add_edge(self, src: str, dst: str, attrs: list[str], kind: str, between_nodes: bool) -> None:
        if not between_nodes:
            if src == dst or (src, dst, kind) in self.seen:
                return
            self.seen.add((src, dst, kind))
        self.edges.append(f"  {_q(src)} -> {_q(dst)}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")

    def add_node(self, n: Node, show_types: bool) -> None:
        """`n` (unless a box stands for it) and its incoming edges."""
        me = self.endpoint(n)
        if me == n.name:
            label = f"{n.name}\n{n.op}"
            if show_types and n.outputs:
                label += "\n" + ", ".join(_type(t) for t in n.outputs)
            if n.source is not None:
                label += f"\n{n.source.short}"
            self.items[self.placed[n][0]].append(f"{_q(n.name)} [label={_q(label)}, "
                                                 f"fillcolor={_q(_FILL.get(n.op, 'white'))}];")
        for t in n.inputs:
            src = self.endpoint(t.node)
            between_nodes = src == t.node.name and me == n.name
            attrs = []
            if t.index and between_nodes:
                attrs.append(f"taillabel={_q(str(t.index))}")
            if is_back_edge(t.node, n):
                attrs.append('color="#3b7dd8", constraint=false')
            self.add_edge(src, me, attrs, "data", between_nodes)
        for c in n.control_inputs:
            src = self.endpoint(c)
            self.add_edge(src, me, ["style=dashed", "color=gray"], "control", src == c.name and me == n.name)

    def render(self) -> str:
        lines = ["digraph G {", "  compound=true; rankdir=TB;",
                 '  node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica", fontsize=10];']
        self._emit((), "  ", lines, itertools.count())
        lines.extend(self.edges)
        lines.append("}")
        return "\n".join(lines)

    def _emit(self, levels: tuple, indent: str, lines: list[str], clusters) -> None:
        lines.extend(indent + item for item in self.items[levels])
        for child in self.children.get(levels, []):
            label, color = self.layout.level_label(child[-1])
            lines.append(f"{indent}subgraph cluster_{next(clusters)} {{")
            lines.append(f"{indent}  label={_q(label)}; color={_q(color)}; style=rounded; fontsize=10;")
            self._emit(child, indent + "  ", lines, clusters)
            lines.append(f"{indent}}}")
