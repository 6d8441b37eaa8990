"""How each variable crosses a graph loop or a graph cond: one typed description per variable.

A graph loop is traced with a *loop mode* per variable it may carry, and a graph cond gives each variable
a *cond mode* per branch. Tracing a body or the branches shows what the variables really are (a
dtype the body changes, a list it appends to, a dict key it adds, a variable first assigned in it); the
tracer then updates the modes and traces again (loop_tracer.py, conditionals.py), until they settle.
The records are frozen: an update is a new record (`dataclasses.replace`).

Loop modes (loop_vars.py turns them into loop variables and reads the body's values back):

    Fixed           not carried: the body leaves it as it is
    Probe           not carried: traced once as a Python number, to learn the dtype the body gives it
    Carried         its leaves as tensors (of `dtypes`, or their own), with the lists at `lists` as
                    TensorArrays and the dict keys the body adds (`added`) undefined until assigned
    FirstAssigned   first assigned in the body: undefined if the loop runs zero times
    ReturnValue     the function's return value: a placeholder of `spec` until the body returns
    Appended        a Python list the body appends to, as a TensorList (`inference`: of a list the body
                    reads before its first append, how its element dtype is learned)
    Resized         a Python list the body resizes (pop, insert, ...), as a GraphList

Cond modes (cond_outputs.py encodes each branch's value in it and restores the merged value):

    Dropped         not an output: the variable keeps a value decided while tracing
    AsValue         its leaves as tensors of `dtypes` (None: a non-numeric leaf, restored after)
    AsPlaceholder   a placeholder of `spec` (the branch raised, or has not returned yet)
    AsMaybe         a MaybeDefined of leaves of `dtypes`
    AsLists         as AsValue, with the lists at `lists` as TensorArrays
    WithGraphLists  another mode, after lists one branch resizes (GraphLists) and the other leaves
                    Python lists are GraphLists in both
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import graph
from graph import nest
from graph.node import Tensor


@dataclass(frozen=True)
class LeafSpec:
    """The dtype and shape of one leaf of a value."""

    dtype: object
    shape: tuple | None


@dataclass(frozen=True, eq=False)
class Spec:
    """The structure, dtypes and shapes of a value (compared without touching its tensors)."""

    structure: object
    leaves: tuple[LeafSpec, ...]

    def __eq__(self, other):
        return isinstance(other, Spec) and self.leaves == other.leaves and \
            nest.same_structure(self.structure, other.structure)

    __hash__ = None


@dataclass(frozen=True)
class ListPath:
    """A list inside a variable's value (at `path`: the keys and indices that lead to it) that crosses a
    cond or loop as a TensorArray of elements of `dtype` and `element_shape`; `stack_after`: outside its
    loops it is a list of the stacked elements again."""

    path: tuple
    dtype: object
    element_shape: object
    stack_after: bool


@dataclass(frozen=True)
class AddedKey:
    """A dict key a loop body adds (at `path`), with the spec of its value."""

    path: tuple
    spec: Spec


# --------------------------------------------------------------------------- lists read before their first append

class ElementProbe:
    """One attempt at building the graph loop that carries a list read before its first append.

    The reads see stand-in elements of dtype `guess`; an append of a value computed from a
    stand-in records its dtype here instead of writing it, so that a guess never decides the
    element dtype when another append (of a value that does not depend on the guess) does.
    """

    def __init__(self, guess):
        self.guess = guess
        self.stand_ins: set = set()   # nodes of the stand-in elements
        self.appended: list = []      # dtypes of the appended values computed from stand-ins

    def stand_in(self) -> Tensor:
        t = graph.placeholder(self.guess, None, name="element_before_first_append")
        self.stand_ins.add(t.node)
        return t

    def depends_on_stand_ins(self, value) -> bool:
        todo = [t.node for t in nest.flatten(value) if isinstance(t, Tensor)]
        seen = set()
        while todo:
            node = todo.pop()
            if node in self.stand_ins:
                return True
            if node in seen:
                continue
            seen.add(node)
            todo.extend(t.node for t in node.inputs)
            todo.extend(node.control_inputs)
        return False


# The dtypes that reads of a list see, one attempt each, before its element dtype is known: the weakest
# integer and the weakest float, so that a value computed from them takes the dtype of whatever else
# it is computed from, as a value computed from an empty list's (absent) elements does in Python.
_ELEMENT_GUESSES = (np.dtype(np.int8), np.dtype(np.float16))


@dataclass(frozen=True)
class ElementInference:
    """The element dtype of a list that a graph loop reads before appending to it, inferred from the
    appends (the loop is built once per guess, then with the dtype found).

    Python's list holds what the first append gives it, and in the first iteration a read of the
    empty list contributes nothing to it. So: an append of a value that does not depend on the reads
    gives the dtype directly; when every append depends on them, each guess in `_ELEMENT_GUESSES`
    gives a dtype, and the smallest of those (the one the others promote from) is the list's.
    """

    guesses: tuple = _ELEMENT_GUESSES   # this attempt's guess first
    found: tuple = ()                   # the dtype appended under each earlier guess
    dtype: object = None                # the inferred dtype, once known

    def probe(self) -> ElementProbe | None:
        return None if self.dtype is not None else ElementProbe(self.guesses[0])

    def after(self, probe: ElementProbe, learned) -> "ElementInference":
        """What the next attempt does, after one whose appends taught the list `learned` (a dtype,
        or None) and recorded `probe.appended`."""
        if learned is not None:  # an append that does not depend on the reads
            return ElementInference(dtype=learned)
        if not probe.appended:  # nothing is appended: the reads never find an element; float64, as np.asarray([])
            return ElementInference(dtype=np.dtype(np.float64))
        found = self.found + (np.result_type(*probe.appended),)
        if len(self.guesses) > 1:
            return ElementInference(self.guesses[1:], found)
        return ElementInference(dtype=_smallest(found))

    def failed(self) -> "ElementInference":
        """The next attempt after one that failed under this guess."""
        if len(self.guesses) > 1:
            return ElementInference(self.guesses[1:], self.found)
        if self.found:
            return ElementInference(dtype=_smallest(self.found))
        return ElementInference((), self.found)  # no guess is left: the last failure is the error

    @property
    def exhausted(self) -> bool:
        return self.dtype is None and not self.guesses


def _smallest(dtypes):
    """The dtype that each of the others promotes from (else their common promotion)."""
    for d in dtypes:
        if all(np.result_type(d, other) == other for other in dtypes):
            return d
    return np.result_type(*dtypes)


# --------------------------------------------------------------------------- loop modes

@dataclass(frozen=True)
class Fixed:
    pass


@dataclass(frozen=True)
class Probe:
    pass


@dataclass(frozen=True)
class ResizedPath:
    """A list at `path` in a variable that one branch resizes (a GraphList of items `items`, a
    graph_lists.ItemSpec) and the other leaves a Python list."""

    path: tuple
    items: object


@dataclass(frozen=True)
class Carried:
    dtypes: tuple | None = None
    lists: tuple[ListPath, ...] = ()
    added: tuple[AddedKey, ...] = ()
    resized: tuple[ResizedPath, ...] = ()  # ResizedPaths: Python lists inside it that the body resizes (GraphLists)

    @property
    def as_leaves(self) -> bool:
        """No lists carried as TensorArrays and no added dict keys: its leaves take the dtypes the loop learns."""
        return not self.lists and not self.added

    @property
    def plain(self) -> bool:
        """Carried as its own leaves: no learned dtypes, lists, added keys or resized lists."""
        return self.dtypes is None and self.as_leaves and not self.resized


@dataclass(frozen=True)
class FirstAssigned:
    spec: Spec


@dataclass(frozen=True)
class ReturnValue:
    spec: Spec
    weak: tuple = ()   # per leaf of `spec`: whether it came from a Python number


@dataclass(frozen=True)
class Appended:
    inference: ElementInference | None = None


@dataclass(frozen=True)
class Resized:
    spec: object = None        # graph_lists.ItemSpec, or None: the list's own (a guess for an empty list)


LoopMode = Fixed | Probe | Carried | FirstAssigned | ReturnValue | Appended | Resized
FIXED, PROBE, CARRIED = Fixed(), Probe(), Carried()


# --------------------------------------------------------------------------- cond modes

@dataclass(frozen=True)
class Dropped:
    def key(self):
        return ("drop",)


@dataclass(frozen=True)
class AsValue:
    dtypes: tuple

    def key(self):
        return ("value", _dtype_keys(self.dtypes))


@dataclass(frozen=True)
class AsPlaceholder:
    spec: Spec

    def key(self):
        return ("placeholder", tuple(_dtype_key(leaf.dtype) for leaf in self.spec.leaves))


@dataclass(frozen=True)
class AsMaybe:
    dtypes: tuple

    def key(self):
        return ("maybe", _dtype_keys(self.dtypes))


@dataclass(frozen=True)
class AsLists:
    dtypes: tuple
    lists: tuple[ListPath, ...]

    def key(self):
        return ("lists", _dtype_keys(self.dtypes), tuple(p.path for p in self.lists))


@dataclass(frozen=True)
class WithGraphLists:
    """`inner`, after the Python lists at `lists` become GraphLists of the resized one's items."""

    inner: object
    lists: tuple[ResizedPath, ...]

    def key(self):
        return ("graph lists", self.inner.key(),
                tuple((p.path, _dtype_key(p.items.dtype), p.items.shape) for p in self.lists))


CondMode = Dropped | AsValue | AsPlaceholder | AsMaybe | AsLists | WithGraphLists
DROPPED = Dropped()


def _dtype_key(dtype):
    # `np.dtype("float64") == None` is True: dtypes compare as their names
    if isinstance(dtype, np.dtype) or dtype is graph.dtypes.variant:
        return str(dtype)
    return dtype


def _dtype_keys(dtypes) -> tuple:
    return tuple(_dtype_key(d) for d in dtypes)
