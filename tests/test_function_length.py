"""No function over 80 lines and no module over 800 in transpile/, graph/, exec/, grad/, dist/: small
functions and modules with one job each.

The executor's scheduling loop is the exception, for speed; the reason is written beside it
(exec/executor.py, `_Run._loop`)."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("transpile", "graph", "exec", "grad", "dist")
LIMIT = 80
MODULE_LIMIT = 800
EXCEPTIONS = {("exec/executor.py", "_loop")}


def _long_functions():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(), filename=rel)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > LIMIT and (rel, node.name) not in EXCEPTIONS:
                        yield f"{rel}:{node.lineno} {node.name} ({length} lines)"


def test_no_function_is_over_80_lines():
    assert list(_long_functions()) == []


def test_no_module_is_over_800_lines():
    long = [f"{p.relative_to(ROOT).as_posix()} ({n} lines)" for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))
            if (n := p.read_text().count("\n")) > MODULE_LIMIT]
    assert long == []
