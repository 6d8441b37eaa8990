"""Smoke tests of examples/rnn.py: tiny sizes, a few steps."""
import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import rnn  # noqa: E402
from data import adding_problem  # noqa: E402

import grad  # noqa: E402

TINY_CHARS = ["--steps", "40", "--length", "12", "--batch", "8", "--hidden", "24", "--embed", "8",
              "--corpus-chars", "30000", "--lr", "0.02", "--quiet"]


def test_char_model_trains_and_samples(tmp_path, capsys):
    path = str(tmp_path / "lstm.npz")
    out = rnn.main(TINY_CHARS + ["--save", path])
    losses = out["losses"]
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.3
    assert "sample:" in capsys.readouterr().out
    with np.load(path) as saved:
        assert len(saved.files) == 6


def test_adding_problem_trains():
    out = rnn.main(["--task", "adding", "--steps", "60", "--length", "10", "--hidden", "16", "--batch", "32",
                    "--quiet"])
    assert np.mean(out["losses"][-10:]) < np.mean(out["losses"][:10])


def _adding_step(static_unroll, seed=0):
    m = rnn.LSTM(2, 8, 1, np.random.default_rng(seed))
    return m, rnn.make_train_step(rnn.adding_loss, m, grad.SGD(0.1), static_unroll=static_unroll)


def test_time_loop_is_one_graph_while_loop_and_static_unroll_has_none():
    x, y = adding_problem(np.random.default_rng(1), 4, 7)
    _, dynamic = _adding_step(False)
    _, static = _adding_step(True)
    assert len(rnn.while_frames(dynamic.get_graph(x, y, 7))) == 1
    assert len(rnn.while_frames(static.get_graph(x, y, 7))) == 0
    # the same graph serves every sequence length
    dynamic(x, y, 7)
    dynamic(x, y, 3)
    assert len(dynamic.retrace_reports) == 0


def test_training_step_picture_shows_the_programs_structure():
    x, y = adding_problem(np.random.default_rng(1), 4, 7)
    g = _adding_step(False)[1].get_graph(x, y, 7)
    dot = g.to_dot()
    drawn = re.findall(r'^\s*"[^"]+" \[label="([^"]*)"', dot, re.M)
    assert len(drawn) <= 20 < len(g.nodes) / 10   # loops and user lines are boxes, inputs keep their names
    loops = [label.split("\\n")[:2] for label in drawn if "range(seq_len)" in label and "while" in label]
    assert [code for _, code in loops] == ["for t in range(seq_len):"]
    assert any(label.startswith("gradients/while_grad  rnn.py:") for label in drawn)


@pytest.mark.parametrize("seq_len", [0, 1, 5])
def test_dynamic_loop_trains_exactly_like_the_unrolled_one(seq_len):
    x, y = adding_problem(np.random.default_rng(2), 4, 6)
    (m_d, dynamic), (m_s, static) = _adding_step(False), _adding_step(True)
    for _ in range(3):
        np.testing.assert_allclose(dynamic(x, y, seq_len), static(x, y, seq_len), rtol=1e-5)
    for p, q in zip(m_d.params, m_s.params, strict=True):
        np.testing.assert_allclose(p.value, q.value, rtol=1e-4, atol=1e-6)


def test_restore_continues_from_saved_parameters(tmp_path):
    path = str(tmp_path / "adding.npz")
    m, _ = _adding_step(False, seed=3)
    m.save(path)
    other, _ = _adding_step(False, seed=4)
    other.restore(path)
    for p, q in zip(m.params, other.params, strict=True):
        np.testing.assert_array_equal(p.value, q.value)
