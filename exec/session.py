"""`Session(graph).run(fetches, feed_dict)`: runs graphs with the frame-tagged executor."""
from __future__ import annotations

import threading

import numpy as np

from graph import dtypes as _dt
from graph import nest
from graph import shapes as _sh
from graph.core import Graph, Node, Tensor, get_default_graph
from exec.executor import _Pool, execute
from exec.plan import Plan, build_plan
from exec.runtime import Runtime

_pools: dict[int, _Pool] = {}
_pools_lock = threading.Lock()


def _shared_pool(size: int) -> _Pool | None:
    if size <= 0:
        return None
    with _pools_lock:
        pool = _pools.get(size)
        if pool is None:
            pool = _pools[size] = _Pool(size)
        return pool


class Session:
    """Runs a graph. Variables own their values, so these persist across runs and sessions.

    `inter_op_threads` is the number of pool threads that run heavy kernels
    (matmuls, large elementwise ops) concurrently with the scheduler; 0 runs every
    kernel inline. Plans are cached per (fetches, feeds) and rebuilt when the graph
    changes.
    """

    def __init__(self, graph: Graph | None = None, inter_op_threads: int = 2, out=None):
        self.graph = graph if graph is not None else get_default_graph()
        self.runtime = Runtime(out=out)
        self.inter_op_threads = inter_op_threads
        self._plans: dict[tuple, Plan] = {}

    # -- running ---------------------------------------------------------------------------
    def run(self, fetches, feed_dict: dict | None = None):
        """Computes `fetches` (a tensor, node, Variable, or a nested structure of them).

        A fetched Variable gives its value after the run.
        """
        flat = nest.flatten(fetches)
        tensors, targets, kinds = [], [], []
        for f in flat:
            if isinstance(f, Tensor):
                kinds.append(("t", len(tensors)))
                tensors.append(f)
            elif isinstance(f, Node):
                kinds.append(("n", None))
                targets.append(f)
            elif getattr(f, "is_variable", False):
                kinds.append(("v", f))
            elif f is None:
                kinds.append(("none", None))
            else:
                raise TypeError(f"cannot fetch {type(f).__name__} {f!r}: fetch graph tensors, nodes or Variables")
        feeds, values = [], []
        for t, v in (feed_dict or {}).items():
            t = _as_feed_key(t)
            feeds.append(t)
            values.append(_check_feed(t, v))
        key = (tuple(id(t) for t in tensors), tuple(id(n) for n in targets), tuple(id(t) for t in feeds),
               self.graph._version)
        plan = self._plans.get(key)
        if plan is None:
            self._check_same_graph(tensors, targets, feeds)
            self.graph.validate()
            plan = build_plan(self.graph, tensors, targets, feeds, self.runtime,
                              use_pool=self.inter_op_threads > 0)
            if len(self._plans) > 64:
                self._plans.clear()
            self._plans[key] = plan
        results = execute(plan, values, _shared_pool(self.inter_op_threads) if _uses_pool(plan) else None)
        out = []
        for kind, k in kinds:
            if kind == "t":
                out.append(_to_numpy(results[k], tensors[k].dtype))
            elif kind == "v":
                out.append(k.value)
            else:
                out.append(None)
        return nest.pack_as(fetches, out) if not isinstance(fetches, (Tensor, Node)) else out[0]

    def _check_same_graph(self, tensors, targets, feeds) -> None:
        # a tensor of another graph would otherwise be computed from that graph, silently
        for what, items in (("fetch", [t.node for t in tensors] + list(targets)), ("feed", [t.node for t in feeds])):
            for n in items:
                if n.graph is not self.graph:
                    loc = f" (created at {n.source})" if n.source else ""
                    raise ValueError(f"cannot {what} {n.name!r}{loc}: it belongs to another graph than this "
                                     "session's; build it inside `with session.graph.as_default():`")

    def close(self) -> None:
        self._plans.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _uses_pool(plan: Plan) -> bool:
    from exec.plan import ASYNC
    cached = getattr(plan, "_uses_pool", None)
    if cached is None:
        cached = plan._uses_pool = ASYNC in plan.kind
    return cached


def _as_feed_key(t) -> Tensor:
    if isinstance(t, Tensor):
        return t
    if isinstance(t, Node) and len(t.outputs) == 1:
        return t.outputs[0]
    raise TypeError(f"feed_dict keys must be graph tensors, got {type(t).__name__}")


def _check_feed(t: Tensor, value):
    if t.dtype is _dt.variant:
        return value
    arr = np.asarray(value)
    if arr.dtype != t.dtype:
        if not np.can_cast(arr.dtype, t.dtype, casting="same_kind") and not (arr.dtype.kind in "iub"
                                                                              and t.dtype.kind in "iuf"):
            raise TypeError(f"cannot feed a {arr.dtype} value to {t.dtype} tensor {t.name}")
        arr = arr.astype(t.dtype)
    if t.shape is not None and not _sh.compatible(t.shape, arr.shape):
        raise ValueError(f"cannot feed a value of shape {arr.shape} to tensor {t.name} of shape "
                         f"{_sh.format_shape(t.shape)}")
    return arr[()] if arr.ndim == 0 else arr


def _to_numpy(v, dtype):
    if isinstance(v, np.ndarray) or dtype is _dt.variant:
        return v
    if isinstance(v, np.generic):
        return v if v.dtype == dtype else dtype.type(v)
    return np.asarray(v, dtype=dtype)[()]
