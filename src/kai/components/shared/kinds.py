"""The kinds each component watches: its informers list and watch these, and ``kai snapshot`` / the live insight
capture the scheduler's.

``COMPONENTS`` are the ones ``kai all`` runs in one process; ``podgroup-controller`` and ``queue-controller`` split
the controllers as KAI's install does; the admission webhooks and the operator run on their own.
"""

from kai.core.framework.config import SchedulerConfig

COMPONENTS = ("scheduler", "binder", "controllers", "podgrouper")
KINDS = {
    "podgrouper": ("Pod", "PodGroup", "PriorityClass"),  # owners are read when a pod names them (CRDs may be absent)
    "scheduler": ("Pod", "Node", "Queue", "PodGroup", "PriorityClass", "BindRequest", "Topology"),
    "binder": ("BindRequest", "Pod", "Node"),
    "controllers": ("Queue", "PodGroup", "Pod", "Node", "PriorityClass"),
    "podgroup-controller": ("PodGroup", "Pod", "Node", "PriorityClass"),
    "queue-controller": ("Queue", "PodGroup"),
    "admission": ("Queue",),  # the Queue webhook reads the other queues (admission.queues.QueueCache)
    "operator": ("Config", "SchedulingShard"),
}
DRA_KINDS = {"scheduler": ("ResourceClaim", "ResourceSlice"), "binder": ("ResourceClaim",)}
"""Watched only with the DynamicResourceAllocation feature gate, so clusters without the DRA API still work."""
DRA_GATE = "DynamicResourceAllocation"
NUMA_KINDS = {"scheduler": ("NodeResourceTopology",)}
"""Watched only when the scheduler config runs the ``numa`` plugin (KAI's: only where the API is served)."""
DISRUPTION_KINDS = {"scheduler": ("PodDisruptionBudget",)}
"""Watched unless the scheduler config turns PodDisruptionBudgets off (``disruption.podDisruptionBudgets``)."""


def kinds_for(components: set[str], config: SchedulerConfig | None = None) -> set[str]:
    """The components' kinds, with the DRA and NUMA kinds ``config`` asks for (none without a config)."""
    kinds = {kind for name in components for kind in KINDS[name]}
    if config is not None and config.feature_gates.get(DRA_GATE, False):
        kinds.update(kind for name in components for kind in DRA_KINDS.get(name, ()))
    if config is not None and any(option.name == "numa" for option in config.plugins):
        kinds.update(kind for name in components for kind in NUMA_KINDS.get(name, ()))
    if config is not None and config.disruption.pod_disruption_budgets:
        kinds.update(kind for name in components for kind in DISRUPTION_KINDS.get(name, ()))
    return kinds


def scheduler_kinds(config: SchedulerConfig) -> list[str]:
    return sorted(kinds_for({"scheduler"}, config))
