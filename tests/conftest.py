"""Test-wide settings.

Hypothesis explores new random programs on every local run; under CI (the `CI`
environment variable set, as `.ci/run` does) it replays a fixed sequence, so a
landing is judged on the same examples each time. A failure found locally is
replayed from `.hypothesis/` or with `--hypothesis-seed`.
"""
import os
from pathlib import Path

import pytest
from hypothesis import settings

COLLECTED_FILES = pytest.StashKey[set[Path]]()

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    """Remember which files were collected before `-k` / `-m` deselect any (tests/test_collection.py)."""
    config.stash[COLLECTED_FILES] = {item.path.resolve() for item in items}
