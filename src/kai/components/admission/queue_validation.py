"""The Queue validating webhook (``/validate-scheduling-run-ai-v2-queue``; KAI's queue-controller serves it from
``pkg/admission/webhook/queuehooks``).

As permissive as KAI's: refused only without ``spec.resources`` (KAI's one rule), and with
``--enable-quota-validation`` (KAI's opt-in) a child whose parent does not exist or has no resources. Everything
else kai knows about is a warning, in KAI's words where KAI has some: what kai's scheduler cannot use (a quota or
limit below 0 other than -1, a limit below the quota, a parent that does not exist yet, a parent cycle, an unusable
ancestor), refused only with kai's ``--strict-validation``; a negative over-quota weight; and with quota
validation, child quotas above their parent's (-1 counts as unlimited, which KAI's check forgets). A queue applied
before its parent is thus stored, and becomes usable when the parent appears (objects applied in any order converge).
"""

from collections.abc import Collection, Mapping

from kai.components.admission.review import Decision, Request, allow, as_stored, deny, unusable
from kai.components.admission.settings import AdmissionSettings
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Raw, object_ref
from kai.core.model.objects import Queue, QueueResource, parse_queue
from kai.core.state.queue_tree import PARENT_FIELD, queue_tree_problems

RESOURCES = ("gpu", "cpu", "memory")
CRD_UNIT = {"gpu": 1.0, "cpu": 1.0, "memory": float(names.MEGABYTE)}
"""Scheduler units per Queue-CRD unit: GPUs, millicores, MB."""
KAI_NAME = {"gpu": "GPU", "cpu": "CPU", "memory": "Memory"}
KAI_FORMAT = {"gpu": "{:.2f}", "cpu": "{:.0f}", "memory": "{:.0f}"}
"""How KAI's quota warnings print each resource's CRD value."""
RESOURCES_REQUIRED = "is required: gpu, cpu and memory, each with quota, limit and overQuotaWeight (-1: unlimited)"
MISSING_RESOURCES = "resources must be specified"


def validate_queue(
    request: Request, queues: Mapping[str, Queue], invalid: Collection[str], settings: AdmissionSettings
) -> Decision:
    """``queues``: the cluster's usable-to-parse queues by name (the one under review as it was, if it exists);
    ``invalid``: names of queues that do not parse."""
    raw = as_stored(request)
    obj = object_ref("Queue", raw)
    spec = raw.get("spec")
    if not isinstance(spec, Mapping) or spec.get("resources") is None:
        problem = InvalidObject(obj, "spec.resources", RESOURCES_REQUIRED, kai=MISSING_RESOURCES)
        return deny(problem, MISSING_RESOURCES)  # KAI also sends its text as a warning
    try:
        queue = parse_queue(raw)
    except InvalidObject as problem:
        return unusable([problem], settings.strict)
    known = {**queues, queue.name: queue}
    if settings.quota_validation and queue.parent:
        parent = known.get(queue.parent)
        if parent is None or queue.parent in invalid:
            return deny(_unreadable_parent(queue, obj, known, invalid))
    problems: list[InvalidObject | str] = list(_limits_below_quotas(spec["resources"], obj))
    tree = queue_tree_problems(_ancestry(queue.name, known), invalid)
    if queue.name in tree:
        problems.append(tree[queue.name])
    warnings = [str(w) for w in queue.warnings]
    if settings.quota_validation:
        warnings += quota_warnings(queue, known, request.operation == "UPDATE")
    return unusable(problems, settings.strict, *warnings) if problems else allow(*warnings)


def _unreadable_parent(queue: Queue, obj: str, known: Mapping[str, Queue], invalid: Collection[str]) -> InvalidObject:
    """KAI's quota validation reads the parent and refuses the child when it cannot."""
    if queue.parent in invalid:
        kai = f"parent queue {queue.parent} has no resources defined"
        return InvalidObject(
            obj, PARENT_FIELD, f"parent queue '{queue.parent}' is invalid (see its own error)", kai=kai
        )
    kai = f'failed to get parent queue {queue.parent}: queues.scheduling.run.ai "{queue.parent}" not found'
    problem = f"parent queue '{queue.parent}' does not exist; create it first (quota validation is on)"
    return InvalidObject(obj, PARENT_FIELD, problem, kai=kai)


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


def quota_warnings(queue: Queue, queues: Mapping[str, Queue], update: bool = False) -> list[str]:
    """KAI's quota warnings: the queue's quotas against its parent's (each, and with its siblings' added up) and,
    on update, its children's against its own (each, and added up). -1 is unlimited: never above a quota, and any
    quota is within an unlimited one."""
    warnings = []
    parent = queues.get(queue.parent) if queue.parent else None
    if parent is not None:
        siblings = [q for q in queues.values() if q.parent == parent.name]
        for resource in RESOURCES:
            mine, allowed = _quota(queue, resource), _quota(parent, resource)
            if _above(mine, allowed):
                warnings.append(
                    f"child queue {KAI_NAME[resource]} quota ({_crd(resource, mine)}) exceeds parent queue "
                    f"{parent.name} {KAI_NAME[resource]} quota ({_crd(resource, allowed)})"
                )
            total = _total([_quota(q, resource) for q in siblings])
            if len(siblings) > 1 and _above(total, allowed):
                warnings.append(
                    f"total children {KAI_NAME[resource]} quota ({_crd(resource, total)}) exceeds parent queue "
                    f"{parent.name} {KAI_NAME[resource]} quota ({_crd(resource, allowed)})"
                )
    children = [q for q in queues.values() if q.parent == queue.name]
    if update and children:
        for resource in RESOURCES:
            allowed = _quota(queue, resource)
            for child in children:
                if _above(_quota(child, resource), allowed):
                    quota = _crd(resource, _quota(child, resource))
                    warnings.append(
                        f"child queue {child.name} {KAI_NAME[resource]} quota ({quota}) exceeds parent "
                        f"{KAI_NAME[resource]} quota ({_crd(resource, allowed)})"
                    )
            total = _total([_quota(child, resource) for child in children])
            if _above(total, allowed):
                warnings.append(
                    f"total children {KAI_NAME[resource]} quota ({_crd(resource, total)}) exceeds parent "
                    f"{KAI_NAME[resource]} quota ({_crd(resource, allowed)})"
                )
    return warnings


def _quota(queue: Queue, name: str) -> float:
    resource: QueueResource = getattr(queue, name)
    return resource.quota


def _above(quota: float, allowed: float) -> bool:
    return allowed != names.UNLIMITED and (quota == names.UNLIMITED or quota > allowed)


def _total(quotas: list[float]) -> float:
    return names.UNLIMITED if names.UNLIMITED in quotas else sum(quotas)


def _crd(resource: str, value: float) -> str:
    text = KAI_FORMAT[resource].format(value if value == names.UNLIMITED else value / CRD_UNIT[resource])
    return f"{text}, unlimited" if value == names.UNLIMITED else text
