"""Queue capacity policy (KAI's capacity_policy): hard limits, and non-preemptible jobs within deserved quota.

Both checks walk the job's leaf queue and every ancestor; the first violation becomes the job's fit error, with
KAI's reason (OverLimit / NonPreemptibleOverQuota), its message and the queue's numbers as details, and the typed
reason beside them: the queue, the resource, its numbers and by how much the limit or quota would have to grow.
"""

from collections.abc import Mapping

from kai.core.model.text import BYTES_PER_GB, MILLI_CPU_PER_CORE, go_float, humanize
from kai.core.plugins.proportion.attributes import Quantities, QueueAttributes, ancestry
from kai.core.plugins.proportion.resource_division import UNLIMITED
from kai.core.state.fit_errors import NON_PREEMPTIBLE_OVER_QUOTA, OVER_LIMIT, JobFitError
from kai.core.state.reasons import QUANTITIES, Fix, FixKind, Reason, ReasonKind, amount


def _details(queue: QueueAttributes, requested: Quantities, preemptible: bool) -> dict[str, object]:
    return {
        "name": queue.uid,
        "queueRequested": queue.request(),
        "queueDeserved": queue.deserved(),
        "queueAllocated": tuple(queue.allocated),
        "queueAllocatedNonPreemptible": tuple(queue.allocated_non_preemptible),
        "queueResourceLimits": queue.max_allowed(),
        "podGroupRequested": requested,
        "podGroupRequestedNonPreemptible": (0.0, 0.0, 0.0) if preemptible else requested,
    }


def over_limit(
    queues: Mapping[str, QueueAttributes], leaf: str, requested: Quantities, preemptible: bool
) -> JobFitError | None:
    for queue in ancestry(queues, leaf):
        for i in range(3):
            limit = queue.max_allowed()[i]
            if limit == UNLIMITED or requested[i] == 0:
                continue
            if limit < queue.allocated[i] + requested[i]:
                message = _over_limit_message(queue, i, requested[i])
                numbers = (limit, queue.allocated[i], requested[i])
                why = _typed(ReasonKind.QUEUE_LIMIT, FixKind.RAISE_QUEUE_LIMIT, queue.uid, i, numbers)
                return JobFitError(OVER_LIMIT, [message], details=_details(queue, requested, preemptible), why=why)
    return None


def non_preemptible_over_quota(
    queues: Mapping[str, QueueAttributes], leaf: str, requested: Quantities, preemptible: bool
) -> JobFitError | None:
    if preemptible:
        return None
    for queue in ancestry(queues, leaf):
        for i in range(3):
            deserved = queue.deserved()[i]
            if deserved == UNLIMITED or requested[i] == 0:
                continue
            if deserved < queue.allocated_non_preemptible[i] + requested[i]:
                message = _over_quota_message(queue, i, requested)
                used = queue.allocated_non_preemptible[i]
                why = _typed(
                    ReasonKind.NON_PREEMPTIBLE_OVER_QUOTA,
                    FixKind.RAISE_QUEUE_QUOTA,
                    queue.uid,
                    i,
                    (deserved, used, requested[i]),
                    Fix(FixKind.MAKE_PREEMPTIBLE),
                )
                return JobFitError(
                    NON_PREEMPTIBLE_OVER_QUOTA, [message], details=_details(queue, requested, preemptible), why=why
                )
    return None


def _typed(
    kind: ReasonKind, fix: FixKind, queue: str, i: int, numbers: tuple[float, float, float], *more: Fix
) -> Reason:
    """The queue's bound (limit or quota), what it holds and what the workload asks for, in KAI's units; the fix
    grows the bound to exactly what is needed."""
    bound, used, wanted = numbers
    resource, unit, scale = QUANTITIES[i]
    needed = amount(used + wanted, scale)
    evidence = {
        "queue": queue,
        "resource": resource,
        "unit": unit,
        "bound": amount(bound, scale),
        "allocated": amount(used, scale),
        "requested": amount(wanted, scale),
    }
    by = round(needed - amount(bound, scale), 3)
    grow = Fix(fix, {"queue": queue, "resource": resource, "unit": unit, "by": by, "to": needed})
    return Reason(kind, evidence, (grow, *more))


def _over_limit_message(queue: QueueAttributes, i: int, requested: float) -> str:
    limit, used = queue.max_allowed()[i], queue.allocated[i]
    unit_name, unit, scale = (
        ("CPU cores", "cores", MILLI_CPU_PER_CORE),
        ("memory", "GB", BYTES_PER_GB),
        ("GPUs", "GPUs", 1.0),
    )[i]
    details = (
        f"Limit is {humanize(limit, scale)} {unit}, currently {humanize(used, scale)} {unit} allocated and "
        f"workload requested {humanize(requested, scale)} {unit}"
    )
    return f"{queue.name} quota has reached the allowable limit of {unit_name}. {details}"


def _over_quota_message(queue: QueueAttributes, i: int, requested: Quantities) -> str:
    deserved, used = queue.deserved()[i], queue.allocated_non_preemptible[i]
    if i == 2:
        details = (
            f"Workload requested {go_float(requested[2])} GPUs, but {queue.name} quota is {humanize(deserved)} GPUs, "
            f"while {humanize(used)} GPUs are already allocated for non-preemptible pods."
        )
    elif i == 0:
        details = (
            f"Workload requested {humanize(requested[0], MILLI_CPU_PER_CORE)} CPU cores, but {queue.name} quota is "
            f"{humanize(deserved, MILLI_CPU_PER_CORE)} cores, while {humanize(used, MILLI_CPU_PER_CORE)} cores are "
            "already allocated for non-preemptible pods."
        )
    else:
        details = (
            f"Workload requested {humanize(requested[1], BYTES_PER_GB)} GB memory, but {queue.name} quota is "
            f"{humanize(deserved, BYTES_PER_GB)} GB, while {humanize(used, BYTES_PER_GB)} GB are already "
            "allocated for non-preemptible pods."
        )
    return f"Non-preemptible workload is over quota. {details} Use a preemptible workload to go over quota."
