"""The scheduler's conditions on pods, PodGroups and Queues, changed in place on a read object.

Each function returns whether it changed anything, so callers write only real changes (KAI's status updater: an
unchanged condition is not rewritten, and a transition time moves only when the status does).
"""

from collections.abc import Mapping
from typing import Any

from kai.cluster.port import Raw
from kai.core.model.meta import format_time

DEFAULT_NODE_POOL = "default"
"""KAI's name of the pool of a scheduler without a partition, and of an object without the node-pool label."""
INVALID_OBJECT = "InvalidObject"
"""Reason of the conditions that say an object cannot be used as written (``kai`` only: KAI's webhooks refuse
such objects)."""
QUEUE_VALID = "Valid"
_COMPARED = ("type", "nodePool", "reason", "message", "status")
"""What KAI compares of two scheduling conditions (equalSchedulingConditions)."""


def _conditions(obj: Raw, field: str = "conditions") -> list[dict[str, Any]]:
    status: dict[str, Any] = obj.setdefault("status", {})
    conditions = status.get(field)
    return conditions if isinstance(conditions, list) else []


def set_condition(obj: Raw, condition: Raw, now: float) -> bool:
    """Sets the condition of ``condition["type"]`` in ``status.conditions`` (pods, Queues); unchanged → False."""
    conditions = _conditions(obj)
    current = next((c for c in conditions if c.get("type") == condition["type"]), None)
    if current is not None and all(current.get(k) == v for k, v in condition.items()):
        return False
    stamp = format_time(now)
    if current is not None and current.get("status") == condition["status"]:
        stamp = current.get("lastTransitionTime", stamp)
    updated = {**condition, "lastTransitionTime": stamp}
    obj["status"]["conditions"] = [c for c in conditions if c.get("type") != condition["type"]] + [updated]
    return True


def remove_condition(obj: Raw, condition_type: str, reason: str) -> bool:
    """Removes the ``condition_type`` condition if it has ``reason`` (someone else's condition stays)."""
    conditions = _conditions(obj)
    kept = [c for c in conditions if not (c.get("type") == condition_type and c.get("reason") == reason)]
    if len(kept) == len(conditions):
        return False
    obj["status"]["conditions"] = kept
    return True


def set_scheduling_condition(podgroup: Raw, message: str, reasons: list[Raw], now: float, node_pool: str) -> bool:
    """KAI's ``UnschedulableOnNodePool`` for the podgroup's node pool, last in the list, its transition ID one past the
    highest. Not rewritten when the last condition says the same (type, pool, reason, message, status; KAI leaves the
    reasons out of that) and is this pool's, last in the list."""
    conditions = _conditions(podgroup, "schedulingConditions")
    last = last_scheduling_condition(podgroup)
    condition = {
        "type": "UnschedulableOnNodePool",
        "nodePool": node_pool,
        "reason": "Unschedulable",
        "message": message,
        "reasons": reasons,
        "transitionID": str(_transition_id(last) + 1 if last is not None else 1),
        "lastTransitionTime": format_time(now),
        "status": "True",
    }
    same = last is not None and all(last.get(field) == condition[field] for field in _COMPARED)
    if same and conditions[-1].get("nodePool") == node_pool:
        return False
    podgroup["status"]["schedulingConditions"] = [c for c in conditions if c.get("nodePool") != node_pool] + [condition]
    return True


def clear_scheduling_conditions(podgroup: Raw, reason: str | None = None) -> bool:
    """Removes the scheduling conditions (with ``reason``: only those whose first reason is it)."""
    conditions = _conditions(podgroup, "schedulingConditions")
    kept = [c for c in conditions if reason is not None and first_reason(c) != reason]
    if len(kept) == len(conditions):
        return False
    podgroup["status"]["schedulingConditions"] = kept
    return True


def first_reason(condition: Raw) -> str:
    """The reason of a condition's first explanation (``reasons[0].reason``; "" without one)."""
    reasons = condition.get("reasons")
    first = reasons[0] if isinstance(reasons, list) and reasons else None
    return str(first.get("reason", "")) if isinstance(first, dict) else ""


def _transition_id(condition: Raw) -> int:
    try:
        return max(0, int(condition.get("transitionID", "0")))
    except (TypeError, ValueError):  # as KAI: an unreadable ID counts as 0
        return 0


def last_scheduling_condition(podgroup: Mapping[str, Any]) -> Raw | None:
    """The scheduling condition of the highest transition ID, the first of equals (KAI's GetLastSchedulingCondition:
    an unreadable ID counts as -1)."""
    status = podgroup.get("status")
    conditions = status.get("schedulingConditions") if isinstance(status, dict) else None
    last: Raw | None = None
    last_id = 0
    for condition in conditions if isinstance(conditions, list) else []:
        if not isinstance(condition, dict):
            continue
        try:
            condition_id = int(condition.get("transitionID", ""))
        except (TypeError, ValueError):
            condition_id = -1
        if last is None or condition_id > last_id:
            last, last_id = condition, condition_id
    return last
