"""What the helpers know about the converted code running around them on one thread.

Generated code calls a helper with the values of the one statement it replaces
(`ag.while_stmt(loop_test, loop_body, (i, s), ('i', 's'))`), the way the
statement reads. Some decisions need the code *around* that statement: whether
a graph is being traced (a `print` of Python values then prints when the graph
runs), which loops are being traced (an `append` inside a graph loop makes the
list a TensorArray; a Python loop can be rebuilt as a graph loop), how deep
converted calls recurse, which arrays were written (so that a cond or loop can
carry them, and a rollback undo them), and the Python state the trace reads
(whose functions' globals and closures it captures). Passing that through
every generated call would make generated code unreadable, so it lives here,
in one `TraceState` per thread (threads may run converted code and trace
graphs concurrently), and helpers reach it with `trace_state()`. It is the
only per-thread state of this package.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field

from transpile.errors import UncatchableError


@dataclass(eq=False, slots=True)
class LoopFrame:
    """A loop being traced: a graph loop's body (with the Python lists it carries, for list.append), or a
    Python loop that could become a graph loop (`promotable`).

    Code nested in the body that learns that the loop must be built differently records it here
    (`request`), and the loop's tracer builds it again once the body is traced: `requests` are changes
    of the loop's variables' modes (loop_vars), `promote` asks a Python loop to become a graph loop.
    `weak_probes` are the changes that make the graph loop trace its variables that hold Python numbers
    as numbers, while their dtype is not learned yet (empty once it is): a dtype conflict in its body may
    come from one of them being carried at its default dtype. `list_specs` maps the spec of each list the
    loop carries as a TensorList to its variable's index: a read of one before its first append asks for
    its element dtype to be inferred.
    """

    token: object
    lists: dict = field(default_factory=dict)  # id(list object) -> index of the loop variable
    promotable: bool = False
    staged: bool = False  # a graph loop's body, not a loop running in Python
    weak_probes: dict = field(default_factory=dict)
    list_specs: dict = field(default_factory=dict)  # id(TensorArray spec) -> index of the loop variable
    requests: dict = field(default_factory=dict)
    promote: bool = False

    def request(self, changes: dict) -> None:
        """Asks for the loop to be built again with these changes of its variables' modes."""
        self.requests.update(changes)


@dataclass(eq=False, slots=True)
class TraceState:
    """The per-thread state of running converted code (see the module docstring)."""

    tracing: int = 0                                          # depth of `tracing()` blocks
    loops: list[LoopFrame] = field(default_factory=list)      # innermost last
    call_depth: dict = field(default_factory=dict)            # code object -> active converted calls
    writes: list = field(default_factory=list)                # journal of MutableArray writes (arrays.py)
    captures: object = None                                   # the captured state of the trace being built
    trial_builds: int = 0                                     # depth of builds thrown away whatever happens
    # id(tensor) -> (tensor, Python type): tensors that stand for a Python number (leaves.weak_type)
    weak_numbers: dict = field(default_factory=dict)
    conditions: list = field(default_factory=list)            # predicates of the graph conds being built
    # the function being traced: its name, and the exec device its Session runs on (None: the host only)
    function_name: str = ""
    device: object = None

    def innermost_loop(self) -> LoopFrame | None:
        return self.loops[-1] if self.loops else None

    @contextlib.contextmanager
    def capturing(self, capture):
        """Inside: a trace is built that reads and writes the Python state through `capture` (a
        captured_state.StateCapture), with a journal of array writes of its own; the trace that was
        being built (one function traced while another is) gets its own back after."""
        outer = self.captures, self.writes, self.loops, self.conditions
        # (the loops and conds being built are this trace's own: none of an outer trace's, and none that
        # an error left behind, waits on it)
        self.captures, self.writes, self.loops, self.conditions = capture, [], [], []
        try:
            yield capture
        finally:
            self.captures, self.writes, self.loops, self.conditions = outer

    @contextlib.contextmanager
    def traced_function(self, name: str, device):
        """Inside: the trace of function `name`, whose Session runs on `device`, is built (a function
        traced while another is gets its own, and the outer one's back after)."""
        outer = self.function_name, self.device
        self.function_name, self.device = name, device
        try:
            yield
        finally:
            self.function_name, self.device = outer

    def rebuild_pending(self) -> bool:
        """Whether a loop being traced will be built again (what is built meanwhile is thrown away)."""
        return any(frame.requests or frame.promote for frame in self.loops)


_per_thread = threading.local()


def trace_state() -> TraceState:
    """This thread's TraceState."""
    state = getattr(_per_thread, "state", None)
    if state is None:
        state = _per_thread.state = TraceState()
    return state


def note_conditions(error: BaseException, conditions) -> None:
    """Records on `error` the graph conditions (predicate tensors) of the construct it was raised in,
    innermost first, unless an inner construct already did: a caller that can make the values they
    depend on Python values (transpile.api: Python scalar arguments) can trace again without the error."""
    if getattr(error, "graph_conditions", None) is None:
        try:
            error.graph_conditions = list(conditions)
        except AttributeError:  # (an exception type without a __dict__)
            pass


def is_tracing() -> bool:
    """Whether this thread is inside a `tracing()` block."""
    return trace_state().tracing > 0


class tracing:
    """Marks that a graph is being traced (so `print` of Python values prints when the graph runs).

    Leaving the outermost block raises the error an UncatchableError carries.
    """

    def __enter__(self) -> None:
        state = trace_state()
        if not state.tracing:
            state.weak_numbers.clear()   # (of an earlier trace's graph)
        state.tracing += 1

    def __exit__(self, exc_type, exc, tb) -> None:
        state = trace_state()
        state.tracing -= 1
        if not state.tracing:
            state.weak_numbers.clear()   # its tensors (and their graph) are not kept alive
        if isinstance(exc, UncatchableError) and not state.tracing:
            raise exc.error.with_traceback(tb) from None


class trial_build:
    """Marks the building of graph code that is thrown away whatever happens (an attempt that only
    learns something, e.g. a list's element dtype under a guess): warnings it raises are not shown."""

    def __init__(self, active: bool = True):
        self.active = active

    def __enter__(self) -> None:
        if self.active:
            trace_state().trial_builds += 1

    def __exit__(self, *exc) -> None:
        if self.active:
            trace_state().trial_builds -= 1
