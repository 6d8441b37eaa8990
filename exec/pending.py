"""The pending-input record: what a node has received so far in one iteration.

A node that waits for several inputs (or for one control input) gets a record in
its iteration when the first of them arrives, copied from the plan's template:

    [remaining, dead, slot 0, ..., slot n-1]

one slot per input, data inputs then control inputs. Each arriving value is written
into its slot and `remaining` counts down; at zero the node is queued with its data
slots as arguments, dead if any input was. A cond Merge's record is [remaining, fired]:
it forwards the first live input and is dead only when none was.

The record is a list indexed by these constants rather than an object with named
fields: it is written on every delivery, and list indexing is CPython's fastest access.
"""
from __future__ import annotations

REMAINING = 0   # inputs still to arrive
DEAD = 1        # an input was dead: so are the node's outputs
FIRED = 1       # cond Merge records: a live input was forwarded already
FIRST_SLOT = 2  # input j's value is at FIRST_SLOT + j


def template(num_inputs: int) -> list:
    """The empty record of a node with `num_inputs` inputs."""
    return [num_inputs, False] + [None] * num_inputs


def merge_record(num_inputs: int) -> list:
    """The record of a cond Merge with `num_inputs` inputs, none arrived."""
    return [num_inputs, False]


def slot_of(input_index: int) -> int:
    """The record index of input `input_index` (data inputs first, then control inputs)."""
    return FIRST_SLOT + input_index
