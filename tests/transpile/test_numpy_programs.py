"""Six classic numpy programs (tests/transpile/numpy_programs/), decorated unchanged: each converted
function == the plain one over several successive calls, with the program's numpy state (weights,
optimiser memories, model matrices) changed between the calls by the program itself."""
import numpy as np

import transpile
from tests.transpile.numpy_programs import (
    char_rnn,
    hmm,
    kmeans,
    levenshtein,
    lstm,
    pg_agent,
)


def assert_runs_equal(got, want):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        for a, b in zip(g if isinstance(g, tuple) else (g,), w if isinstance(w, tuple) else (w,)):
            np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-9, atol=1e-12,
                                       err_msg=f"step {k}")


# --------------------------------------------------------------------------- char-RNN

def char_rnn_training(loss_fun, train_step=None, steps=4):
    """Truncated BPTT over the text; Adagrad in place between calls (or inside train_step)."""
    char_rnn.reset()
    h = np.zeros((char_rnn.hidden_size, 1))
    out = []
    for k in range(steps):
        inputs, targets = char_rnn.batch(k * char_rnn.seq_length)
        if train_step is not None:
            loss, h = train_step(inputs, targets, h)
        else:
            loss, *grads, h = loss_fun(inputs, targets, h)
            char_rnn.adagrad(grads)
        out.append((loss, h, char_rnn.Wxh.copy(), char_rnn.mWhh.copy()))
    return out


def test_char_rnn_loss_and_gradients_follow_the_weights_adagrad_updates():
    want = char_rnn_training(char_rnn.loss_fun)
    assert want[0][0] != want[-1][0]
    f = transpile.function(char_rnn.loss_fun)
    assert_runs_equal(char_rnn_training(f), want)
    assert f.traces == 1


def test_char_rnn_training_step_updates_the_global_weights_in_place():
    want = char_rnn_training(None, char_rnn.train_step)
    assert_runs_equal(char_rnn_training(None, transpile.function(char_rnn.train_step)), want)


def test_char_rnn_sampling_draws_from_the_model():
    char_rnn.reset()
    np.random.seed(0)
    f = transpile.function(char_rnn.sample, static_argnames=("n",))
    ixes = f(np.zeros((char_rnn.hidden_size, 1)), 3, 40)
    assert len(ixes) == 40 and all(0 <= ix < char_rnn.vocab_size for ix in ixes)
    assert len(set(int(ix) for ix in ixes)) > 5     # (near-uniform weights: many characters)


# --------------------------------------------------------------------------- policy gradient

def pg_episodes(forward, backward, discount, update, episodes=3):
    rng = np.random.RandomState(1)
    pg_agent.reset()
    out = []
    for ep in range(episodes):
        xs, hs, dlogps, drs = [], [], [], []
        for t in range(5 + 2 * ep):                       # episodes of different lengths
            x = pg_agent.observation(rng)
            aprob, h = forward(x)
            y = 1 if rng.uniform() < aprob else 0
            xs.append(x)
            hs.append(h)
            dlogps.append(y - aprob)
            drs.append(1.0 if t % 3 == 2 else 0.0)
        pg_agent.epx = np.vstack(xs)                      # a global rebound each episode
        eph, epdlogp, epr = np.vstack(hs), np.vstack(dlogps), np.vstack(drs)
        discounted = discount(epr)
        discounted -= np.mean(discounted)
        discounted /= np.std(discounted) + 1e-8
        epdlogp *= discounted
        grad = backward(eph, epdlogp)
        for k in pg_agent.model:
            pg_agent.grad_buffer[k] += grad[k]
        update()
        out.append((discounted, pg_agent.model["W1"].copy(), pg_agent.model["W2"].copy()))
    return out


def test_policy_gradient_agent():
    plain = (pg_agent.policy_forward, pg_agent.policy_backward, pg_agent.discount_rewards, pg_agent.rmsprop_update)
    want = pg_episodes(*plain)
    converted = [transpile.function(f) for f in plain]
    converted[2] = transpile.function(pg_agent.discount_rewards, relax_shapes=True)  # r.size unknown
    assert_runs_equal(pg_episodes(*converted), want)


# --------------------------------------------------------------------------- LSTM as classes

def lstm_training(train_step, steps=4):
    net = lstm.make_network()
    rng = np.random.RandomState(1)
    xs, ys = [rng.randn(4) for _ in range(3)], [-0.5, 0.2, 0.1]
    out = []
    for _ in range(steps):
        loss = train_step(net, xs, ys, 0.1)
        out.append((loss, net.params.wg.copy(), net.params.bo.copy()))
    for x in xs:
        net.add_input(x)
    out.append((net.prediction(),))
    return out


def test_lstm_written_as_classes():
    want = lstm_training(lstm.train_step)
    f = transpile.function(lstm.train_step)
    assert_runs_equal(lstm_training(f), want)
    # the first call makes the network's nodes, the second finds them: then one trace serves every call
    assert f.traces == 2


# --------------------------------------------------------------------------- k-means

POINTS = np.concatenate([np.random.RandomState(2).randn(10, 2) + c for c in ([0, 0], [5, 5], [0, 5])])


def kmeans_steps(step, steps=3):
    kmeans.reset(POINTS)
    out = []
    for _ in range(steps):
        moved, labels = step(POINTS)
        out.append((moved, labels, kmeans.centroids.copy()))
    return out


def test_kmeans_steps_move_the_global_centroids():
    assert_runs_equal(kmeans_steps(transpile.function(kmeans.step)), kmeans_steps(kmeans.step))


def test_kmeans_clusters_appended_at_a_graph_index():
    kmeans.reset(POINTS)
    want = kmeans.clusters_of(POINTS)
    got = transpile.function(kmeans.clusters_of)(POINTS)   # the points are a graph loop's items
    assert [list(c) for c in got] == want


# --------------------------------------------------------------------------- HMM

def hmm_calls(forward, backward, viterbi, baum_welch, calls=3):
    V = np.array([0, 1, 2, 2, 1, 0, 0, 2])
    hmm.reset()
    out = []
    for _ in range(calls):
        out.append((forward(V), backward(V), viterbi(V), baum_welch(V), hmm.a.copy(), hmm.b.copy()))
    return out


def test_hmm_forward_backward_viterbi_and_baum_welch():
    plain = (hmm.forward, hmm.backward, hmm.viterbi, hmm.baum_welch_step)
    want = hmm_calls(*plain)
    assert_runs_equal(hmm_calls(*[transpile.function(f) for f in plain]), want)


# --------------------------------------------------------------------------- Levenshtein

def test_levenshtein_distance():
    f = transpile.function(levenshtein.levenshtein)
    for a, b in (("kitten", "sitting"), ("flaw", "lawn"), ("gumbo", "gambol")):
        assert f(levenshtein.codes(a), levenshtein.codes(b)) == \
            levenshtein.levenshtein(levenshtein.codes(a), levenshtein.codes(b))
    assert f(levenshtein.codes("kitten"), levenshtein.codes("sitting")) == 3
