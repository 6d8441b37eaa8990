"""What a trace hands out of the graph: the values a converted function returns or leaves in Python
state, as the caller gets them after each run.

A tensor is fetched and given as numpy gives it. Where the traced program held a Python value of another
kind, the fetched value is made that kind again: a list that graph control flow built or resized (a
TensorList or GraphList) is a Python list of its items (`ListOutput`), and a tensor that stands for a
Python number (an int argument counted up in a graph loop) is that Python number (`NumberOutput`).
"""
from __future__ import annotations

from dataclasses import dataclass

import graph
from graph.node import Tensor
from graph.saving.signature import python_list
from transpile.operators.arrays import MutableArray
from transpile.operators.data_structures import NO_ITEMS, TensorList, stacked_list
from transpile.operators.graph_lists import GraphList
from transpile.operators.iterables import GraphRange
from transpile.operators.leaves import weak_type
from transpile.operators.values import MaybeDefined, Undefined


@dataclass(frozen=True)
class ListOutput:
    """A list graph control flow built or resized: its stacked `items` are fetched, and the caller gets a
    Python list of them (of Python numbers, where the items were Python numbers of `python_type`)."""

    items: Tensor
    python_type: type | None = None

    @property
    def tensor(self) -> Tensor:
        return self.items

    @property
    def kind(self) -> str:
        """What its items are (graph.saving's Output.as_list): Python numbers of a type, or numpy's."""
        known = self.python_type is not None and self.python_type is not NO_ITEMS
        return self.python_type.__name__ if known else "items"

    def finish(self, value) -> list:
        return python_list(value, self.kind)


@dataclass(frozen=True)
class NumberOutput:
    """A tensor that stands for a Python number in the traced program: the caller gets that number."""

    tensor: Tensor
    python_type: type

    @property
    def kind(self) -> str:
        return self.python_type.__name__

    def finish(self, value):
        return self.python_type(value)


def output_value(v):
    """A value as a trace hands it out: a tensor, a ListOutput or NumberOutput (fetched, then made the
    Python value), or a Python value (read maybe-defined values, the contents of arrays)."""
    if isinstance(v, MaybeDefined):
        v = v.read()
    if isinstance(v, MutableArray):
        return v.value
    if isinstance(v, TensorList):
        v = stacked_list(v)
    if isinstance(v, GraphList):
        return ListOutput(v.items, v.python_type)
    if isinstance(v, graph.TensorArray):
        return v.stack()
    if isinstance(v, GraphRange):
        return graph.convert(v)
    if isinstance(v, Undefined):
        raise v.error()
    if isinstance(v, Tensor) and v.shape == ():
        kind = weak_type(v)
        if kind is not None:
            return NumberOutput(v, kind)
    return v


Finished = (ListOutput, NumberOutput)
