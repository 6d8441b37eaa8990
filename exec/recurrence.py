"""Where a loop's main recurrence runs: inline on a quiet machine, first in the pool on a busy one.

A loop runs as fast as its longest chain of iteration-to-iteration dependences (its
recurrence: h -> h @ Wh -> gates -> h in an RNN); everything else (input projections of
iterations ahead, weight-gradient matmuls) can wait and fill the gaps. On a quiet machine
that chain's matmul is best run by the scheduler thread itself: a pool thread would add a
hand-off (queue, wake-up, the GIL back for the completion) to every iteration, 5-15% of an
LSTM step. When other processes take the cores, the opposite holds: a loop whose chain runs
on one thread advances only when that thread gets a core, and the step takes a third longer
than with the chain's matmuls in the pool (where they jump the queue: FIFO would leave them
behind the work the parallel-iterations window queued for iterations ahead). So the executor
measures how many cores other processes used during a plan's last run (exec/load.py) and runs
the recurrence inline while that stays under BUSY_CORES.

The recurrences are the strongly connected components of the plan's dataflow graph (cycles
through NextIteration); a heavy node is on the main one when its component carries at least
half the estimated work per iteration of the heaviest component of its loop.
"""
from __future__ import annotations

from graph import shapes as _sh
from graph.core import Node

BUSY_CORES = 0.5  # other processes' mean use of the cores above which the recurrence goes to the pool


def on_main_recurrence(nodes: list[Node], successors: list[list[int]], heavy: list[bool]) -> list[bool]:
    """Per local id: whether a heavy node lies on its loop's main recurrence (see module doc)."""
    weight_of: dict[int, float] = {}
    heaviest: dict[object, float] = {}
    comps = _components(len(nodes), successors)
    for comp in comps:
        if len(comp) < 2:
            continue
        w = sum(_cost(nodes[i]) for i in comp)
        frame = nodes[comp[0]].frame
        heaviest[frame] = max(heaviest.get(frame, 0.0), w)
        for i in comp:
            weight_of[i] = w
    out = [False] * len(nodes)
    for i, w in weight_of.items():
        out[i] = heavy[i] and w >= 0.5 * heaviest[nodes[i].frame]
    return out


def _cost(n: Node) -> float:
    """Rough work of one execution: multiply-adds of a matmul, elements of anything else."""
    if not n.outputs or n.outputs[0].shape is None:
        return 1.0
    size = _sh.num_elements(n.outputs[0].shape) or 1
    if n.op == "MatMul":
        a = n.inputs[0].shape
        k = a[-1] if a and a[-1] is not None else 1
        return float(size * k)
    return float(size)


def _components(n: int, successors: list[list[int]]) -> list[list[int]]:
    """Strongly connected components (Tarjan's algorithm, iterative: graphs have thousands of nodes)."""
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    comps: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            succ = successors[v]
            if k < len(succ):
                work.append((v, k + 1))
                w = succ[k]
                if index[w] < 0:
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                comps.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comps
