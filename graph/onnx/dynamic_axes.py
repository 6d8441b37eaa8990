"""Named dynamic dimensions of an exported model's inputs and outputs (`export(..., dynamic_axes=...)`).

As torch.onnx.export's `dynamic_axes`: `{"x": {0: "batch"}, "output_0": {0: "batch"}}` names axis 0 of
input `x` and of the first output "batch" (ONNX `dim_param`), so that onnxruntime takes any size
there and the dims that must agree carry one name; `{"x": [0]}` names it "x_0". A named axis must be
unknown in the graph (a placeholder built with None there, or a `transpile.export_onnx` trace, which
makes the named input axes unknown before tracing): an axis the graph fixed would give a model that
claims sizes it cannot compute with.
"""
from __future__ import annotations

from typing import Mapping

from graph.node import Tensor
from graph.onnx.lowering import ExportError
from graph.op_names import PLACEHOLDER
from graph.shapes import format_shape


def normalize(dynamic_axes: Mapping | None) -> dict[str, dict[int, str]]:
    """`dynamic_axes` as {value name: {axis: dim name}}; a list of axes gets names "<value>_<axis>"."""
    out: dict[str, dict[int, str]] = {}
    for name, axes in (dynamic_axes or {}).items():
        if isinstance(axes, Mapping):
            named = {int(a): str(d) for a, d in axes.items()}
        elif isinstance(axes, (list, tuple, set, frozenset)):
            named = {int(a): f"{name}_{int(a)}" for a in axes}
        else:
            raise TypeError(f"dynamic_axes[{name!r}] must be a list of axes or a dict axis -> dimension name, "
                            f"e.g. {{{name!r}: {{0: 'batch'}}}}; got {axes!r}")
        out[str(name)] = named
    return out


def check(axes: dict[str, dict[int, str]], values: dict[str, Tensor]) -> None:
    """Refuses names that are not the model's inputs or outputs (`values`: name -> its tensor), axes past a
    value's rank, and axes the graph fixed, each with what to change."""
    for name, named in axes.items():
        t = values.get(name)
        if t is None:
            raise ValueError(f"dynamic_axes names {name!r}, which is not an input or output of the model "
                             f"(they are {', '.join(map(repr, values))})")
        if t.shape is None:
            continue
        for axis in named:
            if not 0 <= axis < len(t.shape):
                raise ValueError(f"dynamic_axes[{name!r}] names axis {axis}, but {name!r} has "
                                 f"{len(t.shape)} dims ({t.dtype}{format_shape(t.shape)}): axes count from 0")
            size = t.shape[axis]
            if size is not None:
                raise ExportError(t.node, f"axis {axis} of {name!r} ({t.dtype}{format_shape(t.shape)}) is fixed at "
                                  f"{size} in the graph, so the model cannot take other sizes there: "
                                  + _how_to_free(name, t, axis))


def _how_to_free(name: str, t: Tensor, axis: int) -> str:
    if t.op == PLACEHOLDER:
        return (f"build the placeholder with None there (graph.placeholder(..., shape with None at {axis})), or "
                "export with transpile.export_onnx(..., dynamic_axes=...), which traces the function so")
    return ("it does not follow the inputs' dynamic axes (it is computed at "
            f"{t.node.source if t.node.source else 'an unknown line'}); name the input axes it depends on, or "
            f"leave {name!r} out of dynamic_axes")


def name_dims(value_infos, axes: dict[str, dict[int, str]]) -> None:
    """Writes the names of `axes` into the ONNX types of `value_infos` (a graph's inputs or outputs)."""
    for info in value_infos:
        named = axes.get(info.name)
        if not named or not info.type.HasField("tensor_type"):
            continue
        dims = info.type.tensor_type.shape.dim
        for axis, dim_name in named.items():
            dims[axis].dim_param = dim_name  # a oneof with dim_value: the fixed size, if any, is cleared
