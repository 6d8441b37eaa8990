"""An LSTM written from scratch as classes: its parameters and their gradients, one node per time step
with forward and backward passes, a network that keeps its nodes, and SGD on a toy regression."""
import numpy as np


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class LstmParams:
    def __init__(self, cells, inputs, rng):
        self.cells, self.inputs = cells, inputs
        width = cells + inputs
        self.wg, self.wi, self.wf, self.wo = (rng.uniform(-0.1, 0.1, (cells, width)) for _ in range(4))
        self.bg, self.bi, self.bf, self.bo = (rng.uniform(-0.1, 0.1, cells) for _ in range(4))
        self.zero_grads()

    def zero_grads(self):
        self.wg_diff, self.wi_diff = np.zeros_like(self.wg), np.zeros_like(self.wi)
        self.wf_diff, self.wo_diff = np.zeros_like(self.wf), np.zeros_like(self.wo)
        self.bg_diff, self.bi_diff = np.zeros_like(self.bg), np.zeros_like(self.bi)
        self.bf_diff, self.bo_diff = np.zeros_like(self.bf), np.zeros_like(self.bo)

    def apply_diff(self, lr=1.0):
        self.wg -= lr * self.wg_diff
        self.wi -= lr * self.wi_diff
        self.wf -= lr * self.wf_diff
        self.wo -= lr * self.wo_diff
        self.bg -= lr * self.bg_diff
        self.bi -= lr * self.bi_diff
        self.bf -= lr * self.bf_diff
        self.bo -= lr * self.bo_diff
        self.zero_grads()


class LstmState:
    def __init__(self, cells):
        self.g, self.i, self.f = np.zeros(cells), np.zeros(cells), np.zeros(cells)
        self.o, self.s, self.h = np.zeros(cells), np.zeros(cells), np.zeros(cells)
        self.bottom_diff_h = np.zeros_like(self.h)
        self.bottom_diff_s = np.zeros_like(self.s)


class LstmNode:
    def __init__(self, params, state):
        self.params = params
        self.state = state
        self.xc = None

    def forward(self, x, s_prev, h_prev):
        self.s_prev, self.h_prev = s_prev, h_prev
        xc = np.hstack((x, h_prev))
        p = self.params
        self.state.g = np.tanh(np.dot(p.wg, xc) + p.bg)
        self.state.i = sigmoid(np.dot(p.wi, xc) + p.bi)
        self.state.f = sigmoid(np.dot(p.wf, xc) + p.bf)
        self.state.o = sigmoid(np.dot(p.wo, xc) + p.bo)
        self.state.s = self.state.g * self.state.i + s_prev * self.state.f
        self.state.h = self.state.s * self.state.o
        self.xc = xc

    def backward(self, top_diff_h, top_diff_s):
        ds = self.state.o * top_diff_h + top_diff_s
        do = self.state.s * top_diff_h
        di = self.state.g * ds
        dg = self.state.i * ds
        df = self.s_prev * ds
        di_input = (1.0 - self.state.i) * self.state.i * di
        df_input = (1.0 - self.state.f) * self.state.f * df
        do_input = (1.0 - self.state.o) * self.state.o * do
        dg_input = (1.0 - self.state.g ** 2) * dg
        p = self.params
        p.wi_diff += np.outer(di_input, self.xc)
        p.wf_diff += np.outer(df_input, self.xc)
        p.wo_diff += np.outer(do_input, self.xc)
        p.wg_diff += np.outer(dg_input, self.xc)
        p.bi_diff += di_input
        p.bf_diff += df_input
        p.bo_diff += do_input
        p.bg_diff += dg_input
        dxc = np.zeros_like(self.xc)
        dxc += np.dot(p.wi.T, di_input)
        dxc += np.dot(p.wf.T, df_input)
        dxc += np.dot(p.wo.T, do_input)
        dxc += np.dot(p.wg.T, dg_input)
        self.state.bottom_diff_s = ds * self.state.f
        self.state.bottom_diff_h = dxc[p.inputs:]


class SquaredLoss:
    @staticmethod
    def loss(pred, label):
        return (pred[0] - label) ** 2

    @staticmethod
    def bottom_diff(pred, label):
        diff = np.zeros_like(pred)
        diff[0] = 2 * (pred[0] - label)
        return diff


class LstmNetwork:
    def __init__(self, params):
        self.params = params
        self.nodes = []
        self.xs = []

    def add_input(self, x):
        self.xs.append(x)
        if len(self.xs) > len(self.nodes):
            self.nodes.append(LstmNode(self.params, LstmState(self.params.cells)))
        idx = len(self.xs) - 1
        if idx == 0:
            self.nodes[idx].forward(x, np.zeros(self.params.cells), np.zeros(self.params.cells))
        else:
            self.nodes[idx].forward(x, self.nodes[idx - 1].state.s, self.nodes[idx - 1].state.h)

    def targets_are(self, ys):
        idx = len(self.xs) - 1
        loss = SquaredLoss.loss(self.nodes[idx].state.h, ys[idx])
        diff_h = SquaredLoss.bottom_diff(self.nodes[idx].state.h, ys[idx])
        diff_s = np.zeros(self.params.cells)
        self.nodes[idx].backward(diff_h, diff_s)
        idx -= 1
        while idx >= 0:
            loss += SquaredLoss.loss(self.nodes[idx].state.h, ys[idx])
            diff_h = SquaredLoss.bottom_diff(self.nodes[idx].state.h, ys[idx])
            diff_h += self.nodes[idx + 1].state.bottom_diff_h
            diff_s = self.nodes[idx + 1].state.bottom_diff_s
            self.nodes[idx].backward(diff_h, diff_s)
            idx -= 1
        return loss

    def clear(self):
        self.xs = []

    def prediction(self):
        return np.array([node.state.h[0] for node in self.nodes[:len(self.xs)]])


def make_network(seed=0, cells=6, inputs=4):
    return LstmNetwork(LstmParams(cells, inputs, np.random.RandomState(seed)))


def train_step(net, xs, ys, lr):
    for x in xs:
        net.add_input(x)
    loss = net.targets_are(ys)
    net.params.apply_diff(lr)
    net.clear()
    return loss
