"""A fresh default graph for each test that builds graph code, and a way to run what it built."""
import pytest

import graph
from exec import Session


@pytest.fixture
def g():
    """A new graph, the default one while the test runs."""
    new = graph.Graph()
    with new.as_default():
        yield new


def run(g, fetches, feed=None):
    """The values of `fetches` when graph `g` runs with `feed`."""
    return Session(g).run(fetches, feed or {})
