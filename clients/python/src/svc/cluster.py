"""Typed shapes of the cluster operations (``/svc/cluster/*``, spec/contract.md §9).

A cluster task is defined once for the whole cluster; the leader places its replicas on fitting
worker nodes. The keys are the wire names (``memoryMB`` included) so a value round-trips as is.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "ClusterNode",
    "ClusterNodeResource",
    "ClusterPlacement",
    "ClusterTask",
    "ClusterTaskView",
    "ClusterTopologyEntry",
]


class ClusterTask(TypedDict):
    """A cluster task as sent: ``content`` is the application definition each replica runs."""

    replication: int
    port: int
    memoryMB: int
    condition: dict[str, str]
    content: dict[str, Any]


class ClusterPlacement(TypedDict):
    host: str
    schedule_time: str


class ClusterTaskView(ClusterTask):
    """A cluster task as answered, with the hosts it is placed on now."""

    placements: list[ClusterPlacement]


class ClusterNodeResource(TypedDict):
    cpu_cores: int
    mem_total_bytes: int


class ClusterNode(TypedDict):
    """One node's report (``svc`` is its daemon URL, ``label`` its labels)."""

    svc: str
    label: dict[str, str]
    leader: bool
    resource: ClusterNodeResource


class ClusterTopologyEntry(TypedDict):
    app: str
    schedule_time: str
