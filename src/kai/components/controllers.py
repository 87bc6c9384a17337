"""Status controllers: PodGroup ``status.resourcesStatus`` and Queue ``status`` (KAI's podgroup- and
queue-controller, kai-reference.md §1.5–1.6), plus the queue metrics the queue-controller exports.

Both reconcile everything on each pass from the cluster's cached objects and write a status only when it changed,
so repeated passes are cheap and idempotent. An object they cannot read is skipped and logged once, not every pass;
the scheduler reports it on the object (``kai.components.scheduler.invalid``). Like KAI's, these controllers record
no events.
"""

import logging
from collections import defaultdict
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from kai.cluster.port import ClusterClient, Raw, merge_patch
from kai.components.parallel import Writes
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.objects import PodGroup, parse_pod, parse_podgroup, parse_priority_class, parse_queue
from kai.core.model.quantity import resource_amount
from kai.core.model.resources import GpuRequestKind

log = logging.getLogger(__name__)
Totals = dict[str, float]
GPU_MEMORY_RESOURCE = "run.ai/gpu.memory"
MAX_DEFERRED_PASSES = 3
"""A PodGroup status that changes every pass is written at least every this many passes."""


class SkipLog:
    """Logs the problem of each skipped object once, and again only after a pass in which it was gone."""

    def __init__(self) -> None:
        self._logged: set[str] = set()
        self._seen: set[str] = set()

    def skip(self, error: InvalidObject) -> None:
        message = str(error)
        self._seen.add(message)
        if message not in self._logged:
            log.warning("skipping %s", message)

    def end_pass(self) -> None:
        self._logged, self._seen = self._seen, set()


def quantity(name: str, amount: float) -> str:
    """A Kubernetes quantity string for an amount in scheduler units (millicores for cpu)."""
    if name == names.CPU:
        return str(int(amount // 1000)) if amount % 1000 == 0 else f"{round(amount)}m"
    if float(amount).is_integer():
        return str(int(amount))
    return f"{round(amount * 1000)}m"


def resource_list(totals: Totals) -> dict[str, str]:
    return {name: quantity(name, amount) for name, amount in sorted(totals.items()) if amount}


def _add(into: Totals, other: Totals) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0.0) + amount


def _pod_totals(pod: Raw, nodes: dict[str, Raw], allocated: bool) -> Totals:
    parsed = parse_pod(pod)
    request = parsed.request
    totals: Totals = {k: v for k, v in request.amounts.items() if k != names.PODS}
    if request.gpu_kind is GpuRequestKind.REGULAR or (request.gpu_kind is GpuRequestKind.FRACTION and not allocated):
        totals[names.GPU] = request.gpus
    elif request.gpu_kind is GpuRequestKind.MEMORY and not allocated:
        totals[GPU_MEMORY_RESOURCE] = float(request.gpu_memory_mib * request.gpu_devices)
    if allocated and request.is_shared_gpu and parsed.received_resource_type == "Fraction":
        if request.gpu_kind is GpuRequestKind.FRACTION:
            totals[names.GPU] = request.gpus
        else:
            node = nodes.get(parsed.node_name)
            memory = int(
                ((node or {}).get("metadata", {}).get("labels") or {}).get(names.GPU_MEMORY_NODE_LABEL, "0") or 0
            )
            if memory:
                totals[names.GPU] = request.gpu_devices * request.gpu_memory_mib / memory
    return totals


class PodGroupStatusController:
    """``settle``: a changed status is written once it has held for a pass, or after ``MAX_DEFERRED_PASSES`` passes
    if it keeps changing, so a pod placed within a pass of being grouped costs its PodGroup one status write (its
    pods allocated), not two (requested, then allocated); docs/deviations.md has it."""

    def __init__(self, cluster: ClusterClient, writes: Writes | None = None, *, settle: bool = False) -> None:
        self.cluster = cluster
        self.writes = writes or Writes()
        self.skipped = SkipLog()
        self.settle = settle
        self._deferred: dict[str, tuple[Raw, int]] = {}
        """Per podgroup key: the status wanted by the last pass and not written, and how many passes it waited."""

    def compute(self) -> dict[str, dict[str, Totals]]:
        """Per podgroup key: requested, allocated and allocatedNonPreemptible totals."""
        nodes = {n["metadata"]["name"]: n for n in self.cluster.list("Node")}
        classes = {}
        for raw in self.cluster.list("PriorityClass"):
            try:
                pc = parse_priority_class(raw)
                classes[pc.name] = pc.value
            except InvalidObject:
                continue
        podgroups: dict[str, PodGroup] = {}
        for raw in self.cluster.list("PodGroup"):
            try:
                podgroup = parse_podgroup(raw)
            except InvalidObject as error:
                self.skipped.skip(error)
                continue
            podgroups[podgroup.key] = podgroup
        result: dict[str, dict[str, Totals]] = {
            key: {"requested": {}, "allocated": {}, "allocatedNonPreemptible": {}} for key in podgroups
        }
        for pod in self.cluster.list("Pod"):
            meta = pod["metadata"]
            group = (meta.get("annotations") or {}).get(names.POD_GROUP_ANNOTATION)
            key = f"{meta.get('namespace')}/{group}"
            if not group or key not in result:
                continue
            phase = (pod.get("status") or {}).get("phase", "Pending")
            try:
                if phase in ("Pending", "Running"):
                    _add(result[key]["requested"], _pod_totals(pod, nodes, allocated=False))
                bound = phase == "Running" or (phase == "Pending" and (pod.get("spec") or {}).get("nodeName"))
                if bound:
                    allocated = _pod_totals(pod, nodes, allocated=True)
                    _add(result[key]["allocated"], allocated)
                    podgroup = podgroups[key]
                    priority = classes.get(podgroup.priority_class_name, names.DEFAULT_PRIORITY)
                    preemptible = (
                        podgroup.preemptibility == "preemptible"
                        if podgroup.preemptibility
                        else priority < names.PREEMPTIBLE_BELOW_PRIORITY
                    )
                    if not preemptible:
                        _add(result[key]["allocatedNonPreemptible"], allocated)
            except InvalidObject as error:
                self.skipped.skip(error)
        self.skipped.end_pass()
        return result

    def reconcile(self) -> dict[str, dict[str, Totals]]:
        computed = self.compute()
        changed: list[tuple[str, Raw]] = []
        deferred, self._deferred = self._deferred, {}
        for key, totals in computed.items():
            podgroup = self.cluster.get("PodGroup", key)
            if podgroup is None:
                continue
            wanted = {name: resource_list(values) for name, values in totals.items()}
            current = (podgroup.get("status") or {}).get("resourcesStatus")
            if current == wanted:
                continue
            last, waited = deferred.get(key, (None, 0))
            if self.settle and last != wanted and waited < MAX_DEFERRED_PASSES:
                self._deferred[key] = (wanted, waited + 1)
                continue
            before = current if isinstance(current, dict) else {}
            changed.append((key, {"resourcesStatus": merge_patch(before, wanted)}))
        self.writes.each("podgroup status", changed, lambda item: self.cluster.patch_status("PodGroup", *item))
        return computed


class QueueStatusController:
    def __init__(
        self,
        cluster: ClusterClient,
        registry: CollectorRegistry | None = None,
        namespace: str = "kai",
        writes: Writes | None = None,
    ) -> None:
        self.cluster = cluster
        self.writes = writes or Writes()
        self.podgroups = PodGroupStatusController(cluster, self.writes)
        self.skipped = SkipLog()
        self.gauges: dict[str, Gauge] = {}
        if registry is not None:
            for name, doc in (
                ("queue_info", "Queue exists"),
                ("queue_deserved_gpus", "GPU quota"),
                ("queue_quota_cpu_cores", "CPU quota in cores"),
                ("queue_quota_memory_bytes", "Memory quota in bytes"),
                ("queue_allocated_gpus", "Allocated GPUs"),
                ("queue_allocated_cpu_cores", "Allocated CPU cores"),
                ("queue_allocated_memory_bytes", "Allocated memory in bytes"),
            ):
                self.gauges[name] = Gauge(name, doc, ("queue_name",), namespace=namespace, registry=registry)

    def reconcile(self, podgroup_totals: dict[str, dict[str, Totals]] | None = None) -> None:
        totals = podgroup_totals if podgroup_totals is not None else self.podgroups.compute()
        queues: dict[str, Raw] = {}
        parents: dict[str, str] = {}
        for raw in self.cluster.list("Queue"):
            try:
                queue = parse_queue(raw)
            except InvalidObject as error:
                self.skipped.skip(error)
                continue
            queues[queue.name] = raw
            parents[queue.name] = queue.parent
        children: dict[str, list[str]] = defaultdict(list)
        for name, parent in parents.items():
            if parent:
                children[parent].append(name)
        own: dict[str, dict[str, Totals]] = defaultdict(
            lambda: {"requested": {}, "allocated": {}, "allocatedNonPreemptible": {}}
        )
        for raw in self.cluster.list("PodGroup"):
            key = f"{raw['metadata'].get('namespace')}/{raw['metadata']['name']}"
            queue_name = (raw.get("spec") or {}).get("queue", "")
            for field, values in totals.get(key, {}).items():
                _add(own[queue_name][field], values)

        def subtree(name: str, seen: frozenset[str] = frozenset()) -> dict[str, Totals]:
            result = {field: dict(values) for field, values in own[name].items()}
            for child in children.get(name, []):
                if child not in seen:
                    for field, values in subtree(child, seen | {name}).items():
                        _add(result[field], values)
            return result

        changed: list[tuple[str, Raw]] = []
        for name, raw in queues.items():
            sums = subtree(name)
            wanted: dict[str, Any] = {field: resource_list(values) for field, values in sums.items()}
            wanted["childQueues"] = sorted(children.get(name, []))
            status: dict[str, Any] = raw.get("status") or {}
            owned = {field: status[field] for field in wanted if field in status}
            if owned != wanted:
                changed.append((name, merge_patch(owned, wanted)))
            self._export(name, raw, sums["allocated"])
        self.skipped.end_pass()
        self.writes.each("queue status", changed, lambda item: self.cluster.patch_status("Queue", *item))

    def _export(self, name: str, raw: Raw, allocated: Totals) -> None:
        if not self.gauges:
            return
        resources = (raw.get("spec") or {}).get("resources") or {}
        quota = {key: float((resources.get(key) or {}).get("quota", 0)) for key in ("gpu", "cpu", "memory")}
        self.gauges["queue_info"].labels(name).set(1)
        self.gauges["queue_deserved_gpus"].labels(name).set(quota["gpu"])
        self.gauges["queue_quota_cpu_cores"].labels(name).set(
            quota["cpu"] if quota["cpu"] == -1 else quota["cpu"] / 1000
        )
        memory = quota["memory"] if quota["memory"] == -1 else quota["memory"] * names.MEGABYTE
        self.gauges["queue_quota_memory_bytes"].labels(name).set(memory)
        self.gauges["queue_allocated_gpus"].labels(name).set(round(allocated.get(names.GPU, 0.0), 4))
        self.gauges["queue_allocated_cpu_cores"].labels(name).set(round(allocated.get(names.CPU, 0.0) / 1000, 4))
        self.gauges["queue_allocated_memory_bytes"].labels(name).set(round(allocated.get(names.MEMORY, 0.0), 4))


def totals_from_status(cluster: ClusterClient) -> dict[str, dict[str, Totals]]:
    """Per PodGroup key, the totals its ``status.resourcesStatus`` holds: what the queue-controller sums when it runs
    apart from the podgroup-controller (KAI's reads PodGroups only, not pods)."""
    result: dict[str, dict[str, Totals]] = {}
    for raw in cluster.list("PodGroup"):
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        statuses = ((raw.get("status") or {}).get("resourcesStatus")) or {}
        try:
            result[key] = {
                field: {
                    name: resource_amount(name, value, key, f"status.resourcesStatus.{field}.{name}")
                    for name, value in (statuses.get(field) or {}).items()
                }
                for field in ("requested", "allocated", "allocatedNonPreemptible")
            }
        except InvalidObject as error:
            log.warning("skipping %s", error)
    return result


def default_queue(name: str, parent: str) -> Raw:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {"resources": {"gpu": dict(unlimited), "cpu": dict(unlimited), "memory": dict(unlimited)}}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def ensure_default_queues(cluster: ClusterClient) -> None:
    """KAI's install creates default-parent-queue → default-queue; pods without a queue land there."""
    for name, parent in (("default-parent-queue", ""), ("default-queue", "default-parent-queue")):
        if cluster.get("Queue", name) is None:
            cluster.create("Queue", default_queue(name, parent))
