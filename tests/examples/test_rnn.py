"""Smoke tests of examples/rnn.py: tiny sizes, a few steps."""
import json
import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import rnn  # noqa: E402
from data import adding_problem  # noqa: E402

import dist  # noqa: E402
import grad  # noqa: E402
from tests.dist.helpers import within  # noqa: E402

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


# ----------------------------------------------------------------------------- layers on devices

STACKED = ["--task", "adding", "--steps", "4", "--length", "6", "--hidden", "12", "--batch", "8", "--layers", "2",
           "--quiet"]


def _stacked_step(devices, seed=0):
    m = rnn.LSTM(2, 12, 1, np.random.default_rng(seed), layers=2, devices=devices)
    return m, rnn.make_train_step(rnn.adding_loss, m, grad.Adam(0.01))


def test_layers_on_two_devices_train_to_the_same_losses_as_on_one():
    x, y = adding_problem(np.random.default_rng(4), 8, 9)
    (m1, one), (m2, two) = _stacked_step(None), _stacked_step(rnn.layer_devices(2, 2))
    for _ in range(3):
        np.testing.assert_allclose(within(60, two, x, y, 9), one(x, y, 9), rtol=1e-6)
    for p, q in zip(m1.params, m2.params, strict=True):
        np.testing.assert_allclose(q.value, p.value, rtol=1e-5, atol=1e-7)
    # one time loop, partitioned by layer: each layer's weights (and their gradients and Adam
    # updates) on its own device
    g = two.get_graph(x, y, 9)
    assert len(rnn.while_frames(g)) == 1
    placement = dist.place(g)
    devices_of = {}
    for node, device in placement.items():
        if node.op == "MatMul" and node.frame is not None:
            devices_of.setdefault(device, 0)
            devices_of[device] += 1
    assert set(devices_of) == {"/task:0/cpu:0", "/task:0/cpu:1"}


def test_the_example_on_two_devices_prints_one_devices_losses(capsys):
    one = rnn.main(STACKED + ["--devices", "1"])
    two = rnn.main(STACKED + ["--devices", "2"])
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-6)
    assert "layer 1 on /cpu:0, layer 2 on /cpu:1" in capsys.readouterr().out


@pytest.mark.parametrize("layers, devices, expected", [
    (2, 2, ["/cpu:0", "/cpu:1"]),
    (4, 2, ["/cpu:0", "/cpu:0", "/cpu:1", "/cpu:1"]),
    (3, 1, None),
])
def test_layer_devices(layers, devices, expected):
    assert rnn.layer_devices(layers, devices) == expected


def test_more_devices_than_layers_is_refused():
    with pytest.raises(SystemExit):
        rnn.parse_args(["--layers", "1", "--devices", "2"])
    with pytest.raises(ValueError, match="devices"):
        rnn.LSTM(2, 4, 1, np.random.default_rng(0), layers=2, devices=["/cpu:0"])


def test_two_mpi_ranks_train_to_the_same_losses(tmp_path):
    pytest.importorskip("mpi4py")
    from dist.launch import command, find_mpiexec, run
    try:
        find_mpiexec()
    except FileNotFoundError:
        pytest.skip("no mpiexec")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = tmp_path / "train.py"
    # each rank writes the losses it returns (every rank gets the fetched loss) under its rank
    script.write_text(
        "import json, sys\n"
        f"sys.path[:0] = [{root!r}, {os.path.join(root, 'examples')!r}]\n"
        "import rnn\n"
        f"result = rnn.main({STACKED + ['--devices', '2']!r})\n"
        "rank, ranks = rnn.mpi_ranks()\n"
        f"json.dump([ranks, result['losses']], open({str(tmp_path)!r} + f'/rank{{rank}}.json', 'w'))\n")
    rc = run(command(2, [str(script)]), timeout=120, cwd=root)
    assert rc == 0
    one = rnn.main(STACKED + ["--devices", "1"])
    for rank in (0, 1):
        ranks, losses = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert ranks == 2
        np.testing.assert_allclose(losses, one["losses"], rtol=1e-6)
