"""Compiled execution: a plan's graph as one straight Python function.

Loop frames become `while` loops, conds `if`/`else`, every op one direct call of its kernel
(docs/compiled.md). `compile_program` raises `Unstructured` for graph shapes it does not
handle; `select_program` then leaves the plan to the dataflow executor.
"""
from exec.compiled.auto import MODES, prefers_dataflow, select_program
from exec.compiled.entry import make_entry
from exec.compiled.program import Program, compile_program
from exec.compiled.structure import Unstructured

__all__ = ["MODES", "Program", "Unstructured", "compile_program", "make_entry", "prefers_dataflow",
           "select_program"]
