"""The Queue validating webhook (``/validate-scheduling-run-ai-v2-queue``; KAI's queue-controller serves it from
``pkg/admission/webhook/queuehooks``).

Refused, each naming the field: no ``spec.resources`` (KAI's one rule); what kai's scheduler cannot use (the core's
queue parser: a quota or limit below 0 other than -1, …); a limit below the quota where both are given; a parent
that does not exist, a parent cycle, or an unusable ancestor (the core's queue-tree check, on the queue's ancestry).
Warned: a negative over-quota weight; with ``--enable-quota-validation`` (KAI v0.14's opt-in check), child quotas
above their parent's quota, one by one and added up (-1 counts as unlimited, which KAI's check forgets).
"""

from collections.abc import Collection, Mapping

from kai.components.admission.review import Decision, Request, allow, as_stored, deny
from kai.components.admission.settings import AdmissionSettings
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Raw, object_ref
from kai.core.model.objects import Queue, QueueResource, parse_queue
from kai.core.state.queue_tree import queue_tree_problems

RESOURCES = ("gpu", "cpu", "memory")
CRD_UNIT = {"gpu": 1.0, "cpu": 1.0, "memory": float(names.MEGABYTE)}
"""Scheduler units per Queue-CRD unit: GPUs, millicores, MB."""
RESOURCES_REQUIRED = "is required: gpu, cpu and memory, each with quota, limit and overQuotaWeight (-1: unlimited)"


def validate_queue(
    request: Request, queues: Mapping[str, Queue], invalid: Collection[str], settings: AdmissionSettings
) -> Decision:
    """``queues``: the cluster's usable-to-parse queues by name (the one under review as it was, if it exists);
    ``invalid``: names of queues that do not parse."""
    raw = as_stored(request)
    obj = object_ref("Queue", raw)
    spec = raw.get("spec")
    if not isinstance(spec, Mapping) or spec.get("resources") is None:
        return deny(InvalidObject(obj, "spec.resources", RESOURCES_REQUIRED))
    try:
        queue = parse_queue(raw)
    except InvalidObject as problem:
        return deny(problem)
    below = _limits_below_quotas(spec["resources"], obj)
    if below:
        return deny("; ".join(str(p) for p in below))
    known = {**queues, queue.name: queue}
    tree = queue_tree_problems(_ancestry(queue.name, known), invalid)
    if queue.name in tree:
        return deny(tree[queue.name])
    warnings = [str(w) for w in queue.warnings]
    if settings.quota_validation:
        warnings += quota_warnings(queue, known)
    return allow(*warnings)


def _limits_below_quotas(resources: Raw, obj: str) -> list[InvalidObject]:
    problems = []
    for name in RESOURCES:
        block = resources.get(name)
        if not isinstance(block, Mapping) or "quota" not in block or "limit" not in block:
            continue
        quota, limit = float(block["quota"]), float(block["limit"])
        if 0 <= limit < quota:
            problems.append(
                InvalidObject(
                    obj,
                    f"spec.resources.{name}.limit",
                    f"got {limit:g}, below the quota {quota:g}; allowed: -1 (unlimited) or at least the quota",
                )
            )
    return problems


def _ancestry(name: str, queues: Mapping[str, Queue]) -> dict[str, Queue]:
    """The queue and its ancestors, as far as they go: all the tree check needs for this one queue."""
    chain: dict[str, Queue] = {}
    while name in queues and name not in chain:
        chain[name] = queues[name]
        name = queues[name].parent
    return chain


def quota_warnings(queue: Queue, queues: Mapping[str, Queue]) -> list[str]:
    """Child quotas above their parent's: the queue's against its parent's, and its children's against its own."""
    warnings = []
    parent = queues.get(queue.parent) if queue.parent else None
    if parent is not None:
        siblings = [q for q in queues.values() if q.parent == parent.name]
        for resource in RESOURCES:
            mine = _resource(queue, resource).quota
            allowed = _resource(parent, resource).quota
            if allowed != names.UNLIMITED and (mine == names.UNLIMITED or mine > allowed):
                warnings.append(
                    f"queue {queue.name}: {resource} quota {_crd(resource, mine)} exceeds parent queue "
                    f"{parent.name}'s {resource} quota {_crd(resource, allowed)}"
                )
        warnings += _children_sum(parent, siblings)
    children = [q for q in queues.values() if q.parent == queue.name]
    return warnings + (_children_sum(queue, children) if children else [])


def _children_sum(parent: Queue, children: list[Queue]) -> list[str]:
    warnings = []
    for resource in RESOURCES:
        allowed = _resource(parent, resource).quota
        quotas = [_resource(child, resource).quota for child in children]
        if allowed == names.UNLIMITED or names.UNLIMITED in quotas:
            continue
        if sum(quotas) > allowed:
            warnings.append(
                f"children of queue {parent.name}: {resource} quotas add up to {_crd(resource, sum(quotas))}, above "
                f"its {resource} quota {_crd(resource, allowed)}"
            )
    return warnings


def _resource(queue: Queue, name: str) -> QueueResource:
    resource: QueueResource = getattr(queue, name)
    return resource


def _crd(resource: str, value: float) -> str:
    return "-1 (unlimited)" if value == names.UNLIMITED else f"{value / CRD_UNIT[resource]:g}"
