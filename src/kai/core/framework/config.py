"""The scheduler configuration (KAI's SchedulerConfiguration plus the session flags), with KAI's defaults.

A config may omit any section; missing ``actions`` or ``tiers`` fall back to KAI's built-in default
(kai-reference.md §3.1). Bad values raise ``InvalidObject`` naming the field and what is allowed.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kai.core.framework.usage.usage_config import UsageDBConfig, parse_usage_db_config
from kai.core.model import names
from kai.core.model.duration import format_duration, parse_duration
from kai.core.model.errors import InvalidObject
from kai.core.state.snapshot import STUCK_IN_RELEASING_S

DEFAULT_ACTIONS = ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction")
KAI_ACTIONS = DEFAULT_ACTIONS
KNOWN_ACTIONS = (*KAI_ACTIONS, "overlimiteviction", "ungate")
"""KAI's actions and kai's own two (``docs/deviations.md``): ``overlimiteviction`` evicts down to a queue's limit
after a cut, ``ungate`` lifts the queue-admission gate of pods their queue admits."""
GENERATOR_NODE_LOCAL_GREEDY = "NodeLocalGreedy"
GENERATOR_MULTI_NODE_GANG = "MultiNodeGang"
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
KAI_PLUGINS = (
    "predicates",
    "priority",
    "nodeplacement",
    "nominatednode",
    "numa",
    "nodeavailability",
    "gpusharingorder",
    "gpupack",
    "gpuspread",
    "resourcetype",
    "podaffinity",
    "elastic",
    "kubeflow",
    "ray",
    "taskorder",
    "subgrouporder",
    "dynamicresources",
    "topology",
    "proportion",
    "minruntime",
    "snapshot",
    "sg-nodelocalgreedy",
    "sg-multinodegang",
    "reflectjoborder",
    "gpujoborder",
)
"""Every plugin name KAI registers (pkg/scheduler/plugins/factory.go: v0.17's, and ``gpujoborder`` of KAI #1995);
any other name is a mistake."""
PREFER_LARGER, PREFER_SMALLER = "prefer-larger", "prefer-smaller"
GPU_JOB_ORDER_MODES = (PREFER_LARGER, PREFER_SMALLER)
"""``gpujoborder``'s ``mode`` argument: which of two jobs of equal priority goes first, the one asking for more GPUs
or for fewer."""
NOT_IMPLEMENTED_PLUGINS = frozenset({"podaffinity"})
"""KAI plugins kai does not run yet: a config naming one is used without it, with a warning."""
ENDPOINT_PLUGINS = frozenset({"snapshot", "reflectjoborder"})
"""KAI plugins that only serve an HTTP path (``/get-snapshot``, ``/get-job-order``): the scheduler's plugin server
serves both whatever the config says, so a cycle has nothing to run for them."""
WHERE = "scheduler config"


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
    node_pool: str = "default"
    """The node pool the scheduler schedules, as its texts name it: its shard's partition value, KAI's ``default``
    without one (set by the component, not the config file)."""
    warnings: tuple[InvalidObject, ...] = ()
    """What the config asks for that kai does not do (KAI plugins it does not implement); reported, not fatal."""
    disruption: DisruptionConfig = field(default_factory=DisruptionConfig)

    @property
    def plugins(self) -> tuple[PluginOption, ...]:
        return tuple(option for tier in self.tiers for option in tier)


def _bool(raw: Mapping[str, Any], key: str, default: bool, prefix: str = "") -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise InvalidObject(WHERE, prefix + key, f"got {value!r}; expected true or false")
    return value


def _int(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidObject(WHERE, key, f"got {value!r}; expected an integer")
    return value


def _positive_duration(raw: Mapping[str, Any], key: str, default: float) -> float:
    """A Go duration; as in KAI, zero or negative falls back to the default."""
    value = raw.get(key)
    if value is None:
        return default
    seconds = parse_duration(str(value), WHERE, key)
    return seconds if seconds > 0 else default


def _count(raw: Mapping[str, Any], key: str, field: str) -> int:
    value = raw.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidObject(WHERE, field, f"got {value!r}; expected a whole number of pods (0: no cap)")
    return value


def _disruption(raw: object) -> DisruptionConfig:
    key = "disruption"
    if raw is None:
        return DisruptionConfig()
    if not isinstance(raw, Mapping):
        raise InvalidObject(WHERE, key, "expected a mapping with podDisruptionBudgets, evictionBudget, ...")
    budget = raw.get("evictionBudget") or {}
    if not isinstance(budget, Mapping):
        raise InvalidObject(WHERE, f"{key}.evictionBudget", "expected a mapping with perCycle and perMinute")
    reservation = raw.get("queueAdmissionReservation")
    defaults = DisruptionConfig()
    return DisruptionConfig(
        pod_disruption_budgets=_bool(raw, "podDisruptionBudgets", True, f"{key}."),
        per_cycle=_count(budget, "perCycle", f"{key}.evictionBudget.perCycle"),
        per_minute=_count(budget, "perMinute", f"{key}.evictionBudget.perMinute"),
        preemption_policy=_bool(raw, "preemptionPolicy", True, f"{key}."),
        admission_reservation_s=(
            defaults.admission_reservation_s
            if reservation is None
            else parse_duration(str(reservation), WHERE, f"{key}.queueAdmissionReservation")
        ),
    )


def _search_budgets(raw: object) -> SearchBudgets:
    key = "scenarioSearchBudgets"
    if raw is None:
        return SearchBudgets()
    if not isinstance(raw, Mapping):
        raise InvalidObject(WHERE, key, "expected a mapping with maxActionSearchDuration, maxJobSearchDuration, ...")

    def seconds(value: object, field_name: str) -> float:
        amount = parse_duration(str(value), WHERE, field_name)
        if amount < 0:
            raise InvalidObject(WHERE, field_name, f"got {value!r}; must not be negative")
        return amount

    def per_name(name: str) -> dict[str, float]:
        values = raw.get(name) or {}
        if not isinstance(values, Mapping):
            raise InvalidObject(WHERE, f"{key}.{name}", "expected a mapping of name to a duration")
        return {str(k): seconds(v, f"{key}.{name}.{k}") for k, v in values.items()}

    defaults = SearchBudgets()
    job = raw.get("maxJobSearchDuration")
    minimum = raw.get("minJobSearchDuration")
    budgets = SearchBudgets(
        action_s=per_name("maxActionSearchDuration"),
        job_s=defaults.job_s if job is None else seconds(job, f"{key}.maxJobSearchDuration"),
        min_job_s=defaults.min_job_s if minimum is None else seconds(minimum, f"{key}.minJobSearchDuration"),
        generator_s=per_name("maxGeneratorSearchDuration"),
    )
    if budgets.job_s and budgets.min_job_s >= budgets.job_s:
        raise InvalidObject(WHERE, f"{key}.minJobSearchDuration", "must be less than maxJobSearchDuration")
    return budgets


def _tiers(raw: object) -> tuple[tuple[PluginOption, ...], ...]:
    if not isinstance(raw, list):
        raise InvalidObject(WHERE, "tiers", "expected a list of {plugins: [{name, arguments}]}")
    tiers = []
    for i, tier in enumerate(raw):
        plugins = tier.get("plugins") if isinstance(tier, Mapping) else None
        if not isinstance(plugins, list):
            raise InvalidObject(WHERE, f"tiers[{i}].plugins", "expected a list of {name, arguments}")
        options = []
        for j, plugin in enumerate(plugins):
            name = plugin.get("name") if isinstance(plugin, Mapping) else None
            if not isinstance(name, str) or name not in KAI_PLUGINS:
                got = f"unknown plugin {name!r}" if isinstance(name, str) and name else "expected a plugin name"
                raise InvalidObject(WHERE, f"tiers[{i}].plugins[{j}].name", f"{got}; allowed: {', '.join(KAI_PLUGINS)}")
            arguments = plugin.get("arguments") or {}
            if not isinstance(arguments, Mapping):
                raise InvalidObject(WHERE, f"tiers[{i}].plugins[{j}].arguments", "expected a mapping")
            options.append(PluginOption(name, dict(arguments)))
        tiers.append(tuple(options))
    return tuple(tiers)


def _plugin_warnings(tiers: tuple[tuple[PluginOption, ...], ...]) -> tuple[InvalidObject, ...]:
    warnings = []
    for i, tier in enumerate(tiers):
        for j, option in enumerate(tier):
            field = f"tiers[{i}].plugins[{j}]"
            if option.name in NOT_IMPLEMENTED_PLUGINS:
                text = f"KAI plugin {option.name!r} is not implemented by kai; not run"
                warnings.append(InvalidObject(WHERE, f"{field}.name", text))
            mode = option.arguments.get("mode", PREFER_LARGER)
            if option.name == "gpujoborder" and mode not in GPU_JOB_ORDER_MODES:
                text = f"got {mode!r}; allowed: {', '.join(GPU_JOB_ORDER_MODES)}; {PREFER_LARGER} is used, as KAI does"
                warnings.append(InvalidObject(WHERE, f"{field}.arguments.mode", text))
    return tuple(warnings)


def parse_config(raw: Mapping[str, Any]) -> SchedulerConfig:
    if not isinstance(raw, Mapping):
        raise InvalidObject(WHERE, "<config>", f"expected a mapping (actions, tiers, ...), got {type(raw).__name__}")
    defaults = SchedulerConfig()
    actions = defaults.actions
    if raw.get("actions") is not None:
        text = raw["actions"]
        if not isinstance(text, str):
            raise InvalidObject(WHERE, "actions", "expected a comma-separated string such as 'allocate, reclaim'")
        actions = tuple(a.strip() for a in text.split(",") if a.strip())
        for action in actions:
            if action not in KNOWN_ACTIONS:
                raise InvalidObject(WHERE, "actions", f"unknown action {action!r}; allowed: {', '.join(KNOWN_ACTIONS)}")
    depth = raw.get("queueDepthPerAction") or {}
    if not isinstance(depth, Mapping) or not all(isinstance(v, int) for v in depth.values()):
        raise InvalidObject(WHERE, "queueDepthPerAction", "expected a mapping of action name to an integer")
    if raw.get("fullHierarchyFairness", True) is not True:
        raise InvalidObject(WHERE, "fullHierarchyFairness", "only true (KAI's default) is supported")
    grace = raw.get("globalDefaultStalenessGracePeriod")
    gates = raw.get("featureGates") or {}
    if not isinstance(gates, Mapping):
        raise InvalidObject(WHERE, "featureGates", "expected a mapping of gate name to true/false")
    tiers = _tiers(raw["tiers"]) if raw.get("tiers") is not None else defaults.tiers
    usage_db, usage_warnings = parse_usage_db_config(raw.get("usageDBConfig"))
    return SchedulerConfig(
        actions=actions,
        tiers=tiers,
        queue_depth_per_action=dict(depth),
        scheduler_name=str(raw.get("schedulerName") or defaults.scheduler_name),
        queue_label_key=str(raw.get("queueLabelKey") or defaults.queue_label_key),
        allow_consolidating_reclaim=_bool(raw, "allowConsolidatingReclaim", True),
        max_consolidation_preemptees=_int(raw, "maxNumberConsolidationPreemptees", 16),
        staleness_grace_s=(
            parse_duration(str(grace), WHERE, "globalDefaultStalenessGracePeriod") if grace is not None else 60.0
        ),
        use_scheduling_signatures=_bool(raw, "useSchedulingSignatures", True),
        stuck_in_releasing_s=_positive_duration(raw, "stuckInReleasingThreshold", STUCK_IN_RELEASING_S),
        search_budgets=_search_budgets(raw.get("scenarioSearchBudgets")),
        feature_gates={str(k): bool(v) for k, v in gates.items()},
        usage_db=usage_db,
        disruption=_disruption(raw.get("disruption")),
        warnings=(_plugin_warnings(tiers) if raw.get("tiers") is not None else ()) + usage_warnings,
    )
