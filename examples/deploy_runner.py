"""What a deployment runs: the exported models with onnxruntime and numpy alone, no module of this project.

    python examples/deploy_runner.py DIR

reads DIR/sampler.onnx with DIR/sampler_inputs.npz and DIR/policy.onnx with
DIR/policy_inputs.npz (written by examples/deploy.py), prints the sampled text
and the policy's actions, and writes them to DIR/onnx_outputs.npz.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import onnxruntime as ort

PROJECT_PACKAGES = ("graph", "exec", "grad", "transpile", "dist")


def session(path: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def sample_text(directory: str) -> tuple[np.ndarray, str]:
    """The characters the exported sampler draws, and their text (decoded with the saved vocabulary)."""
    with np.load(os.path.join(directory, "sampler_inputs.npz")) as saved:
        inputs = {k: saved[k] for k in ("first", "noise", "newline", "temperature")}
        vocabulary = saved["vocabulary"]
    (chars,) = session(os.path.join(directory, "sampler.onnx")).run(None, inputs)
    text = "".join(chr(vocabulary[int(c)]) if int(c) else "?" for c in chars)
    return chars, text


def greedy_actions(directory: str) -> np.ndarray:
    """The exported policy's action for each saved observation."""
    with np.load(os.path.join(directory, "policy_inputs.npz")) as saved:
        observations = saved["observations"]
    policy = session(os.path.join(directory, "policy.onnx"))
    return np.array([policy.run(None, {"obs": obs})[0] for obs in observations], np.int64)


def main(directory: str) -> dict:
    chars, text = sample_text(directory)
    actions = greedy_actions(directory)
    np.savez(os.path.join(directory, "onnx_outputs.npz"), chars=chars, actions=actions)
    imported = sorted(p for p in PROJECT_PACKAGES if p in sys.modules)
    summary = {"text": text, "actions": actions.tolist(), "project_modules_imported": imported}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main(sys.argv[1])
