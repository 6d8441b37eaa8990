"""`Signature`: what a graph computes for a caller, so that it can run without the code that built it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graph import nest
from graph.node import Node, Tensor


@dataclass(frozen=True, slots=True)
class Output:
    """A leaf of `Signature.structure`: the signature's output `index`."""

    index: int


_FLAT = object()  # Signature's default structure: the outputs as a flat tuple


@dataclass(frozen=True)
class Signature:
    """The inputs and results of a function traced into a graph.

    `inputs` are the placeholders a caller feeds, in argument order, and
    `input_names` their names (the function's parameters). `outputs` are the
    tensors (or Variables, whose value after the run is the result) a call
    fetches. `structure` is how the results nest: `Output(i)` leaves stand for
    `outputs[i]`, other leaves are Python values the function always returns.
    `effects`, when set, is a node to run with the outputs (assignments the
    function makes without returning their values).
    """

    inputs: tuple[Tensor, ...]
    input_names: tuple[str, ...]
    outputs: tuple[Any, ...]
    structure: Any = _FLAT
    effects: Node | None = None
    name: str = ""

    def __post_init__(self):
        if len(self.inputs) != len(self.input_names):
            raise ValueError(f"{len(self.inputs)} inputs but {len(self.input_names)} input names")
        if len(set(self.input_names)) != len(self.input_names):
            raise ValueError(f"input names must differ: {list(self.input_names)}")
        for t in self.inputs:
            if not isinstance(t, Tensor) or t.op != "Placeholder":
                raise TypeError(f"a signature's inputs are placeholders, got {t!r}")
        if self.structure is _FLAT:
            object.__setattr__(self, "structure", tuple(Output(i) for i in range(len(self.outputs))))

    def pack(self, values: list):
        """The results with the signature's structure, from the fetched values of `outputs`."""
        if not isinstance(self.structure, (list, tuple, dict)):
            return values[self.structure.index] if isinstance(self.structure, Output) else self.structure
        leaves = [values[v.index] if isinstance(v, Output) else v for v in nest.flatten(self.structure)]
        return nest.pack_as(self.structure, leaves)
