"""exec.trace_plot draws on a Figure of its own: the user's matplotlib backend and pyplot stay as they were."""
import importlib.util
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib (the plot extra)")
def test_plotting_leaves_the_backend_and_pyplot_alone(tmp_path):
    png = tmp_path / "memory.png"
    # a process of its own: the backend is process state, and pyplot must not have been imported before
    script = textwrap.dedent(f"""
        import sys
        import matplotlib
        matplotlib.use("svg")  # a user's choice (a notebook's inline backend, say)
        from exec.trace_plot import plot_memory
        events = [{{"ph": "C", "name": "/gpu:0 memory", "ts": t, "args": {{"bytes in use": b}}}}
                  for t, b in ((0, 0), (1000, 2 ** 20), (2000, 0))]
        plot_memory({{"traceEvents": events}}, {str(png)!r}, title="test")
        assert matplotlib.get_backend() == "svg", matplotlib.get_backend()
        assert "matplotlib.pyplot" not in sys.modules
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
