"""Every test module under tests/ is collected by the plain test command.

pytest's default `norecursedirs` holds "dist" and "build", so tests/dist/ once fell out of every run
without a word; pyproject.toml spells the list out. This test compares the files pytest collected
in this session (before `-k` deselects, recorded by tests/conftest.py) with the test modules on disk,
so a folder or a file that stops being collected fails the run instead of passing by absence.
"""
from pathlib import Path

import pytest

from tests.conftest import COLLECTED_FILES

TESTS = Path(__file__).parent.resolve()


def test_every_test_module_on_disk_is_collected(request):
    if [Path(a).resolve() for a in request.config.args] != [TESTS]:
        pytest.skip("meaningful only when the whole of tests/ is collected")
    on_disk = {p.resolve() for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts}
    missing = sorted(str(p.relative_to(TESTS)) for p in on_disk - request.config.stash[COLLECTED_FILES])
    assert not missing, f"test modules not collected (see norecursedirs in pyproject.toml): {missing}"
