"""Devices and partitioning: one graph across several devices, loops included (docs/design.md,
"Devices and partitioning"; dist/README.md).

- `place(graph)` (dist/placement.py): a device for every node, from `graph.device` scopes and
  colocation rules.
- `partition(graph, placement)` (dist/partition.py): every cross-device edge cut into Send/Recv,
  a control loop for each device that holds part of a loop.

These two import graph only; `exec.Session` uses them to run a multi-device graph in-process.
"""
from dist.partition import Partitioned, partition
from dist.placement import DEFAULT_DEVICE, PlacementError, place
from graph._version import __version__

__all__ = ["DEFAULT_DEVICE", "Partitioned", "PlacementError", "partition", "place"]
