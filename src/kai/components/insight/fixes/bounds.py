"""Queue bounds a waiting podgroup needs raised: the quota or limit a reason names, raised to what the podgroup needs
(tight); then every bound on its queue's path to the top that it would exceed (a parent limits it too).

Amounts are in the Queue spec's units (GPUs, millicores, MB), rounded up to a whole unit; a reason's evidence is in
display units (GPUs, cores, GB).
"""

import math
from dataclasses import dataclass

from kai.components.insight.fixes.walk import walk
from kai.core.framework.session import Session
from kai.core.model import names
from kai.core.model.text import go_float
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reasons import Reason, ReasonKind

BOUND_KINDS = {
    ReasonKind.QUEUE_LIMIT: "limit",
    ReasonKind.NON_PREEMPTIBLE_OVER_QUOTA: "quota",
    ReasonKind.FAIR_SHARE: "quota",
}
"""Reasons a queue's bound gives, and the bound that raising lets the podgroup past."""
HARD_BOUNDS = frozenset({ReasonKind.QUEUE_LIMIT, ReasonKind.NON_PREEMPTIBLE_OVER_QUOTA})
"""Bounds no room lifts (a fair share below the request does not keep a podgroup from room that is free)."""
RESOURCES = {"GPU": ("gpu", 1.0), "CPU": ("cpu", 1000.0), "memory": ("memory", 1000.0)}
"""A reason's resource (its display name) → the Queue spec's resource and spec units per display unit (cores →
millicores, GB → MB)."""
SPEC_SCALE = {"gpu": 1.0, "cpu": 1.0, "memory": float(names.MEGABYTE)}
"""Scheduler units (GPUs, millicores, bytes) per Queue spec unit (GPUs, millicores, MB)."""
SHOWN = {"gpu": ("GPU", "GPUs", 1.0), "cpu": ("CPU", "cores", 1000.0), "memory": ("memory", "GB", 1000.0)}
"""Per spec resource: its name in kai's words, display unit, spec units per display unit."""
EPSILON = 1e-9


@dataclass(frozen=True)
class Raise:
    """One bound raised: ``new`` and ``old`` in the Queue spec's units."""

    queue: str
    resource: str
    item: str
    old: float
    new: float

    def text(self) -> str:
        name, unit, scale = SHOWN[self.resource]
        return (
            f"raise the {name} {self.item} of queue {self.queue} from {go_float(self.old / scale)} to "
            f"{go_float(self.new / scale)} {unit}"
        )


def bounds(ssn: Session, job: PodGroupInfo, reasons: tuple[Reason, ...]) -> list[tuple[Raise, ...]]:
    """The bounds the reasons name, raised to what the podgroup needs (tight); then every bound on its queue's path
    that it would exceed."""
    needs: dict[tuple[str, str], tuple[float, dict[str, float]]] = {}
    """(resource, quota|limit) → (the podgroup's request, the named queues' holdings), in spec units."""
    for reason in walk(reasons):
        item = BOUND_KINDS.get(reason.kind)
        evidence = reason.evidence
        if item is None or evidence.get("resource") not in RESOURCES:
            continue
        resource, per_display = RESOURCES[str(evidence["resource"])]
        requested = float(evidence["requested"]) * per_display
        request, held = needs.setdefault((resource, item), (requested, {}))
        held[str(evidence["queue"])] = float(evidence["allocated"]) * per_display
    tight: list[Raise] = []
    path: list[Raise] = []
    for (resource, item), (request, held) in needs.items():
        for queue, allocated in held.items():
            tight += _raise(ssn, queue, resource, item, allocated + request)
        path += _path(ssn, job.queue, resource, item, request, held)
    return [_with_limits(ssn, tuple(tight)), _with_limits(ssn, tuple(path))]


def _path(ssn: Session, leaf: str, resource: str, item: str, request: float, held: dict[str, float]) -> list[Raise]:
    """Every queue from ``leaf`` to the top whose ``item`` the podgroup would exceed; ``held`` names what the
    reasons counted as held (a non-preemptible podgroup counts only non-preemptible pods against quota)."""
    shares = ssn.queue_share_fns[0] if ssn.queue_share_fns else None
    raises: list[Raise] = []
    queue = leaf
    while queue in ssn.queues:
        allocated = held.get(queue)
        if allocated is None and shares is not None:
            allocated = shares(queue)["allocated"][resource] / SPEC_SCALE[resource]
        if allocated is not None:
            raises += _raise(ssn, queue, resource, item, allocated + request)
        queue = ssn.queues[queue].parent
    return raises


def _raise(ssn: Session, queue: str, resource: str, item: str, needed: float) -> list[Raise]:
    """The bound raised to ``needed`` (rounded up to a whole spec unit) when it is set and below it."""
    info = ssn.queues.get(queue)
    if info is None:
        return []
    bound = getattr(getattr(info.queue, resource), item) / SPEC_SCALE[resource]
    if bound == names.UNLIMITED or needed <= bound + EPSILON:
        return []
    return [Raise(queue, resource, item, bound, float(math.ceil(needed - EPSILON)))]


def _with_limits(ssn: Session, raises: tuple[Raise, ...]) -> tuple[Raise, ...]:
    """Quota raised above a queue's limit raises the limit with it (a limit below the quota binds first)."""
    out = list(dict.fromkeys(raises))
    for r in raises:
        if r.item == "quota" and not any(
            o.queue == r.queue and o.resource == r.resource and o.item == "limit" for o in out
        ):
            out += _raise(ssn, r.queue, r.resource, "limit", r.new)
    return tuple(out)
