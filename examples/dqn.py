"""Deep Q-learning on CartPole, where one converted function is the agent's whole step.

Once per interaction with the environment, `Agent.step` runs as ONE dataflow graph:
it stores the transition in a replay memory held in Variables, learns from a random
minibatch every `train_every` steps once the memory holds enough transitions, copies
the network to the target network every `target_every` steps, and picks the next
action epsilon-greedily. Its `if`s are plain Python `if`s on tensors: the transpiler
turns them into graph conditionals, so all these decisions are taken inside the graph.
With `--out-of-graph`, Python takes the same decisions around four separate converted
functions (remember / learn / update_target / greedy_action), which is the baseline of
"Dynamic Control Flow in Large-Scale Machine Learning" (Yu et al., EuroSys 2018).

    python examples/dqn.py                   # train until the last 100 episodes average >= 195
    python examples/dqn.py --out-of-graph    # the same algorithm, decisions taken in Python
    python examples/dqn.py --show-code       # print the converted agent step and exit
    python examples/dqn.py --save q.npz      # keep the trained Q-network; --load q.npz --steps 0 to watch it

Double DQN: squared TD error, Adam, a 4-64-2 network, a replay memory of 10,000
transitions. It reaches the goal after about 23,000-28,000 environment steps (seeds 0-2).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import grad  # noqa: E402
import transpile  # noqa: E402
from graph import Variable, random_uniform  # noqa: E402

OBSERVATION_SIZE, NUM_ACTIONS = 4, 2     # CartPole: cart position/velocity, pole angle/velocity; push left/right
SOLVED_RETURN, SOLVED_EPISODES = 195.0, 100


@dataclass(frozen=True)
class Config:
    hidden: tuple = (64,)           # hidden layer sizes of the Q-network
    memory_size: int = 10_000       # transitions the replay memory holds (a ring buffer)
    batch_size: int = 64
    learn_start: int = 1_000        # transitions in memory before learning starts
    train_every: int = 4            # environment steps per learning step
    target_every: int = 500         # environment steps per copy of the network to the target network
    gamma: float = 0.99             # discount
    learning_rate: float = 2e-3     # Adam
    epsilon_start: float = 1.0      # exploration: probability of a random action, decayed linearly...
    epsilon_end: float = 0.05       # ...to this
    epsilon_decay_steps: int = 5_000
    double_dqn: bool = True         # the network picks the next action, the target network values it
    optimizer: str = "adam"         # or "sgd"


class QNetwork:
    """An MLP from an observation (or a batch of them) to one Q-value per action; weights in Variables."""

    def __init__(self, sizes, rng: np.random.Generator, name: str):
        self.layers = []
        for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
            scale = np.sqrt(2.0 / n_in) * (0.1 if i == len(sizes) - 2 else 1.0)  # small initial Q-values
            w = Variable((rng.standard_normal((n_in, n_out)) * scale).astype(np.float32), name=f"{name}/w{i}")
            b = Variable(np.zeros(n_out, np.float32), name=f"{name}/b{i}")
            self.layers.append((w, b))
        self.params = [p for layer in self.layers for p in layer]

    def __call__(self, obs):
        x = obs
        for w, b in self.layers[:-1]:
            x = np.maximum(x @ w + b, 0.0)
        w, b = self.layers[-1]
        return x @ w + b

    def load_from(self, other: "QNetwork"):
        for mine, theirs in zip(self.params, other.params):
            mine.assign(theirs)


class ReplayMemory:
    """The last `size` transitions, in Variables: a ring buffer written at `stored % size`."""

    def __init__(self, size: int):
        self.size = size
        self.obs = Variable(np.zeros((size, OBSERVATION_SIZE), np.float32), name="memory/obs")
        self.action = Variable(np.zeros(size, np.int64), name="memory/action")
        self.reward = Variable(np.zeros(size, np.float32), name="memory/reward")
        self.next_obs = Variable(np.zeros((size, OBSERVATION_SIZE), np.float32), name="memory/next_obs")
        self.terminated = Variable(np.zeros(size, np.float32), name="memory/terminated")
        self.stored = Variable(0, name="memory/stored")     # transitions stored so far

    def store(self, obs, action, reward, next_obs, terminated):
        slot = self.stored % self.size
        self.obs[slot] = obs
        self.action[slot] = action
        self.reward[slot] = reward
        self.next_obs[slot] = next_obs
        self.terminated[slot] = terminated
        self.stored.assign_add(1)

    def count(self):
        return np.minimum(self.stored, self.size)

    def sample(self, batch_size: int, seed: int):
        i = random_uniform([batch_size], 0, self.count(), dtype=np.int64, seed=seed)
        return self.obs[i], self.action[i], self.reward[i], self.next_obs[i], self.terminated[i]


class Agent:
    """A DQN agent whose whole state (networks, replay memory, optimizer moments, counters) is in
    Variables, so that converted functions read and update it in the graph."""

    def __init__(self, config: Config = Config(), seed: int = 0):
        rng = np.random.default_rng(seed)
        self.config = config
        self.seed = seed
        sizes = (OBSERVATION_SIZE, *config.hidden, NUM_ACTIONS)
        self.q_net = QNetwork(sizes, rng, "q")
        self.target_net = QNetwork(sizes, rng, "target")
        for mine, theirs in zip(self.target_net.params, self.q_net.params):
            mine.load(theirs.value)
        self.memory = ReplayMemory(config.memory_size)
        self.optimizer = grad.Adam(config.learning_rate) if config.optimizer == "adam" else \
            grad.SGD(config.learning_rate)
        self.steps = Variable(0, name="steps")
        self.train_steps = Variable(0, name="train_steps")
        self.target_copies = Variable(0, name="target_copies")

    def epsilon(self, step):
        c = self.config
        return max(c.epsilon_end, c.epsilon_start - (c.epsilon_start - c.epsilon_end) * step / c.epsilon_decay_steps)

    # -- the pieces: each a converted function of its own, and inlined when another calls it ----
    @transpile.function
    def remember(self, obs, action, reward, next_obs, terminated):
        self.memory.store(obs, action, reward, next_obs, terminated)
        self.steps.assign_add(1)

    def td_loss(self, obs, action, reward, next_obs, terminated):
        """Mean squared temporal-difference error of the Q-network on a batch of transitions."""
        c = self.config
        rows = np.arange(len(action))
        if c.double_dqn:
            next_action = np.argmax(self.q_net(next_obs), axis=1)
            next_value = self.target_net(next_obs)[rows, next_action]
        else:
            next_value = np.max(self.target_net(next_obs), axis=1)
        target = reward + c.gamma * (1.0 - terminated) * next_value
        q_taken = self.q_net(obs)[rows, action]
        return np.mean((q_taken - target) ** 2)

    @transpile.function
    def learn_from(self, obs, action, reward, next_obs, terminated):
        """One step of Q-learning on a batch of transitions; returns the loss before the step."""
        loss = self.td_loss(obs, action, reward, next_obs, terminated)
        gradients = grad.gradients(loss, self.q_net.params)
        self.optimizer.apply(gradients, self.q_net.params)
        self.train_steps.assign_add(1)
        return loss

    @transpile.function
    def learn(self):
        """One step of Q-learning on a random minibatch from the replay memory."""
        batch = self.memory.sample(self.config.batch_size, seed=self.seed + 1)
        return self.learn_from(*batch)

    @transpile.function
    def update_target(self):
        self.target_net.load_from(self.q_net)
        self.target_copies.assign_add(1)

    @transpile.function
    def greedy_action(self, obs):
        return np.argmax(self.q_net(obs))

    # -- the whole step, decisions in the graph ----------------------------------------------------
    @transpile.function
    def step(self, obs, action, reward, next_obs, terminated, new_obs):
        """Remembers one interaction, learns now and then, and picks the action to take in `new_obs`."""
        c = self.config
        self.remember(obs, action, reward, next_obs, terminated)
        if self.memory.count() >= c.learn_start and self.steps % c.train_every == 0:
            self.learn()
        if self.steps % c.target_every == 0:
            self.update_target()
        # each random draw is a seeded graph op with a stream of its own
        if random_uniform((), seed=self.seed + 2) < self.epsilon(self.steps):
            return random_uniform((), 0, NUM_ACTIONS, dtype=np.int64, seed=self.seed + 3)
        return self.greedy_action(new_obs)


class PythonDecisions:
    """The same agent with every decision taken in Python around its separate converted functions."""

    def __init__(self, agent: Agent, seed: int = 0):
        self.agent = agent
        self.rng = np.random.default_rng(seed + 4)
        self.steps = int(agent.steps.value)

    def step(self, obs, action, reward, next_obs, terminated, new_obs):
        agent, c = self.agent, self.agent.config
        agent.remember(obs, action, reward, next_obs, terminated)
        self.steps += 1
        if min(self.steps, c.memory_size) >= c.learn_start and self.steps % c.train_every == 0:
            agent.learn()
        if self.steps % c.target_every == 0:
            agent.update_target()
        if self.rng.random() < agent.epsilon(self.steps):
            return int(self.rng.integers(NUM_ACTIONS))
        return agent.greedy_action(new_obs)


def run_episodes(env, step, max_steps: int, seed: int, progress=None, stop_when_solved: bool = True):
    """Interacts for up to `max_steps` steps; `step(obs, action, reward, next_obs, terminated, new_obs)`
    returns the next action. Returns the episode returns and the steps taken."""
    returns, episode_return = [], 0.0
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    action = int(env.action_space.sample())
    for t in range(max_steps):
        next_obs, reward, terminated, truncated, _ = env.step(action)
        episode_return += reward
        new_obs = next_obs
        if terminated or truncated:
            returns.append(episode_return)
            episode_return = 0.0
            new_obs, _ = env.reset()
            if progress is not None:
                progress.set_postfix(episodes=len(returns), avg100=f"{np.mean(returns[-100:]):.1f}")
        action = int(step(obs, action, np.float32(reward), next_obs, terminated, new_obs))
        obs = new_obs
        if progress is not None:
            progress.update(1)
        if stop_when_solved and solved(returns):
            return returns, t + 1
    return returns, max_steps


def solved(returns) -> bool:
    return len(returns) >= SOLVED_EPISODES and np.mean(returns[-SOLVED_EPISODES:]) >= SOLVED_RETURN


def evaluate(agent: Agent, env, episodes: int, seed: int) -> list[float]:
    """Returns of greedy episodes (no exploration, no learning)."""
    out = []
    for k in range(episodes):
        obs, _ = env.reset(seed=seed + 1000 + k)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(int(agent.greedy_action(obs)))
            total += reward
            done = terminated or truncated
        out.append(total)
    return out


def save(agent: Agent, path: str) -> None:
    np.savez(path, *[p.value for p in agent.q_net.params])


def load(agent: Agent, path: str) -> None:
    with np.load(path) as data:
        for k, (p, t) in enumerate(zip(agent.q_net.params, agent.target_net.params)):
            p.load(data[f"arr_{k}"])
            t.load(data[f"arr_{k}"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=100_000, help="environment steps at most (default 100000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-of-graph", action="store_true", help="decisions in Python around separate functions")
    ap.add_argument("--keep-going", action="store_true", help="run all --steps even once solved")
    ap.add_argument("--show-code", action="store_true", help="print the converted agent step and exit")
    ap.add_argument("--save", metavar="PATH", help="save the Q-network's weights (.npz) after training")
    ap.add_argument("--load", metavar="PATH", help="start from these Q-network weights (.npz)")
    ap.add_argument("--eval-episodes", type=int, default=10, help="greedy episodes after training")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = ap.parse_args(argv)

    if a.show_code:
        print(transpile.to_code(Agent.step))
        return
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    agent = Agent(Config(), seed=a.seed)
    if a.load:
        load(agent, a.load)
    step = PythonDecisions(agent, a.seed).step if a.out_of_graph else agent.step
    progress = None
    if not a.no_progress and a.steps:
        from tqdm import tqdm
        progress = tqdm(total=a.steps, unit="step", mininterval=1.0)
    t0 = time.perf_counter()
    returns, steps = run_episodes(env, step, a.steps, a.seed, progress, stop_when_solved=not a.keep_going)
    wall = time.perf_counter() - t0
    if progress is not None:
        progress.close()
    mode = "out-of-graph (decisions in Python)" if a.out_of_graph else "in-graph (one converted function per step)"
    if steps:
        print(f"{mode}: {steps} steps, {len(returns)} episodes in {wall:.1f} s = {steps / wall:.0f} steps/s; "
              f"{int(agent.train_steps.value)} learning steps, {int(agent.target_copies.value)} target copies")
    if returns:
        last = returns[-SOLVED_EPISODES:]
        print(f"average return of the last {len(last)} episodes: {np.mean(last):.1f} "
              f"({'solved' if solved(returns) else 'not solved'}: the goal is >= {SOLVED_RETURN:.0f} "
              f"over {SOLVED_EPISODES})")
    if a.eval_episodes:
        scores = evaluate(agent, env, a.eval_episodes, a.seed)
        print(f"greedy policy: average return {np.mean(scores):.1f} over {len(scores)} episodes")
    if a.save:
        save(agent, a.save)
        print(f"saved the Q-network to {a.save}")


if __name__ == "__main__":
    main()
