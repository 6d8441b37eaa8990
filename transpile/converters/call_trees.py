"""Routes calls to user code through `ag.call` (converted recursively) and builtins to `ag` versions."""
from __future__ import annotations

import builtins
import inspect
import math
import os
import sys
import sysconfig
import types

import gast
import numpy as np

from transpile import anno
from transpile import ast_util as A
from transpile.converters.base import Context, Converter
from transpile.liveness.activity import FUNCTION_SCOPE

# Builtins with a tensor-aware version in the runtime module (`ag.range`, `ag.len`, ...).
OVERRIDDEN_BUILTINS = frozenset({"range", "len", "enumerate", "zip", "abs", "min", "max", "sum", "int",
                                 "float", "bool", "print", "isinstance", "str", "repr", "format"})
# numpy functions that take a sequence: given a list a graph loop built, they get a stacked tensor.
SEQUENCE_FUNCTIONS = frozenset({"stack", "array", "asarray", "concatenate", "vstack"})
# numpy constructors: `np.zeros(n)`, `np.arange(n)`, `np.array([t, 1.0])`, `np.float32(t)` get graph ops from
# `ag.call` when an argument is a tensor (numpy does not dispatch these on tensors by itself).
# The functions that make new arrays go through `ag.call` too: the arrays they make are written in place.
NUMPY_CONSTRUCTORS = frozenset({"array", "asarray", "asanyarray", "ascontiguousarray", "zeros", "ones", "empty",
                                "full", "arange", "eye", "identity", "linspace", "logspace", "geomspace", "tri",
                                "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                "float16", "float32", "float64", "copy", "zeros_like", "ones_like", "empty_like",
                                "full_like"})
# numpy functions of an array, given a list or tuple display (`np.sum([a, b])`): numpy looks for tensors in its
# array arguments, not inside lists, so `ag.call` builds the graph op when the list holds one.
NUMPY_OF_ARRAYS = frozenset({"sum", "mean", "prod", "max", "min", "amax", "amin", "any", "all", "argmax", "argmin",
                             "var", "std", "cumsum", "cumprod", "sort", "argsort", "pad", "flip", "transpose",
                             "reshape", "squeeze", "expand_dims", "clip", "ravel", "round", "around", "count_nonzero",
                             "dot", "outer", "take", "tile", "swapaxes", "moveaxis"})
# np.random's functions: graph random ops from `ag.call` while a graph is traced (graph/ops/numpy_random.py), so
# that each run draws anew.
NUMPY_RANDOM = frozenset({"rand", "randn", "random", "random_sample", "ranf", "sample", "uniform", "normal",
                          "standard_normal", "exponential", "randint", "choice"})
# Python's math functions: math calls float() on its argument, which a graph tensor cannot give, so `ag.call` builds
# numpy's function of a graph scalar instead (graph/ops/python_math.py), standing for the Python number math gives.
MATH_FUNCTIONS = frozenset({"exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "sqrt", "cbrt", "sin", "cos",
                            "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                            "fabs", "degrees", "radians", "hypot", "copysign", "fmod", "pow", "floor", "ceil", "trunc",
                            "isnan", "isinf", "isfinite", "isclose"})
# Method names of arrays: `x.sum()` on a local is almost always a tensor method, left alone.
_ARRAY_METHODS = frozenset(n for n in dir(np.ndarray) if not n.startswith("_")) | {"numpy", "read", "write",
                                                                                  "stack", "unstack", "gather",
                                                                                  "scatter", "assign",
                                                                                  "assign_add", "assign_sub"}
LIBRARY_ROOTS = ("numpy", "graph", "exec", "grad", "dist", "transpile", "scipy", "math", "cmath",
                  "functools", "itertools", "operator", "collections", "typing", "builtins", "random")


def _library_dirs() -> tuple:
    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    dirs |= {os.path.join(here, pkg) for pkg in ("graph", "exec", "grad", "dist", "transpile")}
    return tuple(os.path.join(d, "") for d in dirs if d)


LIBRARY_DIRS = _library_dirs()


def is_library_object(obj) -> bool:
    """Whether `obj` comes from numpy, the standard library, site-packages or our own packages."""
    if isinstance(obj, types.ModuleType):
        return True
    module = getattr(obj, "__module__", None) or ""
    if module.split(".")[0] in LIBRARY_ROOTS:
        return True
    mod = sys.modules.get(module)
    filename = getattr(mod, "__file__", None) if mod is not None else None
    if filename is None:
        try:
            filename = inspect.getfile(obj)
        except (TypeError, OSError):
            return not isinstance(obj, types.FunctionType)
    return os.path.abspath(filename).startswith(LIBRARY_DIRS)


class CallTrees(Converter):
    """Calls whose target may be user code go through `ag.call`. Before::

        h = step(h, x)
        y = self.layer(h)
        n = len(xs)
        z = np.tanh(h)

    After::

        h = ag.call(step, h, x)
        y = ag.call(self.layer, h)
        n = ag.len(xs)
        z = np.tanh(h)

    An f-string becomes `ag.fstr(...)` of its parts and `"..." % x` becomes
    `ag.percent("...", x)`, so that graph values in them give their text when the
    graph runs (transpile/operators/formatting.py). Targets resolved at
    conversion time to numpy, the standard library or this
    project, and methods of arrays on local values (`x.sum()`), are left as they
    are (except numpy's sequence functions, e.g. `np.stack(outs)`, on a list the
    function appends to: a graph loop turns such a list into a tensor; and numpy's
    constructors, e.g. `np.zeros(n)`, which need `ag.call` when given tensors); nested
    functions and lambdas of the converted function are converted
    with it. Zero-argument `super()` gets its explicit form.
    """

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.locals_stack: list[tuple[set, set, str | None]] = []  # (locals, converted local fns, first param)

    def _enter_function(self, node):
        scope = anno.get_anno(node, FUNCTION_SCOPE)
        local = scope.local_names() if scope is not None else set()
        converted = {s.name for s in gast.walk(node) if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef))
                     and s is not node}
        for s in gast.walk(node):
            if isinstance(s, gast.Assign) and isinstance(s.value, gast.Lambda):
                converted |= {t.id for t in s.targets if isinstance(t, gast.Name)}
        args = node.args.posonlyargs + node.args.args
        first = args[0].id if args else None
        outer = self.locals_stack[-1] if self.locals_stack else (set(), set(), None)
        self.locals_stack.append((local | outer[0], converted | outer[1], first))

    def transform(self, node):
        self.appended = {n.args[0].id for n in gast.walk(node)
                         if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
                         and n.func.attr == "list_append" and n.args and isinstance(n.args[0], gast.Name)}
        return self.visit(node)

    def visit_FunctionDef(self, node):
        self._enter_function(node)
        node = self.generic_visit(node)
        self.locals_stack.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        if not self.locals_stack:
            self.locals_stack.append((set(), set(), None))
        scope = anno.get_anno(node, FUNCTION_SCOPE)
        outer = self.locals_stack[-1]
        local = scope.local_names() if scope is not None else set()
        self.locals_stack.append((local | outer[0], outer[1], outer[2]))
        node = self.generic_visit(node)
        self.locals_stack.pop()
        return node

    def visit_ClassDef(self, node):
        return node

    def _resolve(self, func):
        """(found, value) for a name or attribute chain rooted outside the function."""
        local, _, _ = self.locals_stack[-1] if self.locals_stack else (set(), set(), None)
        chain = []
        while isinstance(func, gast.Attribute):
            chain.append(func.attr)
            func = func.value
        if not isinstance(func, gast.Name) or func.id in local:
            return False, None
        root = func.id
        if root in self.ctx.fn_closure:
            value = self.ctx.fn_closure[root]
        elif root in self.ctx.fn_globals:
            value = self.ctx.fn_globals[root]
        elif hasattr(builtins, root):
            value = getattr(builtins, root)
        else:
            return False, None
        for attr in reversed(chain):
            if not isinstance(value, (types.ModuleType, type)):
                return False, None
            try:
                value = getattr(value, attr)
            except AttributeError:
                return False, None
        return True, value

    def visit_JoinedStr(self, node):
        return self._formatted(self.generic_visit(node))

    def visit_BinOp(self, node):
        node = self.generic_visit(node)
        if isinstance(node.op, gast.Mod) and isinstance(node.left, gast.Constant) and isinstance(node.left.value, str):
            return A.locate(self.ctx.ag_call("percent", [node.left, node.right]), node)
        return node

    def _formatted(self, joined):
        """An f-string: its parts, so that graph values in it give their text when the graph runs."""
        parts = []
        for v in joined.values:
            if isinstance(v, gast.FormattedValue):
                if v.format_spec is None and v.conversion in (-1, None):
                    parts.append(v.value)
                else:
                    spec = v.format_spec if v.format_spec is not None else A.const("")
                    parts.append(self.ctx.ag_call("fmt", [v.value, spec, A.const(v.conversion)]))
            else:
                parts.append(v)
        return A.locate(self.ctx.ag_call("fstr", parts), joined)

    def visit_Call(self, node):
        node = self.generic_visit(node)
        func = node.func
        local, converted, first = self.locals_stack[-1] if self.locals_stack else (set(), set(), None)
        if isinstance(func, gast.Name) and func.id in converted:
            return node
        root = func
        while isinstance(root, gast.Attribute):
            root = root.value
        if isinstance(root, gast.Name) and root.id == self.ctx.ag:
            return node
        if isinstance(func, gast.Name) and func.id == "super" and not node.args and first is not None \
                and func.id not in local:
            node.args = [A.name("__class__"), A.name(first)]
            return A.locate(node, func)
        found, value = self._resolve(func)
        if found:
            if isinstance(func, gast.Name) and func.id in OVERRIDDEN_BUILTINS \
                    and value is getattr(builtins, func.id):
                node.func = A.locate(self.ctx.ag_attr(func.id), func)
                return node
            name = getattr(value, "__name__", None)
            if (name in SEQUENCE_FUNCTIONS and getattr(np, name) is value and node.args
                    and isinstance(node.args[0], gast.Name) and node.args[0].id in self.appended) \
                    or (name in NUMPY_CONSTRUCTORS and getattr(np, name, None) is value) \
                    or (name in NUMPY_OF_ARRAYS and getattr(np, name, None) is value and node.args
                        and isinstance(node.args[0], (gast.List, gast.Tuple))) \
                    or (name in NUMPY_RANDOM and getattr(np.random, name, None) is value) \
                    or (name in MATH_FUNCTIONS and getattr(math, name, None) is value):
                return A.locate(self.ctx.ag_call("call", [func] + list(node.args), node.keywords), node)
            if is_library_object(value) or isinstance(value, type):
                return node
        elif isinstance(func, gast.Attribute) and func.attr in _ARRAY_METHODS \
                and not (isinstance(func.value, gast.Name) and func.value.id == first and first == "self"):
            return node
        new = self.ctx.ag_call("call", [func] + list(node.args), node.keywords)
        return A.locate(new, node)


def transform(fn_node, ctx: Context):
    return CallTrees(ctx).transform(fn_node)
