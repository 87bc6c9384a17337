"""Typed, immutable views of the Kubernetes objects the scheduler reads, parsed from plain API dicts.

Each ``parse_*`` reads only the fields the scheduler needs (docs/architecture.md §7) and raises ``InvalidObject`` naming
the object, the field and what is allowed. Units are the scheduler's: millicores, bytes, GPU devices, POSIX seconds.
"""

import json
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, replace

from kai.core.model import names
from kai.core.model.config_maps import required_config_maps
from kai.core.model.dra import PodClaim, pod_claims
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import (
    Metadata,
    Raw,
    integer,
    mapping,
    number,
    object_ref,
    optional_time,
    parse_time,
    sequence,
    string,
)
from kai.core.model.numa import NumaPlacement, parse_placement
from kai.core.model.pod_affinity import PodAffinity
from kai.core.model.pod_requests import BURSTABLE, ContainerRequest, container_requests, pod_amounts
from kai.core.model.quantity import resource_amount
from kai.core.model.resources import GpuRequestKind, ResourceRequest, mig_gpu_portion
from kai.core.model.selectors import NodeAffinity, Taint, Tolerations, parse_taints
from kai.core.model.shared import SharedValues


@dataclass(frozen=True, slots=True)
class HostPort:
    protocol: str
    host_ip: str
    port: int


@dataclass(frozen=True, slots=True)
class Pod:
    meta: Metadata
    scheduler_name: str
    priority_class_name: str
    node_name: str
    phase: str
    gated: bool
    podgroup_name: str
    subgroup_name: str
    request: ResourceRequest
    node_affinity: NodeAffinity
    tolerations: Tolerations
    host_ports: tuple[HostPort, ...]
    pod_affinity: PodAffinity
    nominated_node: str
    gpu_group: str
    received_resource_type: str
    is_reservation: bool
    is_legacy_mig: bool
    claims: tuple[PodClaim, ...] = ()
    containers: tuple[ContainerRequest, ...] = ()
    """Each container's effective request (NUMA alignment is per container, or per pod, on the kubelet)."""
    qos_class: str = BURSTABLE
    numa_observed: NumaPlacement | None = None
    """Its NUMA zones as its node reported them (``kai.scheduler/numa-placement-observed``)."""
    numa_predicted: NumaPlacement | None = None
    """Its NUMA zones as the scheduler predicted them at bind (``kai.scheduler/numa-placement-predicted``)."""
    config_maps: tuple[str, ...] = ()
    """The ConfigMaps of its namespace it cannot start without (``config_maps``)."""
    warnings: tuple[InvalidObject, ...] = ()
    """Problems the scheduler works around (the pod is used as parsed); reported, never fatal."""
    scheduling_gates: tuple[str, ...] = ()
    """The names of its ``spec.schedulingGates`` (``gated`` while there is any)."""

    @property
    def key(self) -> str:
        return self.meta.key

    @property
    def deleting(self) -> bool:
        return self.meta.deletion_ts is not None


def gpu_fraction(annotations: Mapping[str, str], obj: str, *, whole: bool = True) -> float:
    """The ``gpu-fraction`` annotation (0 when absent); an unusable value names the annotation and its range. The
    scheduler takes 1 (a whole GPU, shared); KAI's admission, ``whole=False``, wants a fraction below 1."""
    text = annotations.get(names.GPU_FRACTION_ANNOTATION, "")
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value <= 1 if whole else 0 < value < 1):
        allowed = '(0, 1], e.g. "0.5"' if whole else f'(0, 1), e.g. "0.5" (for a whole GPU, request {names.GPU})'
        field = f"metadata.annotations.{names.GPU_FRACTION_ANNOTATION}"
        raise InvalidObject(obj, field, f"got {text!r}; allowed: a number in {allowed}")
    return value


def whole_annotation(annotations: Mapping[str, str], name: str, obj: str, example: str) -> int:
    """A whole-number GPU annotation (0 when absent); an unusable value names the annotation and what is allowed."""
    text = annotations.get(name, "")
    if not text:
        return 0
    if not text.isdecimal() or int(text) <= 0:
        raise InvalidObject(obj, f"metadata.annotations.{name}", f"got {text!r}; allowed: {example}")
    return int(text)


GPU_MEMORY_EXAMPLE = 'a whole number of MiB above 0, e.g. "4096"'
NUM_DEVICES_EXAMPLE = 'a whole number above 0, e.g. "2"'


def _gpu_request(
    amounts: dict[str, float], annotations: Mapping[str, str], obj: str
) -> tuple[ResourceRequest, list[InvalidObject]]:
    """The GPU request and what was ignored to make it: KAI's admission rejects such mixes, kai uses the annotation."""
    mig = {name: amount for name, amount in amounts.items() if mig_gpu_portion(name)}
    whole = amounts.pop(names.GPU, 0.0)
    fraction = gpu_fraction(annotations, obj)
    memory = whole_annotation(annotations, names.GPU_MEMORY_ANNOTATION, obj, GPU_MEMORY_EXAMPLE)
    devices = whole_annotation(annotations, names.GPU_NUM_DEVICES_ANNOTATION, obj, NUM_DEVICES_EXAMPLE)
    warnings = _ignored_gpu_requests(whole, fraction, memory, devices, obj)
    count = devices or 1
    if fraction:
        return ResourceRequest(amounts, GpuRequestKind.FRACTION, count, fraction, 0, mig), warnings
    if memory:
        return ResourceRequest(amounts, GpuRequestKind.MEMORY, count, 0.0, memory, mig), warnings
    if mig:
        return ResourceRequest(amounts, GpuRequestKind.MIG, 0, 0.0, 0, mig), warnings
    if whole > 0:
        if whole.is_integer():
            return ResourceRequest(amounts, GpuRequestKind.REGULAR, int(whole), 1.0, 0, mig), warnings
        return ResourceRequest(amounts, GpuRequestKind.FRACTION, 1, whole, 0, mig), warnings
    return ResourceRequest(amounts, GpuRequestKind.NONE, 0, 0.0, 0, mig), warnings


def _ignored_gpu_requests(whole: float, fraction: float, memory: int, devices: int, obj: str) -> list[InvalidObject]:
    """Warnings for GPU requests KAI's admission would refuse together (docs/kai-reference.md §1.3;
    docs/deviations.md)."""
    warnings: list[InvalidObject] = []
    sharing = names.GPU_FRACTION_ANNOTATION if fraction else names.GPU_MEMORY_ANNOTATION if memory else ""
    if sharing and whole > 0:
        warnings.append(
            InvalidObject(
                obj,
                f"metadata.annotations.{sharing}",
                f"set together with an {names.GPU} request of {whole:g}: the annotation decides (the pod shares a "
                f"GPU) and the {names.GPU} request is ignored; KAI's admission rejects such a pod. Allowed: the "
                f"annotation or an {names.GPU} request, not both",
            )
        )
    if fraction and memory:
        warnings.append(
            InvalidObject(
                obj,
                f"metadata.annotations.{names.GPU_MEMORY_ANNOTATION}",
                f"ignored: {names.GPU_FRACTION_ANNOTATION} is also set and decides; KAI's admission rejects a pod "
                "with both. Allowed: one of the two",
            )
        )
    if devices and not sharing:
        warnings.append(
            InvalidObject(
                obj,
                f"metadata.annotations.{names.GPU_NUM_DEVICES_ANNOTATION}",
                f"ignored: it only counts devices of a {names.GPU_FRACTION_ANNOTATION} or "
                f"{names.GPU_MEMORY_ANNOTATION} request, and the pod has neither",
            )
        )
    return warnings


def _host_ports(spec: Raw, obj: str) -> tuple[HostPort, ...]:
    ports: list[HostPort] = []
    for i, container in enumerate(sequence(spec, "containers", obj, "spec.containers")):
        for j, port in enumerate(sequence(container, "ports", obj, f"spec.containers[{i}].ports")):
            field = f"spec.containers[{i}].ports[{j}]"
            host_port = integer(port, "hostPort", obj, f"{field}.hostPort", 0) or 0
            if host_port:
                protocol = string(port, "protocol", obj, f"{field}.protocol", "TCP")
                ports.append(HostPort(protocol, string(port, "hostIP", obj, f"{field}.hostIP"), host_port))
    return tuple(ports)


def parse_pod(raw: Raw) -> Pod:
    meta = Metadata(raw, "Pod", namespaced=True)
    obj = meta.ref
    spec = mapping(raw, "spec", obj, "spec")
    status = mapping(raw, "status", obj, "status")
    annotations = meta.annotations
    containers, qos_class = container_requests(spec, status, obj)
    request, warnings = _gpu_request(pod_amounts(containers, spec, obj), annotations, obj)
    containers, request = _shared_requests(containers, request)
    observed = _numa_record(annotations, names.NUMA_PLACEMENT_OBSERVED_ANNOTATION, obj, warnings)
    predicted = _numa_record(annotations, names.NUMA_PLACEMENT_PREDICTED_ANNOTATION, obj, warnings)
    legacy_mig = any(mig_gpu_portion(name) for name in annotations)
    gates = _gate_names(spec, obj)
    return Pod(
        meta=meta,
        scheduler_name=string(spec, "schedulerName", obj, "spec.schedulerName", "default-scheduler"),
        priority_class_name=string(spec, "priorityClassName", obj, "spec.priorityClassName"),
        node_name=string(spec, "nodeName", obj, "spec.nodeName"),
        phase=string(status, "phase", obj, "status.phase", "Pending"),
        gated=bool(gates),
        podgroup_name=annotations.get(names.POD_GROUP_ANNOTATION, ""),
        subgroup_name=meta.labels.get(names.SUBGROUP_LABEL, ""),
        request=request,
        node_affinity=NodeAffinity.from_pod_spec(spec, obj),
        tolerations=Tolerations.from_pod_spec(spec, obj),
        host_ports=_host_ports(spec, obj),
        pod_affinity=PodAffinity.from_pod(meta.namespace, spec, obj),
        nominated_node=string(status, "nominatedNodeName", obj, "status.nominatedNodeName"),
        gpu_group=meta.labels.get(names.GPU_GROUP_LABEL, ""),
        received_resource_type=annotations.get(names.RECEIVED_RESOURCE_TYPE_ANNOTATION, ""),
        is_reservation=meta.labels.get("app") == names.RESERVATION_APP_LABEL_VALUE,
        is_legacy_mig=legacy_mig,
        claims=pod_claims(spec, status, obj),
        containers=containers,
        qos_class=qos_class,
        numa_observed=observed,
        numa_predicted=predicted,
        config_maps=required_config_maps(spec, annotations, obj),
        warnings=tuple(warnings),
        scheduling_gates=gates,
    )


_SHARED_CONTAINERS: SharedValues[Hashable, tuple[ContainerRequest, ...]] = SharedValues(10_000)
_SHARED_REQUESTS: SharedValues[Hashable, ResourceRequest] = SharedValues(10_000)


def _shared_requests(
    containers: tuple[ContainerRequest, ...], request: ResourceRequest
) -> tuple[tuple[ContainerRequest, ...], ResourceRequest]:
    """The pod's container requests and resource request as the objects every pod that asks alike holds: most pods
    of a cluster ask for a few shapes (~750 bytes a pod held its own). Nobody changes a request's amounts in place."""
    containers_key = tuple((c.kind, *c.requests.items()) for c in containers)
    request_key = (
        tuple(request.amounts.items()),
        request.gpu_kind,
        request.gpu_devices,
        request.gpu_portion,
        request.gpu_memory_mib,
        tuple(request.mig.items()),
    )
    return _SHARED_CONTAINERS.one(containers_key, containers), _SHARED_REQUESTS.one(request_key, request)


def _gate_names(spec: Raw, obj: str) -> tuple[str, ...]:
    gates = sequence(spec, "schedulingGates", obj, "spec.schedulingGates")
    return tuple(
        string(gate, "name", obj, f"spec.schedulingGates[{i}].name") if isinstance(gate, Mapping) else str(gate)
        for i, gate in enumerate(gates)
    )


def _numa_record(
    annotations: Mapping[str, str], key: str, obj: str, warnings: list[InvalidObject]
) -> NumaPlacement | None:
    """A NUMA placement annotation; one that cannot be read is ignored with a warning (KAI logs it: it likely comes
    from an incompatible NUMA agent)."""
    if not annotations.get(key):
        return None
    try:
        return parse_placement(annotations[key], obj, f"metadata.annotations.{key}")
    except InvalidObject as problem:
        warnings.append(
            InvalidObject(
                problem.obj, problem.field, f"{problem.problem}; ignored (the pod's NUMA zones are not known)"
            )
        )
        return None


@dataclass(frozen=True, slots=True)
class Node:
    meta: Metadata
    allocatable: dict[str, float]
    taints: tuple[Taint, ...]
    ready: bool
    gpu_memory_mib: int
    gpu_memory_synced: bool
    gpu_count_label: int | None
    mig_enabled: bool
    mig_strategy: str

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def labels(self) -> dict[str, str]:
        return self.meta.labels


_NOT_READY_WHEN_TRUE = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")


def _node_ready(spec: Raw, status: Raw, obj: str) -> bool:
    if spec.get("unschedulable") is True:
        return False
    for condition in sequence(status, "conditions", obj, "status.conditions"):
        kind, value = condition.get("type"), condition.get("status")
        if kind == "Ready" and value != "True":
            return False
        if kind in _NOT_READY_WHEN_TRUE and value == "True":
            return False
    return True


def _gpu_memory(labels: Mapping[str, str]) -> tuple[int, bool]:
    """GPU memory per device in MiB from the GPU-operator label, floored to a multiple of 100 (KAI's rule)."""
    text = labels.get(names.GPU_MEMORY_NODE_LABEL, "")
    if not text.lstrip("-").isdigit():
        return names.DEFAULT_GPU_MEMORY_MIB, False
    value = int(text)
    if value >= 1024 * 1024:  # a GPU-feature-discovery bug reports bytes
        value //= 1024 * 1024
    return value - value % 100, True


def parse_node(raw: Raw) -> Node:
    meta = Metadata(raw, "Node", namespaced=False)
    obj = meta.ref
    spec = mapping(raw, "spec", obj, "spec")
    status = mapping(raw, "status", obj, "status")
    allocatable = {
        str(name): resource_amount(str(name), value, obj, f"status.allocatable.{name}")
        for name, value in mapping(status, "allocatable", obj, "status.allocatable").items()
    }
    labels = meta.labels
    mig_label = labels.get(names.MIG_ENABLED_NODE_LABEL)
    if mig_label is not None:
        mig_enabled = mig_label.lower() in ("true", "1", "t")
    else:
        mig_enabled = any(name.startswith(names.MIG_PREFIX) for name in allocatable)
    strategy = labels.get(names.MIG_STRATEGY_NODE_LABEL, "") if mig_enabled else ""
    count_text = labels.get(names.GPU_COUNT_NODE_LABEL, "")
    memory, synced = _gpu_memory(labels)
    return Node(
        meta=meta,
        allocatable=allocatable,
        taints=parse_taints(spec.get("taints") or [], obj),
        ready=_node_ready(spec, status, obj),
        gpu_memory_mib=memory,
        gpu_memory_synced=synced,
        gpu_count_label=int(count_text) if count_text.isdigit() else None,
        mig_enabled=mig_enabled,
        mig_strategy=strategy if strategy in ("single", "mixed") else "",
    )


@dataclass(frozen=True, slots=True)
class QueueResource:
    """One resource of a queue, in scheduler units (GPU devices, millicores, bytes); -1 means unlimited."""

    quota: float
    limit: float
    over_quota_weight: float


@dataclass(frozen=True, slots=True)
class Queue:
    meta: Metadata
    display_name: str
    parent: str
    priority: int
    gpu: QueueResource
    cpu: QueueResource
    memory: QueueResource
    preempt_min_runtime_s: float | None = None
    reclaim_min_runtime_s: float | None = None
    warnings: tuple[InvalidObject, ...] = ()
    """Values used as written but reported (a negative over-quota weight)."""
    eviction_strategy: str = ""
    """kai's ``kai.scheduler/eviction-strategy`` annotation: how its workloads are evicted unless theirs says."""
    admission_gating: bool = False
    """kai's ``kai.scheduler/queue-admission-gating: "true"``: its pods wait gated until the queue admits them."""

    @property
    def name(self) -> str:
        return self.meta.name


def _queue_amount(block: Raw, key: str, obj: str, field: str) -> float:
    """A quota or limit: -1 (unlimited) or a number of at least 0; unset is 0 as in KAI."""
    value = number(block, key, obj, f"{field}.{key}", 0.0)
    if value < 0 and value != names.UNLIMITED:
        raise InvalidObject(obj, f"{field}.{key}", f"got {value:g}; allowed: -1 (unlimited) or a number of at least 0")
    return value


def _queue_resource(resources: Raw, key: str, obj: str, scale: float, warnings: list[InvalidObject]) -> QueueResource:
    field = f"spec.resources.{key}"
    block = mapping(resources, key, obj, field)
    quota = _queue_amount(block, "quota", obj, field)
    limit = _queue_amount(block, "limit", obj, field)
    weight = number(block, "overQuotaWeight", obj, f"{field}.overQuotaWeight", 0.0)
    if weight < 0:
        warnings.append(
            InvalidObject(
                obj,
                f"{field}.overQuotaWeight",
                f"got {weight:g}; allowed: a number of at least 0 (0: no share above quota). Used as written, as "
                "KAI does: weights are divided by their siblings' sum, so a negative one gives surprising shares",
            )
        )
    return QueueResource(max(names.UNLIMITED, quota * scale), max(names.UNLIMITED, limit * scale), weight)


def parse_queue(raw: Raw) -> Queue:
    """A Queue (scheduling.run.ai/v2). Unset quota/limit/weight are 0 as in KAI: limit 0 allows nothing."""
    meta = Metadata(raw, "Queue", namespaced=False)
    obj = object_ref("Queue", raw)
    spec = mapping(raw, "spec", obj, "spec")
    resources = mapping(spec, "resources", obj, "spec.resources")
    priority = integer(spec, "priority", obj, "spec.priority", names.DEFAULT_QUEUE_PRIORITY)
    parent = string(spec, "parentQueue", obj, "spec.parentQueue")
    warnings: list[InvalidObject] = []
    gpu = _queue_resource(resources, "gpu", obj, 1.0, warnings)
    cpu = _queue_resource(resources, "cpu", obj, 1.0, warnings)
    memory = _queue_resource(resources, "memory", obj, float(names.MEGABYTE), warnings)
    strategy = eviction_strategy(meta.annotations, obj, warnings)
    gating = _flag(meta.annotations, names.QUEUE_ADMISSION_GATING_ANNOTATION, obj, warnings)
    return Queue(
        meta=meta,
        display_name=string(spec, "displayName", obj, "spec.displayName"),
        parent=parent,
        priority=names.DEFAULT_QUEUE_PRIORITY if priority is None else priority,
        gpu=gpu,
        cpu=cpu,
        memory=memory,
        preempt_min_runtime_s=_optional_duration(spec, "preemptMinRuntime", obj),
        reclaim_min_runtime_s=_optional_duration(spec, "reclaimMinRuntime", obj),
        warnings=tuple(warnings),
        eviction_strategy=strategy,
        admission_gating=gating,
    )


def eviction_strategy(annotations: Mapping[str, str], obj: str, warnings: list[InvalidObject]) -> str:
    """The ``kai.scheduler/eviction-strategy`` annotation: ``suspend``, ``delete`` or "" (not set, or a value kai
    cannot use: ignored with a warning, as the annotation is kai's own and the object is otherwise fine)."""
    value = annotations.get(names.EVICTION_STRATEGY_ANNOTATION, "")
    if value in ("", names.SUSPEND, names.DELETE):
        return value
    field = f"metadata.annotations.{names.EVICTION_STRATEGY_ANNOTATION}"
    warnings.append(InvalidObject(obj, field, f"got {value!r}; allowed: {names.SUSPEND}, {names.DELETE}; ignored"))
    return ""


def _flag(annotations: Mapping[str, str], key: str, obj: str, warnings: list[InvalidObject]) -> bool:
    value = annotations.get(key, "false")
    if value.lower() not in ("true", "false"):
        text = f'got {value!r}; allowed: "true", "false"; read as "false"'
        warnings.append(InvalidObject(obj, f"metadata.annotations.{key}", text))
    return value.lower() == "true"


def _optional_duration(spec: Raw, key: str, obj: str) -> float | None:
    text = string(spec, key, obj, f"spec.{key}")
    return parse_duration(text, obj, f"spec.{key}") if text else None


@dataclass(frozen=True, slots=True)
class TopologyConstraint:
    topology: str
    required_level: str
    preferred_level: str


@dataclass(frozen=True, slots=True)
class SubGroupSpec:
    name: str
    min_member: int | None
    parent: str
    topology: TopologyConstraint | None
    min_subgroup: int | None = None


@dataclass(frozen=True, slots=True)
class PodGroup:
    meta: Metadata
    queue: str
    priority_class_name: str
    min_member: int
    preemptibility: str
    subgroups: tuple[SubGroupSpec, ...]
    topology: TopologyConstraint | None
    last_start_ts: float | None
    stale_ts: float | None
    mark_unschedulable: bool
    scheduling_backoff: int
    min_subgroup: int | None = None
    """How many direct child sub-groups make the gang (KAI's elastic gang tree); None: all of them."""
    preemption_delay_s: float | None = None
    stale_grace_s: float | None = None
    """Per-podgroup staleness grace period; None: the scheduler's global default."""
    last_eviction_ts: float | None = None
    owner: "OwnerRef | None" = None
    """Its workload (the pod-grouper makes the top owner the PodGroup's owner): what a suspension suspends."""
    eviction_strategy: str = ""
    """Its ``kai.scheduler/eviction-strategy`` annotation (``suspend``, ``delete``; "": its queue's)."""
    suspended_pods: str = ""
    """kai's ``kai.scheduler/suspended-pods`` record (JSON) while the scheduler keeps its workload suspended."""
    recent_evictions: tuple[tuple[float, int], ...] = ()
    """(time, pods) of the scheduler's evictions of its pods in the minute before the last (its eviction record):
    the per-minute eviction budget counts them, whoever looks (a restarted scheduler, ``kai explain``)."""
    warnings: tuple[InvalidObject, ...] = ()

    @property
    def key(self) -> str:
        return self.meta.key


@dataclass(frozen=True, slots=True)
class OwnerRef:
    api_version: str
    kind: str
    name: str
    uid: str


def _owner(raw: Raw, obj: str) -> OwnerRef | None:
    """The controlling owner reference, else the first one."""
    field = "metadata.ownerReferences"
    refs = [ref for ref in sequence(mapping(raw, "metadata", obj, "metadata"), "ownerReferences", obj, field) if ref]
    controlling = (ref for ref in refs if isinstance(ref, Mapping) and ref.get("controller"))
    chosen = next(controlling, refs[0] if refs else None)
    if not isinstance(chosen, Mapping):
        return None
    return OwnerRef(
        string(chosen, "apiVersion", obj, f"{field}.apiVersion"),
        string(chosen, "kind", obj, f"{field}.kind"),
        string(chosen, "name", obj, f"{field}.name"),
        string(chosen, "uid", obj, f"{field}.uid"),
    )


def _topology_constraint(raw: Raw, key: str, obj: str, field: str) -> TopologyConstraint | None:
    if raw.get(key) is None:
        return None
    block = mapping(raw, key, obj, field)
    return TopologyConstraint(
        topology=string(block, "topology", obj, f"{field}.topology"),
        required_level=string(block, "requiredTopologyLevel", obj, f"{field}.requiredTopologyLevel"),
        preferred_level=string(block, "preferredTopologyLevel", obj, f"{field}.preferredTopologyLevel"),
    )


_PREEMPTIBILITY = ("", "preemptible", "non-preemptible")


def parse_podgroup(raw: Raw) -> PodGroup:
    meta = Metadata(raw, "PodGroup", namespaced=True)
    obj = object_ref("PodGroup", raw)
    spec = mapping(raw, "spec", obj, "spec")
    preemptibility = string(spec, "preemptibility", obj, "spec.preemptibility")
    if preemptibility not in _PREEMPTIBILITY:
        raise InvalidObject(
            obj, "spec.preemptibility", f"got {preemptibility!r}; allowed: preemptible, non-preemptible"
        )
    subgroups: list[SubGroupSpec] = []
    seen: set[str] = set()
    for i, entry in enumerate(sequence(spec, "subGroups", obj, "spec.subGroups")):
        field = f"spec.subGroups[{i}]"
        name = string(entry, "name", obj, f"{field}.name")
        if not name:
            raise InvalidObject(obj, f"{field}.name", "is required and must not be empty")
        if name in seen:
            raise InvalidObject(
                obj, f"{field}.name", f"duplicate sub-group name {name!r}", kai=f"duplicate subgroup name {name}"
            )
        seen.add(name)
        subgroups.append(
            SubGroupSpec(
                name=name,
                min_member=integer(entry, "minMember", obj, f"{field}.minMember"),
                parent=string(entry, "parent", obj, f"{field}.parent"),
                topology=_topology_constraint(entry, "topologyConstraint", obj, f"{field}.topologyConstraint"),
                min_subgroup=integer(entry, "minSubGroup", obj, f"{field}.minSubGroup"),
            )
        )
    for i, sub in enumerate(subgroups):
        if sub.parent and sub.parent.lower() not in {s.name.lower() for s in subgroups}:
            raise InvalidObject(
                obj,
                f"spec.subGroups[{i}].parent",
                f"parent {sub.parent!r} is not a sub-group",
                kai=f"parent {sub.parent} of {sub.name} was not found",
            )
    _check_subgroup_cycles(subgroups, obj)
    annotations = meta.annotations
    warnings: list[InvalidObject] = []
    backoff = integer(spec, "schedulingBackoff", obj, "spec.schedulingBackoff", -1)
    return PodGroup(
        meta=meta,
        queue=string(spec, "queue", obj, "spec.queue"),
        priority_class_name=string(spec, "priorityClassName", obj, "spec.priorityClassName"),
        min_member=integer(spec, "minMember", obj, "spec.minMember", 1) or 0,
        preemptibility=preemptibility,
        subgroups=tuple(subgroups),
        topology=_topology_constraint(spec, "topologyConstraint", obj, "spec.topologyConstraint"),
        last_start_ts=optional_time(annotations, names.LAST_START_ANNOTATION, obj, "metadata.annotations"),
        stale_ts=optional_time(annotations, names.STALE_ANNOTATION, obj, "metadata.annotations"),
        mark_unschedulable=spec.get("markUnschedulable") is not False,
        scheduling_backoff=-1 if backoff is None else backoff,
        min_subgroup=integer(spec, "minSubGroup", obj, "spec.minSubGroup"),
        preemption_delay_s=_optional_duration(spec, "preemptionDelay", obj),
        stale_grace_s=_optional_duration(spec, "stalenessGracePeriod", obj),
        last_eviction_ts=optional_time(annotations, names.LAST_EVICTION_ANNOTATION, obj, "metadata.annotations"),
        owner=_owner(raw, obj),
        eviction_strategy=eviction_strategy(annotations, obj, warnings),
        suspended_pods=annotations.get(names.SUSPENDED_PODS_ANNOTATION, ""),
        recent_evictions=recent_evictions(annotations.get(names.EVICTION_RECORD_ANNOTATION, "")),
        warnings=tuple(warnings),
    )


def recent_evictions(record: str) -> tuple[tuple[float, int], ...]:
    """The ``recent`` evictions of kai's eviction record; () when there is none kai can read (the record is kai's:
    an unreadable one only loses the per-minute budget those evictions)."""
    if not record:
        return ()
    try:
        entries = json.loads(record).get("recent") or []
        return tuple((parse_time(at, "", ""), int(pods)) for at, pods in entries)
    except (ValueError, TypeError, AttributeError):
        return ()


def _check_subgroup_cycles(subgroups: list[SubGroupSpec], obj: str) -> None:
    """A sub-group tree whose parents lead back to a sub-group would hang from no root: its pods could never form
    a gang (KAI's PodGroup webhook refuses it; its scheduler would detach the loop silently)."""
    parents = {sub.name.lower(): sub.parent.lower() for sub in subgroups}
    index = {sub.name.lower(): i for i, sub in enumerate(subgroups)}
    done: set[str] = set()
    for sub in subgroups:
        path: list[str] = []
        name = sub.name.lower()
        while name and name not in done:
            if name in path:
                loop = path[path.index(name) :]
                spelled = [subgroups[index[member]].name for member in [*loop, name]]
                field = f"spec.subGroups[{index[name]}].parent"
                raise InvalidObject(
                    obj, field, f"sub-group cycle {' → '.join(spelled)}", kai="cycle detected in subgroups"
                )
            path.append(name)
            name = parents.get(name, "")
        done.update(path)


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool
    preemption_policy: str = "PreemptLowerPriority"
    """``Never``: its pods wait for free room and never make others be evicted (Kubernetes' non-preempting class)."""


def parse_priority_class(raw: Raw) -> PriorityClass:
    meta = Metadata(raw, "PriorityClass", namespaced=False)
    obj = object_ref("PriorityClass", raw)
    value = integer(raw, "value", obj, "value")
    if value is None:
        raise InvalidObject(obj, "value", "is required (an integer priority)")
    policy = string(raw, "preemptionPolicy", obj, "preemptionPolicy", "PreemptLowerPriority")
    if policy not in ("PreemptLowerPriority", names.PREEMPTION_POLICY_NEVER):
        raise InvalidObject(obj, "preemptionPolicy", f"got {policy!r}; allowed: PreemptLowerPriority, Never")
    return PriorityClass(meta.name, value, raw.get("globalDefault") is True, policy)


@dataclass(frozen=True, slots=True)
class BindRequest:
    meta: Metadata
    pod_name: str
    selected_node: str
    received_resource_type: str
    gpu_groups: tuple[str, ...]
    phase: str
    backoff_limit: int
    failed_attempts: int
    predicted_numa_zones: NumaPlacement | None = None
    """The NUMA zones the scheduler predicted for the pod (``spec.predictedNUMAZones``)."""

    @property
    def pod_key(self) -> str:
        return f"{self.meta.namespace}/{self.pod_name}"

    @property
    def failed(self) -> bool:
        """KAI treats a Failed request whose retries are used up as gone: the pod is pending again."""
        return self.phase == "Failed" and self.failed_attempts >= self.backoff_limit


def parse_bind_request(raw: Raw) -> BindRequest:
    meta = Metadata(raw, "BindRequest", namespaced=True)
    obj = object_ref("BindRequest", raw)
    spec = mapping(raw, "spec", obj, "spec")
    status = mapping(raw, "status", obj, "status")
    groups = sequence(spec, "selectedGPUGroups", obj, "spec.selectedGPUGroups")
    zones = spec.get("predictedNUMAZones")
    return BindRequest(
        meta=meta,
        pod_name=string(spec, "podName", obj, "spec.podName"),
        selected_node=string(spec, "selectedNode", obj, "spec.selectedNode"),
        received_resource_type=string(spec, "receivedResourceType", obj, "spec.receivedResourceType"),
        gpu_groups=tuple(str(g) for g in groups),
        phase=string(status, "phase", obj, "status.phase", "Pending"),
        backoff_limit=integer(spec, "backoffLimit", obj, "spec.backoffLimit", 0) or 0,
        failed_attempts=integer(status, "failedAttempts", obj, "status.failedAttempts", 0) or 0,
        predicted_numa_zones=parse_placement(zones, obj, "spec.predictedNUMAZones") if zones else None,
    )


@dataclass(frozen=True, slots=True)
class Topology:
    name: str
    levels: tuple[str, ...]
    aliases: tuple[tuple[str, str], ...] = ()
    """(alias, node label) of the levels that have one (KAI v0.17): a constraint may name a level by either."""


def with_level_labels(podgroup: PodGroup, topologies: Mapping[str, Topology]) -> PodGroup:
    """``podgroup`` with every topology constraint's levels named by node label (KAI's ResolveTopologyAliases, done
    once as jobs are built, so the plugins and the victim filters read labels only); a level that is no alias of its
    topology is kept as it is."""

    def resolved(constraint: TopologyConstraint | None) -> TopologyConstraint | None:
        topology = topologies.get(constraint.topology) if constraint is not None else None
        if constraint is None or topology is None or not topology.aliases:
            return constraint
        labels = dict(topology.aliases)
        required = labels.get(constraint.required_level, constraint.required_level)
        preferred = labels.get(constraint.preferred_level, constraint.preferred_level)
        if (required, preferred) == (constraint.required_level, constraint.preferred_level):
            return constraint
        return replace(constraint, required_level=required, preferred_level=preferred)

    topology = resolved(podgroup.topology)
    subgroups = tuple(replace(sub, topology=resolved(sub.topology)) for sub in podgroup.subgroups)
    same = all(new.topology is old.topology for new, old in zip(subgroups, podgroup.subgroups, strict=True))
    if topology is podgroup.topology and same:
        return podgroup
    return replace(podgroup, topology=topology, subgroups=subgroups)


def parse_topology(raw: Raw) -> Topology:
    meta = Metadata(raw, "Topology", namespaced=False)
    obj = object_ref("Topology", raw)
    spec = mapping(raw, "spec", obj, "spec")
    levels, aliases = [], []
    for i, level in enumerate(sequence(spec, "levels", obj, "spec.levels")):
        label = string(level, "nodeLabel", obj, f"spec.levels[{i}].nodeLabel")
        if not label:
            raise InvalidObject(obj, f"spec.levels[{i}].nodeLabel", "is required")
        levels.append(label)
        alias = string(level, "alias", obj, f"spec.levels[{i}].alias")
        if alias:
            aliases.append((alias, label))
    return Topology(meta.name, tuple(levels), tuple(aliases))
