"""Every kai component, what it watches and how it is run and installed: the one place to add one.

A component is run by ``kai <name>`` (the loops of ``runtime.loops.LOOPS``, which ``kai all`` runs together in one
process, or a server of its own: the admission webhooks, the operator) and, where KAI's operator deploys it, is an
operand of the Config: a Deployment and ServiceAccount named after KAI's operand, configured by its Config section.
The component commands (``cli.commands.components``), the informers of ``serve`` and of the live insight, the loops
woken by changes, the operator's Deployments and RBAC all come from this table. ``podgroup-controller`` and
``queue-controller`` split ``controllers`` as KAI's install does.
"""

from dataclasses import dataclass

from kai.core.framework.config import SchedulerConfig


@dataclass(frozen=True, slots=True)
class Component:
    name: str
    """The ``kai`` command that runs it."""
    help: str
    """Its command's help (a component that serves on its own has a command module of its own: "")."""
    watches: tuple[str, ...]
    """The kinds its informers list and watch."""
    dra_watches: tuple[str, ...] = ()
    """Watched only with the DynamicResourceAllocation feature gate, so clusters without the DRA API still work."""
    numa_watches: tuple[str, ...] = ()
    """Watched only when the scheduler config runs the ``numa`` plugin (KAI's: only where the API is served)."""
    disruption_watches: tuple[str, ...] = ()
    """Watched unless the scheduler config turns PodDisruptionBudgets off (``disruption.podDisruptionBudgets``)."""
    wakes_on: frozenset[str] = frozenset()
    """Kinds whose change wakes its loop at once (the others run once a period)."""
    loop: bool = True
    """Run as a loop of ``runtime.loops`` (the admission webhooks and the operator serve on their own)."""
    in_all: bool = False
    """Run by ``kai all``."""
    operand: str = ""
    """KAI's operand the operator deploys it as: its Deployment, ServiceAccount, ``app`` label and ClusterRole ("":
    not deployed on its own)."""
    per_shard: bool = False
    """The operator deploys one per SchedulingShard (``operator.shard``), not one for the Config."""
    section: str = ""
    """Its section of KAI's Config."""
    reconciles: bool = False
    """It takes KAI's ``--max-concurrent-reconciles`` from its Config section."""


COMPONENTS: dict[str, Component] = {
    component.name: component
    for component in (
        Component(
            "scheduler",
            "Run scheduling cycles and write BindRequests and statuses.",
            ("Pod", "Node", "Queue", "PodGroup", "PriorityClass", "BindRequest", "Topology", "ConfigMap"),
            dra_watches=("ResourceClaim", "ResourceSlice"),
            numa_watches=("NodeResourceTopology",),
            disruption_watches=("PodDisruptionBudget",),
            in_all=True,
            operand="scheduler",
            per_shard=True,
            section="scheduler",
        ),
        Component(
            "binder",
            "Bind pods named by BindRequests.",
            ("BindRequest", "Pod", "Node"),
            dra_watches=("ResourceClaim",),
            wakes_on=frozenset({"BindRequest"}),
            in_all=True,
            operand="binder",
            section="binder",
            reconciles=True,
        ),
        Component(
            "controllers",
            "Keep Queue and PodGroup status up to date.",
            ("Queue", "PodGroup", "Pod", "Node", "PriorityClass"),
            in_all=True,
        ),
        Component(
            "podgrouper",
            "Create a PodGroup for every ungrouped kai-scheduler pod.",
            ("Pod", "PodGroup", "PriorityClass"),  # owners are read when a pod names them (CRDs may be absent)
            wakes_on=frozenset({"Pod", "PodGroup"}),
            in_all=True,
            operand="pod-grouper",
            section="podGrouper",
            reconciles=True,
        ),
        Component(
            "podgroup-controller",
            "Keep PodGroup status (resources) up to date.",
            ("PodGroup", "Pod", "Node", "PriorityClass"),
            operand="podgroup-controller",
            section="podGroupController",
            reconciles=True,
        ),
        Component(
            "queue-controller",
            "Keep Queue status up to date from PodGroup status.",
            ("Queue", "PodGroup"),
            operand="queue-controller",
            section="queueController",
        ),
        Component(
            "admission",
            "",
            ("Queue",),  # the Queue webhook reads the other queues (admission.queues.QueueCache)
            loop=False,
            operand="admission",
            section="admission",
        ),
        Component(
            "operator",
            "",
            ("Config", "SchedulingShard"),
            loop=False,
        ),
    )
}
IN_ALL = tuple(name for name, component in COMPONENTS.items() if component.in_all)
"""The components ``kai all`` runs in one process."""


def kinds_for(components: set[str], config: SchedulerConfig | None = None) -> set[str]:
    """The components' kinds, with the DRA, NUMA and disruption kinds ``config`` asks for (none without a config)."""
    chosen = [COMPONENTS[name] for name in components]
    kinds = {kind for component in chosen for kind in component.watches}
    if config is not None and config.dra:
        kinds.update(kind for component in chosen for kind in component.dra_watches)
    if config is not None and any(option.name == "numa" for option in config.plugins):
        kinds.update(kind for component in chosen for kind in component.numa_watches)
    if config is not None and config.disruption.pod_disruption_budgets:
        kinds.update(kind for component in chosen for kind in component.disruption_watches)
    return kinds


def scheduler_kinds(config: SchedulerConfig) -> list[str]:
    return sorted(kinds_for({"scheduler"}, config))
