"""A SchedulingShard → its scheduler: the ConfigMap with the scheduler config, the Deployment
``<schedulerName>-<shard>`` and its metrics Service (KAI's pkg/operator/operands/scheduler and
pkg/apis/kai/v1/schedulingshard_types.go).

The config is KAI's: default plugins and actions with their priorities, the placement preset (binpack: gpupack,
gpusharingorder and consolidation; spread: gpuspread, no consolidation), then the shard's overrides merged field by
field (``enabled`` and ``priority`` each; ``arguments`` replace the defaults whole; an unknown name is a new entry,
enabled, priority 0), sorted by priority (higher first), then name. It is checked with the parser ``kai scheduler``
and ``kai simulate`` use (``parse_config``), so a shard the scheduler would refuse is reported on the shard instead.
"""

import hashlib
from dataclasses import dataclass
from typing import Any

import yaml

from kai.components.operator.fields import Fields
from kai.components.operator.leader import leader_slice, routed_to_leader
from kai.components.operator.monitoring import usage_url
from kai.components.operator.objects import labelled
from kai.components.operator.settings import Settings
from kai.components.operator.workloads import (
    METRICS_PORT,
    SCHEDULER_PROBE_PORT,
    deployment,
    metrics_port,
    service_object,
)
from kai.components.shared.components import COMPONENTS
from kai.core.config import parse_config
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.usage.usage_config import CLIENT_PROMETHEUS
from kai.core.model.errors import InvalidObject
from kai.core.registry import ACTIONS, PLUGINS

PLUGIN_PRIORITIES = {name: entry.shard_priority for name, entry in PLUGINS.items() if entry.shard_priority is not None}
ACTION_PRIORITIES = {name: entry.shard_priority for name, entry in ACTIONS.items() if entry.shard_priority is not None}
STRATEGIES = ("binpack", "spread")
CONFIG_PATH = "/etc/config/config.yaml"
SCHEDULER_ACCOUNT = COMPONENTS["scheduler"].operand
SCHEDULER_FLAGS = ("schedule-period", "leader-elect", "qps", "burst", "full-hierarchy-fairness")
"""Shard ``args`` kai's scheduler takes (the rest of KAI's flags are reported as ignored on the shard)."""


@dataclass(frozen=True)
class Entry:
    enabled: bool
    priority: int
    arguments: dict[str, str]


@dataclass(frozen=True)
class RenderedShard:
    config: dict[str, Any]
    """The scheduler config (KAI's SchedulerConfiguration) as written to the ConfigMap."""
    parsed: SchedulerConfig
    args: list[str]
    warnings: list[str]


def _merge(defaults: dict[str, Entry], overrides: Fields, with_arguments: bool) -> dict[str, Entry]:
    merged = dict(defaults)
    for name in overrides.raw:
        override = overrides.sub(name)
        entry = merged.get(name, Entry(True, 0, {}))
        arguments = entry.arguments
        if with_arguments and override.raw.get("arguments") is not None:
            arguments = override.strings("arguments")
        merged[name] = Entry(
            override.flag("enabled", entry.enabled), override.integer("priority", entry.priority), arguments
        )
    return merged


def _ordered(entries: dict[str, Entry]) -> list[tuple[str, Entry]]:
    enabled = [(name, entry) for name, entry in entries.items() if entry.enabled]
    return sorted(enabled, key=lambda item: (-item[1].priority, item[0]))


def scheduler_config(spec: Fields) -> dict[str, Any]:
    """The shard's scheduler config (KAI's SetDefaultsWhereNeeded + resolvePlugins/resolveActions)."""
    placement = spec.sub("placementStrategy")
    gpu = placement.choice("gpu", "binpack", STRATEGIES)
    cpu = placement.choice("cpu", "binpack", STRATEGIES)
    binpack = gpu == "binpack"
    plugins = {name: Entry(True, priority, {}) for name, priority in PLUGIN_PRIORITIES.items()}
    for name, enabled in (("gpusharingorder", binpack), ("gpupack", binpack), ("gpuspread", not binpack)):
        plugins[name] = Entry(enabled, plugins[name].priority, {})
    k_value = spec.number("kValue", None)
    if k_value is not None:
        plugins["proportion"] = Entry(True, PLUGIN_PRIORITIES["proportion"], {"kValue": f"{k_value:g}"})
    runtime = spec.sub("minRuntime")
    minimums = {
        argument: runtime.text(field, "")
        for field, argument in (
            ("preemptMinRuntime", "defaultPreemptMinRuntime"),
            ("reclaimMinRuntime", "defaultReclaimMinRuntime"),
        )
        if runtime.text(field, "")
    }
    plugins["minruntime"] = Entry(True, PLUGIN_PRIORITIES["minruntime"], minimums)
    plugins["nodeplacement"] = Entry(True, PLUGIN_PRIORITIES["nodeplacement"], {"gpu": gpu, "cpu": cpu})
    consolidation = gpu != "spread" and cpu != "spread"
    actions = {name: Entry(True, priority, {}) for name, priority in ACTION_PRIORITIES.items()}
    actions["consolidation"] = Entry(consolidation, ACTION_PRIORITIES["consolidation"], {})
    plugins = _merge(plugins, spec.sub("plugins"), with_arguments=True)
    actions = _merge(actions, spec.sub("actions"), with_arguments=False)
    action_names = [name for name, _ in _ordered(actions)]
    config: dict[str, Any] = {
        "actions": ", ".join(action_names),
        "tiers": [
            {
                "plugins": [
                    {"name": name, "arguments": entry.arguments} if entry.arguments else {"name": name}
                    for name, entry in _ordered(plugins)
                ]
            }
        ],
    }
    depth = spec.sub("queueDepthPerAction")
    for action in depth.raw:
        if action not in action_names:
            raise depth.error(
                action, f"the scheduler's actions are {', '.join(action_names)}; {action!r} isn't one of them"
            )
        depth.integer(action, 0, minimum=1)
    if depth.raw:
        config["queueDepthPerAction"] = dict(depth.raw)
    for name in ("scenarioSearchBudgets", "usageDBConfig"):
        if spec.raw.get(name):
            config[name] = spec.mapping(name)
    return config


def render_shard(settings: Settings, shard: dict[str, Any]) -> RenderedShard:
    """The shard's config, checked by the scheduler's own parser, and the scheduler's flags. Raises
    ``InvalidObject`` naming the shard's field."""
    name = (shard.get("metadata") or {}).get("name", "")
    spec = Fields(f"SchedulingShard {name}", shard.get("spec"), "spec")
    config = scheduler_config(spec)
    _connect_usage(settings, spec, config)
    try:
        parsed = parse_config(config)
    except InvalidObject as error:  # name the shard's field the generated one came from
        source = "spec.plugins" if error.field.startswith("tiers") else f"spec.{error.field.split('[')[0]}"
        raise InvalidObject(spec.ref, source, error.problem) from error
    partition = spec.text("partitionLabelValue", "")
    args = [
        "scheduler",
        f"--scheduler-conf={CONFIG_PATH}",
        f"--scheduler-name={settings.scheduler_name}",
        f"--nodepool-label-key={settings.node_pool_label_key}",
        f"--partition-label-value={partition}",
        f"--metrics-bind-address=:{METRICS_PORT}",
        f"--health-probe-bind-address=:{SCHEDULER_PROBE_PORT}",
    ]
    warnings = [f"spec.tiers: {warning.problem}" for warning in parsed.warnings]
    flags = spec.strings("args")
    for flag, value in sorted(flags.items()):
        if flag in SCHEDULER_FLAGS:
            args.append(f"--{flag}={value}")
        else:
            warnings.append(f"spec.args.{flag}: not a flag kai's scheduler takes; ignored")
    if routed_to_leader(settings) and "leader-elect" not in flags:
        args.append("--leader-elect")
    return RenderedShard(config, parsed, args, warnings)


def _connect_usage(settings: Settings, spec: Fields, config: dict[str, Any]) -> None:
    """``clientType: prometheus`` without a connection string reads the Prometheus the Config names (KAI's
    getUsageDBConfig): the external one, else the one kai's operator makes."""
    usage = config.get("usageDBConfig")
    if not usage or usage.get("clientType") != CLIENT_PROMETHEUS:
        return
    if usage.get("connectionString") or usage.get("connectionStringEnvVar"):
        return
    url = usage_url(settings)
    if not url:
        raise spec.sub("usageDBConfig").error(
            "connectionString",
            "clientType prometheus needs Prometheus' URL: set it here, or in the Config set spec.prometheus.enabled: "
            "true (the Prometheus kai's operator makes) or spec.prometheus.externalPrometheusUrl",
        )
    config["usageDBConfig"] = usage | {"connectionString": url}


def shard_objects(
    settings: Settings, shard: dict[str, Any], rendered: RenderedShard, leader: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """ConfigMap, Deployment and Service ``<schedulerName>-<shard>``, and with more than one replica the Service's
    EndpointSlice to ``leader`` (the Lease holder's pod, ``operator.leader``). The pod template carries a hash of the
    config, so a changed config restarts the scheduler (KAI: the ConfigMap's resourceVersion)."""
    name = f"{settings.scheduler_name}-{shard['metadata']['name']}"
    text = yaml.safe_dump(rendered.config, sort_keys=False)
    config_map = labelled("ConfigMap", name, name, settings.namespace) | {"data": {"config.yaml": text}}
    volumes = [{"name": "config", "configMap": {"name": name}}]
    mounts = [{"name": "config", "mountPath": CONFIG_PATH, "subPath": "config.yaml"}]
    scheduler = deployment(
        settings,
        name,
        "scheduler",
        rendered.args,
        account=SCHEDULER_ACCOUNT,
        volumes=volumes,
        mounts=mounts,
        probe_port=SCHEDULER_PROBE_PORT,
    )
    scheduler["spec"]["template"]["metadata"]["annotations"] = {"configHash": f"{hash_text(text)}"}
    service = service_object(settings, name, [metrics_port(name)])
    service["metadata"]["annotations"] = {"prometheus.io/scrape": "true"}  # as KAI's
    service["spec"]["clusterIP"] = "None"
    if not routed_to_leader(settings):
        return [config_map, scheduler, service]
    del service["spec"]["selector"]  # the operator keeps its endpoints: the leader's
    return [config_map, scheduler, service, leader_slice(settings, name, leader)]


def hash_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
