"""The scheduler configuration as a session reads it (KAI's SchedulerConfiguration plus the session flags), with
KAI's defaults; ``kai.core.config`` reads one from its YAML mapping.

A config may omit any section; missing ``actions`` or ``tiers`` fall back to KAI's built-in default
(docs/kai-reference.md §3.1).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kai.core.framework.usage.usage_config import UsageDBConfig
from kai.core.model import names
from kai.core.model.duration import format_duration
from kai.core.model.errors import InvalidObject
from kai.core.state.snapshot import STUCK_IN_RELEASING_S

DEFAULT_ACTIONS = ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction")
GENERATOR_NODE_LOCAL_GREEDY = "NodeLocalGreedy"
GENERATOR_MULTI_NODE_GANG = "MultiNodeGang"
DRA_GATE = "DynamicResourceAllocation"
"""The feature gate of dynamic resource allocation (ResourceClaims): the dynamicresources plugin places pods that use
claims, and the scheduler and binder watch claims and slices, only when it is on."""
DEFAULT_PLUGINS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("predicates", {}),
    ("proportion", {}),
    ("priority", {}),
    ("elastic", {}),
    ("kubeflow", {}),
    ("ray", {}),
    ("nodeavailability", {}),
    ("gpusharingorder", {}),
    ("gpupack", {}),
    ("resourcetype", {}),
    ("subgrouporder", {}),
    ("taskorder", {}),
    ("nominatednode", {}),
    ("dynamicresources", {}),
    ("nodeplacement", {"cpu": "binpack", "gpu": "binpack"}),
    ("minruntime", {}),
    ("topology", {}),
    ("snapshot", {}),
    ("sg-nodelocalgreedy", {}),
    ("sg-multinodegang", {}),
)


@dataclass(frozen=True, slots=True)
class PluginOption:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SearchBudgets:
    """KAI's ``scenarioSearchBudgets``: how long reclaim, preempt and consolidation may search for victims, in
    seconds (0 = unlimited). Per action (``default`` as the fallback), per pending job (with a guaranteed minimum)
    and per scenario generator."""

    action_s: Mapping[str, float] = field(default_factory=dict)
    job_s: float = 240.0
    min_job_s: float = 0.0
    generator_s: Mapping[str, float] = field(default_factory=dict)

    def action_limit(self, action: str) -> float:
        return self.action_s.get(action, self.action_s.get("default", 300.0))

    def generator_limit(self, generator: str) -> float:
        """A generator's own limit; else the configured default; else KAI's built-in one (NodeLocalGreedy 30s,
        MultiNodeGang and any other 2m)."""
        if generator in self.generator_s:
            return self.generator_s[generator]
        if "default" in self.generator_s:
            return self.generator_s["default"]
        return 30.0 if generator == GENERATOR_NODE_LOCAL_GREEDY else 120.0

    def generator_limits(self) -> dict[str, float]:
        """Every generator limit in force, ``default`` included (what KAI reports as configured)."""
        names = {"default", GENERATOR_NODE_LOCAL_GREEDY, GENERATOR_MULTI_NODE_GANG, *self.generator_s}
        return {name: self.generator_limit(name) for name in sorted(names)}


@dataclass(frozen=True, slots=True)
class DisruptionConfig:
    """kai's own settings (``disruption:``; KAI has none of them) for what the scheduler may do to running work."""

    pod_disruption_budgets: bool = True
    """Victims only as their PodDisruptionBudgets allow, evicted through ``pods/eviction`` (false: KAI's deletes)."""
    per_cycle: int = 0
    """At most this many pods evicted per cycle (0: no cap, as KAI)."""
    per_minute: int = 0
    """At most this many pods evicted in any minute (0: no cap, as KAI)."""
    preemption_policy: bool = True
    """A PriorityClass's ``preemptionPolicy: Never`` is honoured: its podgroups never make others be evicted."""
    admission_reservation_s: float = 600.0
    """Queue admission gating: how long an ungated pod that is still pending holds its queue's quota."""

    @property
    def capped(self) -> bool:
        return bool(self.per_cycle or self.per_minute)

    def document(self) -> dict[str, Any]:
        """The ``disruption`` section that parses back to this (what a snapshot or ``/get-cycles`` carries)."""
        return {
            "podDisruptionBudgets": self.pod_disruption_budgets,
            "evictionBudget": {"perCycle": self.per_cycle, "perMinute": self.per_minute},
            "preemptionPolicy": self.preemption_policy,
            "queueAdmissionReservation": format_duration(self.admission_reservation_s),
        }


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    actions: tuple[str, ...] = DEFAULT_ACTIONS
    tiers: tuple[tuple[PluginOption, ...], ...] = (tuple(PluginOption(n, a) for n, a in DEFAULT_PLUGINS),)
    queue_depth_per_action: Mapping[str, int] = field(default_factory=dict)
    scheduler_name: str = names.SCHEDULER_NAME
    queue_label_key: str = names.QUEUE_LABEL
    allow_consolidating_reclaim: bool = True
    max_consolidation_preemptees: int = 16
    staleness_grace_s: float = 60.0
    use_scheduling_signatures: bool = True
    stuck_in_releasing_s: float = STUCK_IN_RELEASING_S
    search_budgets: SearchBudgets = field(default_factory=SearchBudgets)
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    metrics_namespace: str = "kai"
    usage_db: UsageDBConfig | None = None
    """KAI's ``usageDBConfig``: time-based fair share is on when it is set."""
    full_hierarchy_fairness: bool = True
    """KAI's ``--full-hierarchy-fairness``: False divides over one unlimited top queue ``default`` holding every queue
    that has a parent (``state.snapshot``)."""
    node_pool: str = "default"
    """The node pool the scheduler schedules, as its texts name it: its shard's partition value, KAI's ``default``
    without one (set by the component, not the config file)."""
    warnings: tuple[InvalidObject, ...] = ()
    """What the config asks for that kai reads its own way (plugin arguments); reported, not fatal."""
    disruption: DisruptionConfig = field(default_factory=DisruptionConfig)

    @property
    def plugins(self) -> tuple[PluginOption, ...]:
        return tuple(option for tier in self.tiers for option in tier)

    @property
    def dra(self) -> bool:
        """Whether the ``DynamicResourceAllocation`` feature gate is on."""
        return self.feature_gates.get(DRA_GATE, False)
