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
from kai.core.model.objects import parse_queue
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
    phases = [("limit", "", "Allocated", _status_amounts(status.get("allocated")))]
    if not preemptible:
        reserved = _status_amounts(status.get("allocatedNonPreemptible"))
        phases.append(("quota", "non-preemptible ", "AllocatedNonPreemptible", reserved))
    resources = [r for r in (names.CPU, names.MEMORY) if r in delta]
    # KAI's order: blocking looks at each resource's limit then quota; otherwise every limit, then every quota
    order = [(r, p) for r in resources for p in phases] if block else [(r, p) for p in phases for r in resources]
    for resource, (bound, kind, field, used) in order:
        label = "CPU" if resource == names.CPU else "memory"
        value = getattr(queue.cpu if resource == names.CPU else queue.memory, bound)
        if value < 0:
            continue
        if block:
            return (
                f"resize rejected: {who} {kind}{label} upsize not permitted on queue {queue.name} with finite "
                f"{label} {bound} ({_shown(resource, value)})"
            )
        now, growth = used.get(resource, 0.0), delta[resource]
        if now + growth > value:
            return (
                f"resize rejected: {who} {kind}{label} upsize would push queue {queue.name} {field} "
                f"({_sum(resource, now, growth)}) over {bound} ({_shown(resource, value)})"
            )
    return ""


def _shown(resource: str, amount: float) -> str:
    return f"{amount:.0f}m" if resource == names.CPU else f"{int(amount)} bytes"


def _sum(resource: str, now: float, growth: float) -> str:
    return f"{now:.0f}m + {growth:.0f}m" if resource == names.CPU else f"{int(now)} + {int(growth)} bytes"


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
