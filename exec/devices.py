"""Device names: `/job:worker/task:1/gpu:0`-style strings, parsed and checked."""
from __future__ import annotations

import re
from dataclasses import dataclass

_PART = re.compile(r"/(job):([\w-]+)|/(task):(\d+)|/(cpu|gpu):(\d+)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    type: str = "cpu"
    index: int = 0
    job: str | None = None
    task: int | None = None

    def __str__(self) -> str:
        prefix = (f"/job:{self.job}" if self.job else "") + (f"/task:{self.task}" if self.task is not None else "")
        return f"{prefix}/{self.type}:{self.index}"


def parse_device(name: str) -> DeviceSpec:
    """Parses a device string; raises ValueError naming what is wrong."""
    fields: dict = {}
    pos = 0
    for m in _PART.finditer(name):
        if m.start() != pos:
            break
        if m.group(1):
            fields["job"] = m.group(2)
        elif m.group(3):
            fields["task"] = int(m.group(4))
        else:
            fields["type"], fields["index"] = m.group(5).lower(), int(m.group(6))
        pos = m.end()
    if pos != len(name) or not name:
        raise ValueError(f"bad device name {name!r}: expected e.g. '/cpu:0', '/gpu:1' or "
                         "'/job:worker/task:0/cpu:0'")
    return DeviceSpec(**fields)


def check_local(node) -> None:
    """Raises unless `node` can run in this process on the CPU kernels."""
    spec = parse_device(node.device)
    loc = f" (built at {node.source})" if node.source else ""
    if spec.job is not None or spec.task is not None:
        raise ValueError(f"node {node.name}{loc} is placed on {node.device}, another process; partition the "
                         "graph with dist before running it")
    if spec.type != "cpu":
        raise ValueError(f"node {node.name}{loc} is placed on {node.device}, but this session only has CPU "
                         "kernels")
