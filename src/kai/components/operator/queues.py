"""The default queues (``defaultQueue`` of the Config, KAI's chart values of that name): ``default-parent-queue``
→ ``default-queue``, with KAI's defaults (quota 0, limit -1, over-quota weight 1 for every resource).

The operator writes them when they are missing or when the Config asks for something else than it last wrote (the
spec it wrote is kept, hashed, in an annotation); a user's own edit of a queue stays until the Config's
``defaultQueue`` changes, as KAI's chart makes the queues once and leaves them to the user.
"""

import hashlib
import json
from typing import Any

from kai.components.operator.fields import Fields
from kai.components.operator.objects import labelled

APPLIED = "kai.scheduler/default-queue-spec"
RESOURCES = ("cpu", "gpu", "memory")
KAI_DEFAULT = {"quota": 0, "limit": -1, "overQuotaWeight": 1}


def _resources(section: Fields) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in RESOURCES:
        values = section.sub(name)
        out[name] = {field: values.number(field, default) for field, default in KAI_DEFAULT.items()}
        for field, value in out[name].items():
            if field == "overQuotaWeight" and value is not None and value < 0:
                raise values.error(field, f"got {value:g}; must not be negative")
            if field != "overQuotaWeight" and value is not None and value < -1:
                raise values.error(field, f"got {value:g}; must be -1 (unlimited) or more")
        out[name] = {field: _plain(value) for field, value in out[name].items()}
    return out


def _plain(value: float | None) -> int | float:
    number = float(value or 0)
    return int(number) if number.is_integer() else number


def default_queues(spec: Fields) -> list[dict[str, Any]]:
    """The queues as the Config wants them, each with the hash of its spec (nothing when they are turned off)."""
    section = spec.sub("defaultQueue")
    if not section.flag("createDefaultQueue", True):
        return []
    parent = section.text("parentName", "default-parent-queue")
    child = section.text("childName", "default-queue")
    wanted: list[tuple[str, dict[str, Any]]] = [
        (parent, {"resources": _resources(section.sub("parentResources"))}),
        (child, {"parentQueue": parent, "resources": _resources(section.sub("childResources"))}),
    ]
    queues = []
    for name, queue_spec in wanted:
        queue = labelled("Queue", name, "kai-operator")
        queue["metadata"]["annotations"] = {APPLIED: spec_hash(queue_spec)}
        queue["spec"] = queue_spec
        queues.append(queue)
    return queues


def spec_hash(queue_spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(queue_spec, sort_keys=True).encode()).hexdigest()[:16]


def needs_write(current: dict[str, Any] | None, wanted: dict[str, Any]) -> bool:
    """Missing, or last written from another Config: the queue is (re)written."""
    if current is None:
        return True
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(APPLIED) != wanted["metadata"]["annotations"][APPLIED])
