"""The package layering of DESIGN.md, checked by reading every module's imports."""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
OURS = {"graph", "exec", "grad", "dist", "transpile"}
ALLOWED = {
    "graph": set(),
    "exec": {"graph"},
    "grad": {"graph"},
    "dist": {"graph", "exec"},
    "transpile": {"graph", "exec", "grad"},
}
# Within transpile, only these modules may import graph / exec.
TRANSPILE_GRAPH_USERS = {"operators.py", "api.py", "__init__.py"}


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


def _modules():
    for pkg in sorted(OURS):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            yield pkg, path


@pytest.mark.parametrize("pkg,path", list(_modules()), ids=lambda v: str(v).replace(str(ROOT) + "/", ""))
def test_module_respects_layering(pkg, path):
    for top, line in _imports(path):
        if top not in OURS or top == pkg:
            continue
        where = f"{path.relative_to(ROOT)}:{line}"
        assert top in ALLOWED[pkg], f"{where}: {pkg}/ may not import {top}/ (allowed: {sorted(ALLOWED[pkg])})"
        if pkg == "transpile" and top in ("graph", "exec"):
            assert path.name in TRANSPILE_GRAPH_USERS, \
                f"{where}: only transpile/operators.py and transpile/api.py may import {top}/"


def test_every_package_is_checked():
    assert {p for p, _ in _modules()} == OURS
