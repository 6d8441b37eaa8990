"""graph.__all__: every name it lists exists, and every class and function graph exposes is listed."""
import types

import graph

# module-level names of graph/ops modules that their star imports pass on without being API
NOT_API = {"infer", "convert_pair"}


def test_every_listed_name_exists_once():
    assert len(graph.__all__) == len(set(graph.__all__))
    missing = [n for n in graph.__all__ if not hasattr(graph, n)]
    assert not missing


def test_every_exposed_class_and_function_is_listed():
    exposed = {n for n, v in vars(graph).items()
               if not n.startswith("_") and isinstance(v, (type, types.FunctionType))
               and getattr(v, "__module__", "").startswith("graph.")}
    assert sorted(exposed - set(graph.__all__) - NOT_API) == []


def test_a_star_import_gives_the_api_and_no_internal_modules():
    namespace: dict = {}
    exec("from graph import *", namespace)
    names = set(namespace) - {"__builtins__"}
    assert names == set(graph.__all__)
    assert {n for n in names if isinstance(namespace[n], types.ModuleType)} == {"dtypes", "nest"}
    assert {"Graph", "Tensor", "Variable", "cond", "while_loop", "placeholder", "matmul"} <= names
