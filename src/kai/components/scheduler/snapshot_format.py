"""KAI's snapshot format (its snapshot plugin's ``/get-snapshot`` zip, v0.17): ``snapshot.json`` holding the
scheduler ``config``, the ``schedulerParams`` and the ``rawObjects`` a cycle sees, kind by kind.

kai writes that format, so a snapshot taken from kai loads in KAI's ``snapshot-tool`` too, and reads it, so a KAI
user's snapshot runs in ``kai simulate``. KAI writes objects as its listers hold them (without ``kind`` and
``apiVersion``: the list they are in says the kind) and Go's JSON rules apply: ``schedulerParams`` leaves out false,
zero and empty fields (read back as such) and writes durations as nanoseconds. Kinds kai does not schedule with
(storage, config maps, device classes, NUMA topologies) are kept on write as empty lists and reported on read.
"""

import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kai.components.scheduler.node_pool import NodePool
from kai.core.framework.config import DisruptionConfig, SchedulerConfig
from kai.core.model import names
from kai.core.model.duration import format_duration
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import format_time, parse_time
from kai.core.state.cluster_state import object_key

SNAPSHOT_FILE = "snapshot.json"
LISTS: dict[str, tuple[str, str]] = {
    "pods": ("Pod", "v1"),
    "nodes": ("Node", "v1"),
    "queues": ("Queue", "scheduling.run.ai/v2"),
    "podGroups": ("PodGroup", "scheduling.run.ai/v2alpha2"),
    "bindRequests": ("BindRequest", "scheduling.run.ai/v1alpha2"),
    "priorityClasses": ("PriorityClass", "scheduling.k8s.io/v1"),
    "configMaps": ("ConfigMap", "v1"),
    "persistentVolumes": ("PersistentVolume", "v1"),
    "persistentVolumeClaims": ("PersistentVolumeClaim", "v1"),
    "csiStorageCapacities": ("CSIStorageCapacity", "storage.k8s.io/v1"),
    "storageClasses": ("StorageClass", "storage.k8s.io/v1"),
    "csiDrivers": ("CSIDriver", "storage.k8s.io/v1"),
    "resourceClaims": ("ResourceClaim", "resource.k8s.io/v1"),
    "resourceSlices": ("ResourceSlice", "resource.k8s.io/v1"),
    "deviceClasses": ("DeviceClass", "resource.k8s.io/v1"),
    "topologies": ("Topology", "kai.scheduler/v1alpha1"),
    "nodeResourceTopologies": ("NodeResourceTopology", "topology.node.k8s.io/v1alpha2"),
    "podDisruptionBudgets": ("PodDisruptionBudget", "policy/v1"),
}
"""KAI's ``rawObjects`` lists, in its order, with the kind and API version of their objects, and kai's one more
(``podDisruptionBudgets``: its scheduler reads them; KAI's reader ignores a list it does not know)."""
SCHEDULED_KINDS = frozenset(
    {
        "Pod",
        "Node",
        "Queue",
        "PodGroup",
        "BindRequest",
        "PriorityClass",
        "Topology",
        "ResourceClaim",
        "ResourceSlice",
        "NodeResourceTopology",
        "PodDisruptionBudget",
    }
)
"""The kinds kai's scheduler reads; objects of the other lists are not used."""
_NANOS = 1e9
_POOL_KEY, _POOL_VALUE = "NodePoolLabelKey", "NodePoolLabelValue"


class SnapshotFormatError(ValueError):
    """A file that is not a KAI snapshot; the message names the file and what is wrong."""


@dataclass
class KaiSnapshot:
    config: dict[str, Any]
    """The scheduler config in kai's form (``parse_config``): KAI's config with its schedulerParams merged in."""
    objects: list[dict[str, Any]]
    """Every object of a kind kai schedules with, with its ``kind`` and ``apiVersion``."""
    ignored: dict[str, int] = field(default_factory=dict)
    """Objects of lists kai does not use, counted per list."""
    notes: list[tuple[str, str]] = field(default_factory=list)
    """Settings of the snapshot kai cannot honour: (field, what kai does instead)."""
    captured_at: float | None = None
    """When kai took it (kai's own ``kai.capturedAt``; KAI's snapshots do not say)."""
    node_pool: NodePool | None = None
    """The shard it was taken in (``schedulerParams.partitionParams``); None: the whole cluster."""
    podgroups_elsewhere: frozenset[str] | None = None
    """The other pools' PodGroups its pods name, as kai recorded them (``kai.podGroupsElsewhere``); None when not
    recorded (KAI's snapshots)."""


@dataclass
class Shard:
    """What a snapshot of a pool holds: the pool's nodes, queues and PodGroups and every other object, and the other
    pools' PodGroups its pods name (kai records them, so a pod naming a PodGroup that exists nowhere stays invalid).
    Without a pool (a cluster without shards): every object."""

    objects: Mapping[str, list[dict[str, Any]]]
    pool: NodePool | None = None
    podgroups_elsewhere: frozenset[str] = frozenset()


def shard_of(objects: Mapping[str, list[dict[str, Any]]], pool: NodePool | None) -> Shard:
    if pool is None:
        return Shard(objects)
    held = {kind: [obj for obj in items if pool.holds(kind, obj)] for kind, items in objects.items()}
    named = {podgroup_of_pod(pod) for pod in objects.get("Pod", [])}
    elsewhere = {object_key(group) for group in objects.get("PodGroup", []) if not pool.holds("PodGroup", group)}
    return Shard(held, pool, frozenset(elsewhere & named))


def podgroup_of_pod(pod: Mapping[str, Any]) -> str:
    """``namespace/name`` of the PodGroup a pod's annotation names ("" when none)."""
    meta = pod.get("metadata") or {}
    name = (meta.get("annotations") or {}).get(names.POD_GROUP_ANNOTATION)
    return f"{meta.get('namespace', 'default')}/{name}" if name else ""


def write_zip(config: SchedulerConfig, shard: Shard, captured_at: float) -> bytes:
    """A zip in KAI's format of the shard's objects (per kind) and ``config``, with kai's note of when it was taken
    (KAI's reader ignores the extra ``kai`` key); of a pool, with KAI's ``partitionParams`` and, in kai's note, the
    other pools' PodGroups its pods name."""
    raw: dict[str, list[dict[str, Any]]] = {name: [] for name in LISTS}
    by_kind = {kind: name for name, (kind, _) in LISTS.items()}
    for kind, items in shard.objects.items():
        if kind in by_kind:
            raw[by_kind[kind]] = [dict(item) for item in items]
    kai_config, params = kai_config_of(config, shard.pool)
    note: dict[str, Any] = {"capturedAt": format_time(captured_at)}
    if shard.pool is not None:
        note["podGroupsElsewhere"] = sorted(shard.podgroups_elsewhere)
    document = {"config": kai_config, "schedulerParams": params, "rawObjects": raw, "kai": note}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(SNAPSHOT_FILE, json.dumps(document))
    return buffer.getvalue()


def kai_config_of(config: SchedulerConfig, node_pool: NodePool | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """KAI's ``SchedulerConfiguration`` and ``SchedulerParams`` for a kai config (durations in Go's forms), with the
    shard's ``partitionParams`` when ``node_pool`` is given."""
    tiers = [
        {
            "plugins": [
                {"name": option.name, **({"arguments": _strings(option.arguments)} if option.arguments else {})}
                for option in tier
            ]
        }
        for tier in config.tiers
    ]
    kai_config: dict[str, Any] = {"actions": ", ".join(config.actions), "tiers": tiers}
    if config.queue_depth_per_action:
        kai_config["queueDepthPerAction"] = dict(config.queue_depth_per_action)
    if config.disruption != DisruptionConfig():
        kai_config["disruption"] = config.disruption.document()  # kai's own; KAI's reader ignores it
    budgets = config.search_budgets
    kai_config["scenarioSearchBudgets"] = {
        "maxActionSearchDuration": {k: format_duration(v) for k, v in budgets.action_s.items()},
        "maxJobSearchDuration": format_duration(budgets.job_s),
        "minJobSearchDuration": format_duration(budgets.min_job_s),
        "maxGeneratorSearchDuration": {k: format_duration(v) for k, v in budgets.generator_s.items()},
    }
    params: dict[str, Any] = {
        "schedulerName": config.scheduler_name,
        "queueLabelKey": config.queue_label_key,
        "maxNumberConsolidationPreemptees": config.max_consolidation_preemptees,
        "useSchedulingSignatures": config.use_scheduling_signatures,
        "fullHierarchyFairness": config.full_hierarchy_fairness,
        "allowConsolidatingReclaim": config.allow_consolidating_reclaim,
        "globalDefaultStalenessGracePeriod": round(config.staleness_grace_s * _NANOS),
        "stuckInReleasingThreshold": round(config.stuck_in_releasing_s * _NANOS),
    }
    if config.feature_gates:
        params["featureGates"] = dict(config.feature_gates)  # kai's own; KAI takes gates as a flag and ignores it
    if node_pool is not None:
        params["partitionParams"] = {_POOL_KEY: node_pool.label_key, _POOL_VALUE: node_pool.value}
    return kai_config, params


def _strings(arguments: Mapping[str, Any]) -> dict[str, str]:
    """KAI's plugin arguments are a string map."""
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in arguments.items()}


def read_zip(data: bytes, where: str) -> KaiSnapshot:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            document = json.loads(archive.read(SNAPSHOT_FILE))
    except zipfile.BadZipFile as error:
        raise SnapshotFormatError(f"{where}: not a zip file ({error})") from error
    except KeyError as error:
        raise SnapshotFormatError(f"{where}: holds no {SNAPSHOT_FILE} (not a KAI snapshot)") from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise SnapshotFormatError(f"{where}: {SNAPSHOT_FILE} is not valid JSON ({error})") from error
    if not isinstance(document, dict) or not isinstance(document.get("rawObjects"), dict):
        raise SnapshotFormatError(f"{where}: {SNAPSHOT_FILE} has no rawObjects mapping (not a KAI snapshot)")
    config, notes = config_from_kai(document, where)
    snapshot = KaiSnapshot(config, [], notes=notes, captured_at=_captured_at(document, where))
    snapshot.node_pool = node_pool_of(document, snapshot.notes)
    snapshot.podgroups_elsewhere = _podgroups_elsewhere(document, snapshot.notes)
    for name, items in document["rawObjects"].items():
        if name not in LISTS:
            snapshot.notes.append((f"rawObjects.{name}", "not a list KAI v0.17 writes; ignored"))
            continue
        if items is None:
            continue
        if not isinstance(items, list):
            raise SnapshotFormatError(f"{where}: rawObjects.{name}: expected a list of objects")
        kind, api_version = LISTS[name]
        if kind not in SCHEDULED_KINDS:
            if items:
                snapshot.ignored[name] = len(items)
            continue
        for item in items:
            snapshot.objects.append(
                {"apiVersion": api_version, "kind": kind, **item} if isinstance(item, dict) else {"kind": kind}
            )
    return snapshot


def config_from_kai(document: dict[str, Any], where: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """KAI's config with the scheduler params it ran with, read with Go's rules (absent is false, 0 or empty)."""
    config = document.get("config") or {}
    params = document.get("schedulerParams") or {}
    if not isinstance(config, dict) or not isinstance(params, dict):
        raise SnapshotFormatError(f"{where}: config and schedulerParams must be JSON objects")
    notes: list[tuple[str, str]] = []
    merged: dict[str, Any] = {key: config[key] for key in ("actions", "tiers", "queueDepthPerAction") if key in config}
    if config.get("scenarioSearchBudgets"):
        merged["scenarioSearchBudgets"] = config["scenarioSearchBudgets"]
    if config.get("disruption"):
        merged["disruption"] = config["disruption"]
    if config.get("usageDBConfig"):
        notes.append(("config.usageDBConfig", "kai has no usage database (time-based fair share); not used"))
    for key in ("schedulerName", "queueLabelKey"):
        if params.get(key):
            merged[key] = params[key]
    for key in ("allowConsolidatingReclaim", "useSchedulingSignatures"):
        merged[key] = bool(params.get(key, False))
    merged["maxNumberConsolidationPreemptees"] = int(params.get("maxNumberConsolidationPreemptees", 0))
    for key in ("globalDefaultStalenessGracePeriod", "stuckInReleasingThreshold"):
        merged[key] = format_duration(float(params.get(key, 0)) / _NANOS)
    if not params.get("fullHierarchyFairness", False):
        notes.append(("schedulerParams.fullHierarchyFairness", "false or absent; kai divides the whole hierarchy"))
    for key in ("restrictSchedulingNodes", "scheduleCSIStorage"):
        if params.get(key):
            notes.append((f"schedulerParams.{key}", "true, which kai does not support; ignored"))
    if isinstance(params.get("featureGates"), dict):
        merged["featureGates"] = params["featureGates"]
    return merged, notes


def node_pool_of(document: dict[str, Any], notes: list[tuple[str, str]]) -> NodePool | None:
    """The shard of KAI's ``partitionParams`` (SchedulingNodePoolParams: Go field names, no JSON tags); None without
    a label key, as KAI's selector then takes everything."""
    params = document.get("schedulerParams") or {}
    partition = params.get("partitionParams") if isinstance(params, dict) else None
    if not partition:
        return None
    key, value = (partition.get(k, "") if isinstance(partition, dict) else None for k in (_POOL_KEY, _POOL_VALUE))
    if not isinstance(key, str) or not isinstance(value, str):
        allowed = f"a mapping of {_POOL_KEY} and {_POOL_VALUE} strings"
        notes.append(("schedulerParams.partitionParams", f"expected {allowed}; every object is used"))
        return None
    return NodePool(key, value) if key else None


def _podgroups_elsewhere(document: dict[str, Any], notes: list[tuple[str, str]]) -> frozenset[str] | None:
    note = document.get("kai")
    recorded = note.get("podGroupsElsewhere") if isinstance(note, dict) else None
    if recorded is None:
        return None
    if not isinstance(recorded, list) or not all(isinstance(key, str) for key in recorded):
        notes.append(("kai.podGroupsElsewhere", "expected a list of namespace/name strings; not used"))
        return None
    return frozenset(recorded)


def _captured_at(document: dict[str, Any], where: str) -> float | None:
    stamp = (document.get("kai") or {}).get("capturedAt") if isinstance(document.get("kai"), dict) else None
    if not stamp:
        return None
    try:
        return parse_time(stamp, where, "kai.capturedAt")
    except InvalidObject as error:
        raise SnapshotFormatError(str(error)) from error
