"""What a scheduling cycle sees, read from a cluster: the objects of every kind the scheduler watches.

The same capture feeds ``kai snapshot`` (written in KAI's snapshot format), the scheduler's ``/get-snapshot`` and
the live ``kai explain`` / ``kai queues``, which run the real scheduler over it in the embedded cluster.
"""

from kai.cluster.port import ClusterClient, Raw
from kai.components.shared.components import scheduler_kinds
from kai.core.framework.config import SchedulerConfig


def capture(cluster: ClusterClient, config: SchedulerConfig) -> dict[str, list[Raw]]:
    """Every object of the scheduler's kinds, per kind (from the cluster's caches where it keeps them)."""
    return {kind: cluster.list(kind) for kind in scheduler_kinds(config)}
