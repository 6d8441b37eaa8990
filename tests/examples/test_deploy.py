"""Smoke test of examples/deploy.py: tiny models, exported, run by onnxruntime in a process of its own."""
import os
import sys

import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import deploy  # noqa: E402

TINY = ["--steps", "3", "--hidden", "16", "--embed", "8", "--length", "10", "--batch", "4", "--corpus-chars", "30000",
        "--max-chars", "30", "--dqn-hidden", "8", "--observations", "6"]


def test_the_deployed_models_give_the_same_text_and_actions_without_importing_the_project(tmp_path, capsys):
    out = deploy.main(TINY + ["--out", str(tmp_path)])
    assert out["same_text"] and out["same_actions"]
    assert out["deployed_imports"] == []
    assert {"sampler.onnx", "policy.onnx"} <= set(os.listdir(tmp_path))
    printed = capsys.readouterr().out
    assert "(the same)" in printed and "DIFFERENT" not in printed
