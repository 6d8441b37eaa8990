"""Plain Python functions with if/while/for turned into graphs with in-graph control flow.

`@transpile.function` converts a function's control flow (AutoGraph-style:
source -> static analyses -> converters -> calls to `transpile.operators`),
traces a graph per input signature and runs it with the executor.
`transpile.convert(fn)` gives the converted Python function and
`transpile.to_code(fn)` its source. `fn.save(path, *example_args)` saves a trace
(graph and signature) that `transpile.load(path)` runs without the source;
`transpile.export_onnx(fn, example_args, path)` writes it as an ONNX model.
"""
from transpile.api import (
           Function,
           SavedFunction,
           __version__,
           convert,
           do_not_convert,
           export_onnx,
           function,
           load,
           profile,
           to_code,
)
from transpile.errors import ConversionError
from transpile.operators import ConditionallyDefinedError, StagingError, loop_options

__all__ = ["function", "Function", "convert", "to_code", "do_not_convert", "load", "SavedFunction", "export_onnx",
           "profile", "loop_options", "ConversionError", "StagingError", "ConditionallyDefinedError"]
