"""Reading a scheduler config (KAI's SchedulerConfiguration YAML, as a mapping) into a ``SchedulerConfig``.

Action and plugin names are checked against ``kai.core.registry``; a KAI plugin kai does not run is a warning
(``SchedulerConfig.warnings``), any other bad value raises ``InvalidObject`` naming the field and what is allowed.
"""

from collections.abc import Mapping
from typing import Any

from kai.core.framework.config import DisruptionConfig, PluginOption, SchedulerConfig, SearchBudgets
from kai.core.framework.usage.usage_config import parse_usage_db_config
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject
from kai.core.registry import ACTIONS, PLUGINS
from kai.core.state.snapshot import STUCK_IN_RELEASING_S

WHERE = "scheduler config"


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
            if not isinstance(name, str) or name not in PLUGINS:
                got = f"unknown plugin {name!r}" if isinstance(name, str) and name else "expected a plugin name"
                raise InvalidObject(WHERE, f"tiers[{i}].plugins[{j}].name", f"{got}; allowed: {', '.join(PLUGINS)}")
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
            field, entry = f"tiers[{i}].plugins[{j}]", PLUGINS[option.name]
            if entry.check_arguments is not None:
                for argument, text in entry.check_arguments(option.arguments):
                    warnings.append(InvalidObject(WHERE, f"{field}.arguments.{argument}", text))
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
            if action not in ACTIONS:
                raise InvalidObject(WHERE, "actions", f"unknown action {action!r}; allowed: {', '.join(ACTIONS)}")
    depth = raw.get("queueDepthPerAction") or {}
    if not isinstance(depth, Mapping) or not all(isinstance(v, int) for v in depth.values()):
        raise InvalidObject(WHERE, "queueDepthPerAction", "expected a mapping of action name to an integer")
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
        full_hierarchy_fairness=_bool(raw, "fullHierarchyFairness", True),
        stuck_in_releasing_s=_positive_duration(raw, "stuckInReleasingThreshold", STUCK_IN_RELEASING_S),
        search_budgets=_search_budgets(raw.get("scenarioSearchBudgets")),
        feature_gates={str(k): bool(v) for k, v in gates.items()},
        usage_db=usage_db,
        disruption=_disruption(raw.get("disruption")),
        warnings=(_plugin_warnings(tiers) if raw.get("tiers") is not None else ()) + usage_warnings,
    )
