"""`Signature`: what a graph computes for a caller, so that it can run without the code that built it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from graph import nest
from graph.node import Node, Tensor
from graph.op_names import PLACEHOLDER


@dataclass(frozen=True, slots=True)
class Output:
    """A leaf of `Signature.structure`: the signature's output `index`. A list the traced function built
    (`as_list` set) is a Python list of the value's rows: numpy's ("items"), or Python numbers ("int",
    "float", "bool"); with `number`, the value is one Python number of that type."""

    index: int
    as_list: str | None = None
    number: bool = False

    def value(self, values: list):
        v = values[self.index]
        if self.as_list is None:
            return v
        return _NUMBER_TYPES[self.as_list](v) if self.number else python_list(v, self.as_list)


_NUMBER_TYPES = {"int": int, "float": float, "bool": bool}


def python_list(value, items: str) -> list:
    """`value`'s rows as a Python list: numpy's ("items"), or Python numbers of type `items`."""
    value = np.asarray(value)
    kind = _NUMBER_TYPES.get(items)
    if kind is not None and value.ndim == 1:
        return [kind(v) for v in value.tolist()]
    return list(value)


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
            if not isinstance(t, Tensor) or t.op != PLACEHOLDER:
                raise TypeError(f"a signature's inputs are placeholders, got {t!r}")
        if self.structure is _FLAT:
            object.__setattr__(self, "structure", tuple(Output(i) for i in range(len(self.outputs))))

    def pack(self, values: list):
        """The results with the signature's structure, from the fetched values of `outputs`."""
        if not isinstance(self.structure, (list, tuple, dict)):
            return self.structure.value(values) if isinstance(self.structure, Output) else self.structure
        leaves = [v.value(values) if isinstance(v, Output) else v for v in nest.flatten(self.structure)]
        return nest.pack_as(self.structure, leaves)
