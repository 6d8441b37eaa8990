"""Errors of code written in IPython or Jupyter cells name the cell and its line ("cell [3], line 4"), not
IPython's own files or the name the cell was compiled under."""
import pytest

from graph.errors import SourceLocation, notebook_cell

interactiveshell = pytest.importorskip("IPython.core.interactiveshell")

DEFINE = """\
import numpy as np
import transpile

@transpile.function
def shrink(x, n):
    i = 0
    while i < n:
        x = x - 4.0
        assert np.all(x > -5), "too small"
        i += 1
    return x
"""


@pytest.fixture
def shell():
    shell = interactiveshell.InteractiveShell.instance()
    yield shell
    interactiveshell.InteractiveShell.clear_instance()


def _run(shell, source: str):
    """The cell's number and the error its code raised (None if none)."""
    number = shell.execution_count
    result = shell.run_cell(source, store_history=True)
    return number, result.error_before_exec or result.error_in_exec


def test_a_run_error_names_the_cell_and_line_of_the_loop_and_the_op(shell):
    defined, error = _run(shell, DEFINE)
    assert error is None
    _run(shell, "x = 1")  # another cell between: the numbers must be the defining cell's, not the last one's
    called, error = _run(shell, "shrink(np.ones(3) * 5, 4)")
    message = str(error)
    assert called > defined + 1
    assert f"built at cell [{defined}], line 9" in message, message
    assert f"in iteration 2 of the while loop at cell [{defined}], line 7" in message, message
    assert "interactiveshell.py" not in message and "contextlib.py" not in message and "<ipython-input" not in message


def test_a_graph_building_error_names_the_cell(shell):
    defined, error = _run(shell, DEFINE.replace("return x", "return x @ np.ones((4, 4))"))
    assert error is None
    _, error = _run(shell, "shrink(np.ones(3) * 5, 4)")
    assert str(error).startswith(f"cell [{defined}], line 11: MatMul"), str(error)


def test_jupyter_cells_compiled_as_temporary_files_are_named_by_their_number(shell):
    """Jupyter's kernel compiles a cell as "/tmp/ipykernel_<pid>/<hash>.py", mapped to its number by the
    shell's compiler (as a cell's name in IPython's terminal is)."""
    shell.compile._filename_map["/tmp/ipykernel_42/1234.py"] = 7
    assert notebook_cell("/tmp/ipykernel_42/1234.py") == 7
    assert str(SourceLocation("/tmp/ipykernel_42/1234.py", 3)) == "cell [7], line 3"


def test_cell_names_outside_a_shell():
    assert notebook_cell("<ipython-input-12-0123456789ab>") == 12
    assert notebook_cell("<compiled program #3>") is None and notebook_cell(__file__) is None
    assert str(SourceLocation("<ipython-input-12-0123456789ab>", 4)) == "cell [12], line 4"
    assert str(SourceLocation("/a/f.py", 4)) == "/a/f.py:4" and SourceLocation("/a/f.py", 4).short == "f.py:4"
