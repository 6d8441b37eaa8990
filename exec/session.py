"""`Session(graph).run(fetches, feed_dict)`: runs graphs as compiled code or with the frame-tagged executor."""
from __future__ import annotations

import logging
import threading
import time

import numpy as np

# exec/session.py alone in exec may import dist, and only its graph-level modules (docs/design.md, "Layering")
from dist.partition import partition
from dist.placement import place
from exec import profiler
from exec.compiled import MODES, Program, Unstructured, compile_program, make_entry, select_program
from exec.device.swapping import DeviceMemoryManager
from exec.multi_device import DevicesPlan, execute, plan_run
from exec.plan import Plan
from exec.pool import Pool
from exec.runtime import Runtime
from exec.timeline import Timeline, traced_devices_plan, traced_kernel, traced_plan
from graph import dtypes as _dt
from graph import nest
from graph import shapes as _sh
from graph.core import Graph, Node, Tensor, get_default_graph
from graph.logs import get_logger

logger = get_logger(__name__)

_pools: dict[int, Pool] = {}
_pools_lock = threading.Lock()


def _shared_pool(size: int) -> Pool | None:
    if size <= 0:
        return None
    with _pools_lock:
        pool = _pools.get(size)
        if pool is None:
            pool = _pools[size] = Pool(size)
        return pool


class Session:
    """Runs a graph. Variables own their values, so these persist across runs and sessions.

    `inter_op_threads` is the number of pool threads that run heavy kernels
    (matmuls, large elementwise ops) concurrently with the scheduler; 0 runs every
    kernel inline. Plans are cached per (fetches, feeds) and rebuilt when the graph
    changes.

    `mode` decides what runs a plan: "compiled" turns it into one Python function (loops as
    `while`, conds as `if`, one kernel call per op: exec/compiled/), "dataflow" runs it on the
    frame-tagged executor, and "auto" compiles unless the executor's parallelism pays
    (exec/compiled/auto.py). A plan the compiler cannot structure runs on the executor in
    every mode.

    `device` (an exec.device.Device, e.g. `SimulatedDevice(memory_limit=...)`) keeps the values
    loops save for their gradients (stack slots) in its memory, accounted against its limit, and
    swaps them to host memory under `memory_policy`: "keep" swaps the loops built with
    `swap_memory=True`, "swap" every loop's (exec/device/swapping.py). The nodes placed on its
    name (`with graph.device("/gpu:0"):`) compute on it, with its array module; integer and bool
    scalars (loop counters, predicates) stay on the host, and the values that cross are copied on
    its copy streams (docs/design.md, "Devices"). Every other node runs on the host's numpy.
    """

    def __init__(self, graph: Graph | None = None, inter_op_threads: int = 2, out=None, mode: str = "auto",
                 device=None, memory_policy: str = "keep"):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
        self.graph = graph if graph is not None else get_default_graph()
        self.runtime = Runtime(out=out)
        self.device = device
        if device is not None:
            self.runtime.memory = DeviceMemoryManager(device, memory_policy)
        elif memory_policy != "keep":
            raise ValueError(f"memory_policy={memory_policy!r} needs a device whose memory it manages: "
                             "Session(graph, device=SimulatedDevice(memory_limit=...), memory_policy=...)")
        self.inter_op_threads = inter_op_threads
        self.mode = mode
        self._plans: dict[tuple, Plan] = {}
        self._runners: dict[tuple, _Runner] = {}
        self._programs: dict[int, tuple] = {}  # id(plan) -> (plan, its compiled program or None)
        self._compilations: dict[int, tuple] = {}  # id(plan) -> (plan, its Program or Unstructured)
        # id(plan) -> (plan, timeline, what runs the plan recording its kernels there): see _recorder
        self._recorders: dict[int, tuple] = {}

    # -- running ---------------------------------------------------------------------------
    def run(self, fetches, feed_dict: dict | None = None, trace: str | None = None):
        """Computes `fetches` (a tensor, node, Variable, or a nested structure of them).

        A fetched Variable gives its value after the run. `feed_dict` maps placeholders (or
        other tensors, whose producers are then not run) to values. A value is converted to
        the tensor's dtype by numpy's "same_kind" casting rule: bool into integers, integers
        into floats, floats into complex, and any precision of one kind into another
        (float64 into float32, int64 into int8); a float into an integer, a complex into a
        float or a number into a bool is refused with a TypeError naming the input. A
        Python int is weak, as in numpy: any integer dtype whose range holds it takes it.
        Its shape must match the tensor's known dims (ValueError otherwise).

        `trace` (a file name) writes the run's timeline there as a Chrome/Perfetto trace
        (exec/timeline.py): kernel spans per thread, in the mode that runs the plan (compiled code,
        the dataflow executor, each device's part), the device's stream spans and its memory in use.
        Inside `with exec.profile(path):` every run is recorded so (exec/profiler.py).
        """
        flat = nest.flatten(fetches)
        feed_dict = feed_dict or {}
        # the same fetches and fed tensors run again and again: what they need is worked out once
        # (the runner holds them, so their ids stay theirs while it is cached)
        key = (tuple(map(id, flat)), tuple(map(id, feed_dict)))
        runner = self._runners.get(key)
        if runner is None:
            runner = _Runner(flat, list(feed_dict))
            if len(self._runners) > 64:
                self._runners.clear()
            self._runners[key] = runner
        recording = profiler.active()
        if trace is None and recording is None:
            out = runner.run(self, list(feed_dict.values()))
        else:
            timeline = Timeline() if trace is not None else recording.timeline
            out = self._recorded_run(runner, list(feed_dict.values()), timeline, "Session.run")
            if trace is not None:
                timeline.write(trace)
        return nest.pack_as(fetches, out) if not isinstance(fetches, (Tensor, Node)) else out[0]

    def _recorded_run(self, runner: "_Runner", values, timeline: Timeline, name: str) -> list:
        """`runner.run(self, values)`, its kernels, its device's streams and memory recorded on `timeline`,
        inside a span `name` on the calling thread's track of process "runs"."""
        device = self.device
        if device is not None:
            device.timeline = timeline
            device._count_memory()
        start = time.perf_counter()
        try:
            out = runner.run(self, values, timeline)
            if device is not None:
                device.synchronize()  # the copies the run started, up to their ends
        finally:
            if device is not None:
                device.timeline = None
            timeline.span(f"runs {threading.current_thread().name}", name, start, time.perf_counter(),
                          {"mode": runner.recorded_mode}, process="runs")
        return out

    def _call(self, runner: "_Runner", values, name: str) -> list:
        """A call of a `make_callable` function: recorded while a profile is open."""
        recording = profiler.active()
        if recording is None:
            return runner.run(self, values)
        return self._recorded_run(runner, values, recording.timeline, name)

    def make_callable(self, fetches: list, feed_list=(), name: str = "Session callable"):
        """A function of the values of the tensors `feed_list` (in that order) that runs the flat
        list `fetches` like `run(fetches, dict(zip(feed_list, values)))`, with all that does not
        change between runs worked out once: for a program that runs the same step many times.
        `name` names its calls' spans in a profile (exec/profiler.py)."""
        runner = _Runner(list(fetches), list(feed_list))
        slow = lambda *values: self._call(runner, values, name)  # noqa: E731
        try:  # a compiled plan gets an entry that does per call only what changes between calls
            plan = self._plan(runner.ids + (self.graph.version,), runner.tensors, runner.targets, runner.feeds)
        except Exception:  # the first call raises it, as run would
            return slow
        program = self._compiled(plan, runner.tensors, runner.targets, runner.feeds)
        if program is None:
            return slow
        return make_entry(program, runner.feeds, [_feed_check(t) for t in runner.feeds], runner.kinds, self.graph,
                          slow, _to_numpy, recording=profiler.RECORDING)

    def _plan(self, key: tuple, tensors, targets, feeds) -> Plan:
        plan = self._plans.get(key)
        if plan is None:
            self._check_same_graph(tensors, targets, feeds)
            self.graph.validate()
            start = time.perf_counter()
            # a graph whose nodes name several devices is partitioned, one plan per device (exec/multi_device.py)
            plan = plan_run(self.graph, tensors, targets, feeds, self.runtime, use_pool=self.inter_op_threads > 0,
                            partition=_partition, device=self.device)
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug("plan for %d fetches, %d targets and %d feeds built in %.1f ms: %s", len(tensors),
                             len(targets), len(feeds), (time.perf_counter() - start) * 1e3, _describe(plan))
            if len(self._plans) > 64:
                self._plans.clear()
                self._programs.clear()
                self._compilations.clear()
            self._plans[key] = plan
        return plan

    def _recorder(self, plan, runner: "_Runner", program, timeline: Timeline):
        """(mode, `run(values, pool)`): what runs `plan` recording its kernels on `timeline`, in the mode
        that runs it unrecorded (`program`: its compiled program, or None). Made once per plan and timeline:
        a profile records many runs of the same plans."""
        got = self._recorders.get(id(plan))
        if got is not None and got[0] is plan and got[1] is timeline:
            return got[2]
        if isinstance(plan, DevicesPlan):
            traced = traced_devices_plan(plan, timeline, self.runtime)
            made = ("devices", lambda values, pool: execute(traced, values, pool))
        elif program is not None:
            def wrap(node, fn):
                return traced_kernel(fn, node, timeline, self.runtime, "compiled")
            with_spans = compile_program(runner.tensors, runner.targets, runner.feeds, self.runtime, wrap_kernel=wrap)
            made = ("compiled", lambda values, pool: with_spans(values))
        else:
            traced = traced_plan(plan, timeline, self.runtime)
            made = ("dataflow", lambda values, pool: execute(traced, values, pool))
        if len(self._recorders) > 64:
            self._recorders.clear()
        self._recorders[id(plan)] = (plan, timeline, made)
        return made

    def _compiled(self, plan: Plan, tensors, targets, feeds):
        """The compiled program that runs `plan` in this session's mode, or None: the executor runs it."""
        if isinstance(plan, DevicesPlan):  # each device's part runs on an executor of its own
            return None
        got = self._programs.get(id(plan))
        if got is None or got[0] is not plan:
            got = self._programs[id(plan)] = (plan, select_program(
                self.mode, lambda: self._compile(plan, tensors, targets, feeds)))
        return got[1]

    def _compile(self, plan: Plan, tensors, targets, feeds) -> Program:
        """`plan` compiled (once, whatever the mode); raises exec.compiled.Unstructured."""
        if isinstance(plan, DevicesPlan):
            raise Unstructured(f"its nodes are on several devices ({', '.join(plan.devices)}): each device's part "
                               "runs on a dataflow executor of its own")
        got = self._compilations.get(id(plan))
        if got is None or got[0] is not plan:
            start = time.perf_counter()
            try:
                result = compile_program(tensors, targets, feeds, self.runtime)
            except Unstructured as e:
                result = e
            else:
                logger.debug("plan of %d nodes compiled in %.1f ms", len(plan.nodes),
                             (time.perf_counter() - start) * 1e3)
            got = self._compilations[id(plan)] = (plan, result)
        if isinstance(got[1], Unstructured):
            raise got[1]
        return got[1]

    def compiled_source(self, fetches, feed_dict=None) -> str:
        """The Python code that compiled mode runs for these fetches and fed tensors (`feed_dict`'s
        keys; its values are not needed): the most readable view of what a run does. Raises
        exec.compiled.Unstructured, with the reason, for a plan that only the executor runs."""
        runner = _Runner(nest.flatten(fetches), list(feed_dict or ()))
        plan = self._plan(runner.ids + (self.graph.version,), runner.tensors, runner.targets, runner.feeds)
        return self._compile(plan, runner.tensors, runner.targets, runner.feeds).source

    def _check_same_graph(self, tensors, targets, feeds) -> None:
        # a tensor of another graph would otherwise be computed from that graph, silently
        for what, items in (("fetch", [t.node for t in tensors] + list(targets)), ("feed", [t.node for t in feeds])):
            for n in items:
                if n.graph is not self.graph:
                    loc = f" (created at {n.source})" if n.source else ""
                    raise ValueError(f"cannot {what} {n.name!r}{loc}: it belongs to another graph than this "
                                     "session's; build it inside `with session.graph.as_default():`")

    def __repr__(self) -> str:
        device = self.device.name if self.device is not None else "host"
        plans = len(self._plans)
        return f"<Session mode={self.mode!r}, device={device!r}, {plans} cached plan{'' if plans == 1 else 's'}>"

    def close(self) -> None:
        self._plans.clear()
        self._runners.clear()
        self._programs.clear()
        self._compilations.clear()
        self._recorders.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Runner:
    """One (flat fetches, fed tensors) pair of a session, with what every run of it needs worked out
    once: which fetches are tensors, targets or Variables, how each fed value is checked, and the
    key of its plan (looked up in the session's plans on each run, so that a changed graph or a
    closed session gets a new plan as `run` always did)."""

    def __init__(self, flat: list, feed_keys: list):
        self.tensors, self.targets, self.kinds = [], [], []
        for f in flat:
            if isinstance(f, Tensor):
                self.kinds.append(("t", len(self.tensors), f.dtype))
                self.tensors.append(f)
            elif isinstance(f, Node):
                self.kinds.append(("n", None, None))
                self.targets.append(f)
            elif getattr(f, "is_variable", False):
                self.kinds.append(("v", f, None))
            elif f is None:
                self.kinds.append(("none", None, None))
            else:
                raise TypeError(f"cannot fetch {type(f).__name__} {f!r}: fetch graph tensors, nodes or Variables")
        self.feeds = [_as_feed_key(t) for t in feed_keys]
        self.ids = (tuple(id(t) for t in self.tensors), tuple(id(n) for n in self.targets),
                    tuple(id(t) for t in self.feeds))
        self.checks: list = []      # per fed tensor: its value's check (see _feed_check)
        self.version = None         # the graph version that `checks` were made for
        self.planned = (None, None)  # the last plan run, and the pool it runs with
        self.recorded_mode = None   # what ran its last recorded run: "compiled", "dataflow" or "devices"

    def run(self, session: Session, values, timeline: Timeline | None = None) -> list:
        """The flat fetches' values after a run of `session` with `values` fed to the fed tensors (in order)."""
        version = session.graph.version
        if version != self.version:  # a graph change may have refined a fed tensor's shape
            self.checks = [_feed_check(t) for t in self.feeds]
            self.version = version
        values = [check(v) for check, v in zip(self.checks, values, strict=True)]
        plan = session._plan(self.ids + (version,), self.tensors, self.targets, self.feeds)
        program = session._compiled(plan, self.tensors, self.targets, self.feeds)
        last, pool = self.planned
        if plan is not last:
            pool = _shared_pool(session.inter_op_threads) if plan.uses_pool else None
            self.planned = (plan, pool)
        if timeline is not None:
            self.recorded_mode, recorded = session._recorder(plan, self, program, timeline)
            results = recorded(values, pool)
        else:
            results = program(values) if program is not None else execute(plan, values, pool)
        out = []
        for kind, k, dtype in self.kinds:
            if kind == "t":
                out.append(_to_numpy(results[k], dtype))
            elif kind == "v":
                out.append(k.value)
            else:
                out.append(None)
        return out


def _describe(plan) -> str:
    """A plan's size for the log: its nodes, and its devices when it has several."""
    if isinstance(plan, DevicesPlan):
        nodes = sum(len(part[1].nodes) for part in plan.parts)
        return f"{nodes} nodes on {len(plan.parts)} devices ({', '.join(plan.devices)})"
    return f"{len(plan.nodes)} nodes{', heavy kernels on the pool' if plan.uses_pool else ''}"


def _partition(graph: Graph, nodes: list, fed: set):
    """`nodes` of `graph` placed (dist.place) and partitioned (dist.partition)."""
    return partition(graph, place(graph, nodes), nodes, fed)


def _as_feed_key(t) -> Tensor:
    if isinstance(t, Tensor):
        return t
    if isinstance(t, Node) and len(t.outputs) == 1:
        return t.outputs[0]
    raise TypeError(f"feed_dict keys must be graph tensors, got {type(t).__name__}")


def _check_feed(t: Tensor, value):
    """`value` converted to what `t` holds, by the feed rule (see `Session.run`); a TypeError or a
    ValueError naming the fed input when the rule refuses it or the shapes differ."""
    if t.dtype is _dt.variant:
        return value
    arr = np.asarray(value)
    if arr.dtype != t.dtype:
        if type(value) is int and t.dtype.kind in "iu":
            # a Python int is weak, as in numpy: any integer dtype whose range holds it takes it
            info = np.iinfo(t.dtype)
            if not info.min <= value <= info.max:
                raise ValueError(f"cannot feed {value} to {t.describe()} ({_typed(t)}): it is out of the range of "
                                 f"{t.dtype} ({info.min} to {info.max})")
        elif not np.can_cast(arr.dtype, t.dtype, casting="same_kind"):
            rounded = "np.round(value)" if t.dtype.kind in "iu" and arr.dtype.kind in "fc" else "value"
            raise TypeError(
                f"cannot feed a value of dtype {arr.dtype} to {t.describe()} ({_typed(t)}): a fed value is "
                "converted by numpy's same_kind rule (bool into integers, integers into floats, floats into "
                f"complex, at any precision), which refuses {arr.dtype} into {t.dtype}. Convert it first: "
                f"np.asarray({rounded}).astype(np.{t.dtype})")
        arr = arr.astype(t.dtype)
    if t.shape is not None and not _sh.compatible(t.shape, arr.shape):
        raise ValueError(f"cannot feed a value of shape {arr.shape} to {t.describe()} ({_typed(t)})")
    return arr[()] if arr.ndim == 0 else arr


def _typed(t: Tensor) -> str:
    return f"{t.dtype}{_sh.format_shape(t.shape)}"


# the Python scalar type numpy turns into each of these dtypes, and the int64 range
_PYTHON_SCALARS = {_dt.int64: int, _dt.float64: float, _dt.bool_: bool}
_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


def _feed_check(t: Tensor):
    """`_check_feed(t, value)` as a function of the value, answering the common cases without numpy
    calls (same result): an array of t's dtype and fully known shape is fed as it is, and a scalar
    that already is (a numpy one) or becomes (a Python one) a scalar of t's dtype is fed as that."""
    dtype, shape = t.dtype, t.shape
    if dtype is _dt.variant:
        return lambda value: value
    canonical = isinstance(dtype, np.dtype) and dtype is np.dtype(dtype.type)
    scalar = dtype.type if canonical and (shape is None or shape == ()) else None
    python = _PYTHON_SCALARS.get(dtype) if scalar is not None else None

    def check(value):
        cls = type(value)
        if cls is np.ndarray:
            if value.dtype is dtype and value.shape == shape and value.ndim:
                return value
        elif cls is scalar:
            return value
        elif cls is python and (cls is not int or _INT64_MIN <= value <= _INT64_MAX):
            return scalar(value)
        return _check_feed(t, value)
    return check


def _to_numpy(v, dtype):
    if isinstance(v, np.ndarray) or dtype is _dt.variant:
        return v
    if isinstance(v, np.generic):
        return v if v.dtype == dtype else dtype.type(v)
    return np.asarray(v, dtype=dtype)[()]
