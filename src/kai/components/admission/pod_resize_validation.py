"""The pods/resize validating webhook (``/validate--v1-pod-resize``; KAI #2021): an in-place resize that grows a kai
pod's requests is refused when it would take a queue on its PodGroup's path over its limit, or, for a
non-preemptible pod, over its quota.

The growth is counted per resource at the pod's level, against what the scheduler already charges the queues for
the pod (the effective request: the old spec, raised to what the kubelet reports in the containers' status; an
``Infeasible`` resize's spec is not charged), and only for resources the resize changes; moving cpu between
containers grows nothing. The queues' ``status.allocated`` / ``allocatedNonPreemptible`` are the usage. This is
best effort, as KAI's: two resizes at once, or a resize and a scheduling cycle, can both take the same room;
``--block-upsize-on-bounded-queues`` refuses any growth on a queue with a limit (any pod) or a quota
(non-preemptible pods) instead. An object that cannot be read (no PodGroup, a queue gone) admits the resize, as
KAI's does, so the webhook never blocks a resize for its own sake (its ``failurePolicy`` is ``Ignore`` too).
"""

from collections.abc import Callable, Mapping
from typing import Any

from kai.components.admission.review import Decision, Request, allow, deny
from kai.components.admission.settings import AdmissionSettings
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.objects import Queue, parse_queue
from kai.core.model.quantity import resource_amount

Lookup = Callable[[str, str], Mapping[str, Any] | None]
"""An object by kind and key (``namespace/name``, or ``name``), None when it cannot be read."""
Amounts = dict[str, float]


def validate_pod_resize(request: Request, settings: AdmissionSettings, lookup: Lookup) -> Decision:
    new, old = request.object, request.old_object
    if (new.get("spec") or {}).get("schedulerName") != settings.scheduler_name or not settings.resize_quota_validation:
        return allow()
    meta = old.get("metadata") or {}
    namespace, pod_name = str(meta.get("namespace") or request.namespace), str(meta.get("name") or request.name)
    podgroup_name = str((meta.get("annotations") or {}).get(names.POD_GROUP_ANNOTATION) or "")
    podgroup = lookup("PodGroup", f"{namespace}/{podgroup_name}") if podgroup_name else None
    if podgroup is None:
        return allow()
    try:
        delta = resize_delta(old, new, f"Pod {namespace}/{pod_name}")
    except InvalidObject as unreadable:  # the pod validation webhook and the API server answer for the spec itself
        return allow(str(unreadable))
    if not delta:
        return allow()
    preemptible = _preemptible(podgroup, lookup)
    who = f"pod {namespace}/{pod_name} (PodGroup {podgroup_name})"
    queue_name = str((podgroup.get("spec") or {}).get("queue") or "")
    seen: set[str] = set()
    while queue_name and queue_name not in seen:
        seen.add(queue_name)
        raw = lookup("Queue", queue_name)
        if raw is None:
            return allow()
        refusal = _check_queue(raw, delta, preemptible, settings.block_upsize_on_bounded_queues, who)
        if refusal:
            return deny(refusal)
        queue_name = str((raw.get("spec") or {}).get("parentQueue") or "")
    return allow()


def resize_delta(old: Mapping[str, Any], new: Mapping[str, Any], obj: str) -> Amounts:
    """Per resource the resize changes, how much the new spec asks for above what is charged for the pod now."""
    infeasible = _infeasible(old)
    old_spec = old.get("spec") or {}
    old_status = old.get("status") or {}
    asked, before, charged = Amounts(), Amounts(), Amounts()
    for key, status_key in (("containers", "containerStatuses"), ("initContainers", "initContainerStatuses")):
        old_containers = {c.get("name"): c for c in old_spec.get(key) or []}
        reported = {s.get("name"): s for s in old_status.get(status_key) or []}
        for i, container in enumerate((new.get("spec") or {}).get(key) or []):
            if key == "initContainers" and container.get("restartPolicy") != "Always":
                continue  # an init container that ends before the apps start is not resized in place
            name = container.get("name")
            old_requests = _requests(old_containers.get(name) or {}, obj, f"spec.{key}[{i}]")
            status = reported.get(name)
            for resource, amount in _requests(container, obj, f"spec.{key}[{i}]").items():
                asked[resource] = asked.get(resource, 0.0) + amount
                was = old_requests.get(resource, 0.0)
                before[resource] = before.get(resource, 0.0) + was
                charged[resource] = charged.get(resource, 0.0) + _charged(resource, was, status, infeasible, obj)
    return {
        resource: amount - charged.get(resource, 0.0)
        for resource, amount in asked.items()
        if amount != before.get(resource) and amount - charged.get(resource, 0.0) > 0
    }


def _requests(container: Mapping[str, Any], obj: str, field: str) -> Amounts:
    requests = (container.get("resources") or {}).get("requests") or {}
    return {str(k): resource_amount(str(k), v, obj, f"{field}.resources.requests.{k}") for k, v in requests.items()}


def _charged(resource: str, spec: float, status: Mapping[str, Any] | None, infeasible: bool, obj: str) -> float:
    """What the scheduler charges a container for ``resource``: its spec, raised to the status' sizes (an
    ``Infeasible`` spec left out); the spec when the kubelet reports nothing."""
    if status is None:
        return spec
    found = [] if infeasible else [spec]
    for where, values in (
        ("resources.requests", ((status.get("resources") or {}).get("requests") or {})),
        ("allocatedResources", status.get("allocatedResources") or {}),
    ):
        if resource in values:
            found.append(resource_amount(resource, values[resource], obj, f"status.containerStatuses[].{where}"))
    return max(found) if found else spec


def _infeasible(pod: Mapping[str, Any]) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodResizePending":
            return bool(condition.get("status") == "True" and condition.get("reason") == "Infeasible")
    return False


def _preemptible(podgroup: Mapping[str, Any], lookup: Lookup) -> bool:
    """The PodGroup's ``preemptibility``, else by its priority class (below 100); unknown counts as preemptible."""
    spec = podgroup.get("spec") or {}
    if spec.get("preemptibility") in ("preemptible", "non-preemptible"):
        return bool(spec["preemptibility"] == "preemptible")
    class_name = str(spec.get("priorityClassName") or "")
    if not class_name:
        return True
    priority_class = lookup("PriorityClass", class_name)
    if priority_class is None:
        return True
    return int(priority_class.get("value") or 0) < names.PREEMPTIBLE_BELOW_PRIORITY


def _check_queue(raw: Mapping[str, Any], delta: Amounts, preemptible: bool, block: bool, who: str) -> str:
    """KAI's refusal for this queue, "" when it admits the growth."""
    if not (raw.get("spec") or {}).get("resources"):
        return ""
    try:
        queue = parse_queue(raw)
    except InvalidObject:
        return ""
    status = raw.get("status") or {}
    cpu, memory = delta.get(names.CPU), delta.get(names.MEMORY)
    if block:
        found = _blocked(queue, cpu, memory, preemptible, who)
        if found:
            return found
    allocated = _status_amounts(status.get("allocated"))
    found = _over(queue, "limit", allocated, cpu, memory, who, "", "Allocated")
    if found or preemptible:
        return found
    reserved = _status_amounts(status.get("allocatedNonPreemptible"))
    return _over(queue, "quota", reserved, cpu, memory, who, "non-preemptible ", "AllocatedNonPreemptible")


def _blocked(queue: Queue, cpu: float | None, memory: float | None, preemptible: bool, who: str) -> str:
    name = queue.name
    if cpu is not None:
        if queue.cpu.limit >= 0:
            return (
                f"resize rejected: {who} CPU upsize not permitted on queue {name} with finite CPU limit "
                f"({queue.cpu.limit:.0f}m)"
            )
        if not preemptible and queue.cpu.quota >= 0:
            return (
                f"resize rejected: {who} non-preemptible CPU upsize not permitted on queue {name} with finite CPU "
                f"quota ({queue.cpu.quota:.0f}m)"
            )
    if memory is not None:
        if queue.memory.limit >= 0:
            return (
                f"resize rejected: {who} memory upsize not permitted on queue {name} with finite memory limit "
                f"({int(queue.memory.limit)} bytes)"
            )
        if not preemptible and queue.memory.quota >= 0:
            return (
                f"resize rejected: {who} non-preemptible memory upsize not permitted on queue {name} with finite "
                f"memory quota ({int(queue.memory.quota)} bytes)"
            )
    return ""


def _over(
    queue: Queue, bound: str, used: Amounts, cpu: float | None, memory: float | None, who: str, kind: str, field: str
) -> str:
    name = queue.name
    cpu_bound, memory_bound = getattr(queue.cpu, bound), getattr(queue.memory, bound)
    if cpu is not None and cpu_bound >= 0 and used.get(names.CPU, 0.0) + cpu > cpu_bound:
        return (
            f"resize rejected: {who} {kind}CPU upsize would push queue {name} {field} "
            f"({used.get(names.CPU, 0.0):.0f}m + {cpu:.0f}m) over {bound} ({cpu_bound:.0f}m)"
        )
    if memory is not None and memory_bound >= 0 and used.get(names.MEMORY, 0.0) + memory > memory_bound:
        return (
            f"resize rejected: {who} {kind}memory upsize would push queue {name} {field} "
            f"({int(used.get(names.MEMORY, 0.0))} + {int(memory)} bytes) over {bound} ({int(memory_bound)} bytes)"
        )
    return ""


def _status_amounts(values: object) -> Amounts:
    if not isinstance(values, Mapping):
        return {}
    found: Amounts = {}
    for name, value in values.items():
        try:
            found[str(name)] = resource_amount(str(name), value, "Queue", f"status.{name}")
        except InvalidObject:
            continue
    return found
