"""What a scheduling cycle sees, read from a cluster: the objects of every kind the scheduler watches.

The same capture feeds ``kai snapshot`` (written in KAI's snapshot format), the scheduler's ``/get-snapshot`` and
the live ``kai explain`` / ``kai queues``, which run the real scheduler over it in the embedded cluster.
"""

from pathlib import Path
from typing import Any

from kai.cluster.port import ClusterClient, Raw
from kai.components.runtime import kinds_for
from kai.components.sim.envelope import usable_objects
from kai.components.sim.scenario import Runner, Scenario
from kai.core.framework.config import SchedulerConfig


def scheduler_kinds(config: SchedulerConfig) -> list[str]:
    return sorted(kinds_for({"scheduler"}, config))


def capture(cluster: ClusterClient, config: SchedulerConfig) -> dict[str, list[Raw]]:
    """Every object of the scheduler's kinds, per kind (from the cluster's caches where it keeps them)."""
    return {kind: cluster.list(kind) for kind in scheduler_kinds(config)}


def as_scenario(objects: dict[str, list[Raw]], config: SchedulerConfig, now: float, label: str) -> Scenario:
    """Captured objects as a one-cycle scenario at ``now`` (``label`` says where they came from)."""
    entries: list[tuple[str, Any]] = [
        (f"{kind} {index}", obj) for kind, items in objects.items() for index, obj in enumerate(items)
    ]
    usable, problems = usable_objects(entries)
    return Scenario(Path(label), label, config, now, usable, {}, Runner(), problems)
