"""Test-wide settings.

Hypothesis explores new random programs on every local run; under CI (the `CI`
environment variable set, as `.ci/run` does) it replays a fixed sequence, so a
landing is judged on the same examples each time. A failure found locally is
replayed from `.hypothesis/` or with `--hypothesis-seed`.
"""
import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
