"""Device names (parsed in graph/devices.py) and what this process can run."""
from __future__ import annotations

from graph.devices import UNPLACED, DeviceSpec, canonical_device, parse_device  # noqa: F401  (re-exported)


def check_local(node, device_name: str | None = None) -> None:
    """Raises unless `node` can run on this process's CPU kernels, or on the session's device (canonical
    `device_name`, exec/device/kernels.py). Every task's CPUs can: an in-process Session runs each
    device's partition on a thread of its own (exec/multi_device.py)."""
    if node.device == UNPLACED:
        return
    spec = parse_device(node.device)
    if spec.type != "cpu" and canonical_device(node.device) != device_name:
        loc = f" (built at {node.source})" if node.source else ""
        raise ValueError(f"node {node.name}{loc} is placed on {node.device}, but this session only has CPU "
                         f"kernels: give it the device, Session(graph, device=exec.device.CupyDevice()) (or "
                         f"SimulatedDevice(name={node.device!r})), or place the node on a CPU")
