"""The proportion plugin's own typed reasons for a job that still waits at session close (KAI says nothing of them).

- A job that found no room and whose queue may not reclaim: taking what it asks for would lift the queue above its
  fair share. The fix raises the queue's quota to what it would then hold.
- A job within its preemption delay whose queue may reclaim: name the queues holding GPUs above their fair share,
  which reclaim could take from once the delay is over.
"""

from collections.abc import Mapping, Sequence

from kai.core.framework.job_allocation import init_request
from kai.core.framework.session import Session
from kai.core.plugins.proportion.attributes import Quantities, QueueAttributes, ancestry
from kai.core.plugins.proportion.reclaimable import can_reclaim
from kai.core.plugins.proportion.resource_division import UNLIMITED
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reasons import QUANTITIES, Fix, FixKind, Reason, ReasonKind, amount

NO_ROOM = frozenset({ReasonKind.NODE_FIT, ReasonKind.GANG_SHORT, ReasonKind.GPU_SHARING, ReasonKind.TOPOLOGY})
"""Reasons that say the cluster had no room: reclaim is what could still help."""


def wait_reasons(
    ssn: Session, queues: Mapping[str, QueueAttributes], job: PodGroupInfo, found: Sequence[Reason]
) -> list[Reason]:
    queue = queues.get(job.queue)
    if queue is None or "reclaim" not in ssn.config.actions:
        return []
    kinds = {reason.kind for reason in found}
    request = init_request(ssn, job)
    allowed = can_reclaim(queue, request, job.preemptible)
    if kinds & NO_ROOM and not allowed:
        reason = _above_fair_share(queues, queue, request)
        return [reason] if reason is not None else []
    delay = next((r for r in found if r.kind is ReasonKind.PREEMPTION_DELAY), None)
    if delay is not None and allowed:
        until = delay.evidence.get("until", 0.0)
        reason = _reclaimable_after(queues, job, float(until) if isinstance(until, int | float) else 0.0)
        return [reason] if reason is not None else []
    return []


def _above_fair_share(
    queues: Mapping[str, QueueAttributes], queue: QueueAttributes, request: Quantities
) -> Reason | None:
    """Only when another queue holds some of the resource: else reclaim would have nothing to take anyway."""
    fair = queue.fair_share()
    mine = {each.uid for each in ancestry(queues, queue.uid)}
    for i in (2, 0, 1):
        if fair[i] == UNLIMITED or queue.allocated[i] + request[i] <= fair[i] or not request[i]:
            continue
        if not any(other.allocated[i] > 0 for other in queues.values() if other.uid not in mine and not other.children):
            continue
        resource, unit, scale = QUANTITIES[i]
        evidence = {
            "queue": queue.uid,
            "resource": resource,
            "unit": unit,
            "fairShare": amount(fair[i], scale),
            "allocated": amount(queue.allocated[i], scale),
            "requested": amount(request[i], scale),
        }
        to = amount(queue.allocated[i] + request[i], scale)
        quota = max(queue.deserved()[i], 0.0)
        by = round(to - amount(quota, scale), 3)
        fix = Fix(
            FixKind.RAISE_QUEUE_QUOTA, {"queue": queue.uid, "resource": resource, "unit": unit, "by": by, "to": to}
        )
        return Reason(ReasonKind.FAIR_SHARE, evidence, (fix,))
    return None


def _reclaimable_after(queues: Mapping[str, QueueAttributes], job: PodGroupInfo, until: float) -> Reason | None:
    """Leaf queues outside the job's line holding preemptible GPUs above their fair share, most first."""
    mine = {queue.uid for queue in ancestry(queues, job.queue)}
    over: list[tuple[float, str]] = []
    for queue in queues.values():
        if queue.uid in mine or queue.children:
            continue
        above = queue.allocated[2] - queue.fair_share()[2]
        preemptible = queue.allocated[2] - queue.allocated_non_preemptible[2]
        gpus = amount(min(above, preemptible))
        if queue.fair_share()[2] != UNLIMITED and gpus > 0:
            over.append((gpus, queue.uid))
    if not over:
        return None
    over.sort(key=lambda entry: (-entry[0], entry[1]))
    gpus, first = over[0]
    fix = Fix(FixKind.RECLAIM_AFTER, {"until": until, "queue": first, "gpus": gpus})
    listed = [{"queue": uid, "gpus": held} for held, uid in over]
    return Reason(ReasonKind.RECLAIMABLE_AFTER_DELAY, {"until": until, "queues": listed}, (fix,))
