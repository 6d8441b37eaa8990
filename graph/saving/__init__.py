"""Saved graphs: `Graph.save(path)` and `graph.load(path)`, in a documented, versioned format.

The format (docs/export.md) is a zip archive of one JSON document (nodes,
attributes, control-flow records, Variables, the signature of a traced
function) and the arrays it refers to. A loaded graph runs, its gradient parts
included, without the Python code that built it.
"""
from graph.core import Graph
from graph.saving.archive import FORMAT, FORMAT_VERSION
from graph.saving.reader import SavedGraph, load, load_saved
from graph.saving.signature import Output, Signature
from graph.saving.values import FormatError
from graph.saving.writer import save

# `graph.save` is a Graph method the way Tensor's operators are its methods: installed by the module that
# implements it, which needs the graph types (graph.core cannot import it back).
Graph.save = save

__all__ = ["save", "load", "load_saved", "SavedGraph", "Signature", "Output", "FormatError", "FORMAT",
           "FORMAT_VERSION"]
