"""Device names: `/job:worker/task:1/cpu:0`-style strings, parsed, checked and made canonical.

A node's `device` is the string the user's `graph.device(...)` scope gave it, or "" (UNPLACED)
when no scope was active; `dist.place` fills the unplaced ones. Names are compared in their
canonical form (`canonical_device`): a short name ("/cpu:1") means task 0 of the local job, so
"/cpu:1", "/task:0/cpu:1" and "/TASK:0/CPU:1" are one device. A job name is kept when given
("/job:worker/task:1/cpu:0"); one without a task is task 0 of that job.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

UNPLACED = ""  # the device of a node built outside any `graph.device` scope, until placement

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
        raise ValueError(f"bad device name {name!r}: expected e.g. '/cpu:0', '/gpu:1', '/task:1/cpu:0' or "
                         "'/job:worker/task:0/cpu:0'")
    return DeviceSpec(**fields)


def canonical_device(name: str) -> str:
    """`name` in canonical form ("/task:0/cpu:1" for "/cpu:1"); UNPLACED stays UNPLACED."""
    if name == UNPLACED:
        return UNPLACED
    spec = parse_device(name)
    return str(DeviceSpec(spec.type, spec.index, spec.job, spec.task if spec.task is not None else 0))


def task_of(name: str) -> int:
    """The task (process) index of canonical or short device `name`: the MPI rank that hosts it."""
    task = parse_device(name).task
    return 0 if task is None else task
