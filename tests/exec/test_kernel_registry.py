"""Every op type the graph defines can run: a kernel keyed by its name, except the control-flow
primitives and Send/Recv, which the executor implements itself; and no kernel exists for an op the graph lacks."""
import graph  # noqa: F401  (registers every op type)
from exec.kernels import KERNELS
from graph.op_registry import registered_ops

EXECUTOR_PRIMITIVES = {"Switch", "Merge", "Enter", "Exit", "NextIteration", "Send", "Recv"}


def test_every_op_has_a_kernel():
    missing = sorted(set(registered_ops()) - set(KERNELS) - EXECUTOR_PRIMITIVES)
    assert not missing, f"ops without kernels: {missing}"


def test_every_kernel_belongs_to_an_op():
    assert not set(KERNELS) - set(registered_ops())
    assert not set(KERNELS) & EXECUTOR_PRIMITIVES
