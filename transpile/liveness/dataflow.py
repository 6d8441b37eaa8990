"""A worklist solver for forward and backward dataflow problems over a CFG."""
from __future__ import annotations

from typing import Callable

from transpile.liveness.cfg import Cfg, CfgNode


def solve(graph: Cfg, forward: bool, initial, boundary, transfer: Callable, join: Callable):
    """Fixed point of `out[n] = transfer(n, join(in-edges))`; returns (in, out) dicts keyed by id(node).

    `boundary` is the value flowing into the entry (forward) or out of the exit
    (backward); `initial` the starting value of every other node.
    """
    ins: dict[int, object] = {}
    outs: dict[int, object] = {id(n): initial for n in graph.nodes}
    start = graph.entry if forward else graph.exit
    order = list(graph.nodes) if forward else list(reversed(graph.nodes))
    work = list(reversed(order))
    queued = {id(n) for n in work}
    while work:
        n: CfgNode = work.pop()
        queued.discard(id(n))
        preds = n.prev if forward else n.next
        if n is start:
            incoming = boundary
        elif preds:
            incoming = join([outs[id(p)] for p in preds])
        else:
            incoming = initial
        ins[id(n)] = incoming
        new = transfer(n, incoming)
        if new != outs[id(n)]:
            outs[id(n)] = new
            for m in (n.next if forward else n.prev):
                if id(m) not in queued:
                    queued.add(id(m))
                    work.append(m)
    return ins, outs
