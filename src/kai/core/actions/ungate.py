"""ungate (kai's; KAI's design for #1615, "queue admission gating"): lift the queue-admission gate from pods whose
queue admits them.

Pods of a queue that opted in (``kai.scheduler/queue-admission-gating: "true"``) are created with the scheduling
gate ``kai.scheduler/queue-admission`` (kai's admission webhook adds it), so they are never ``Unschedulable`` and a
cluster autoscaler adds no node for pods their queue's quota or limit would not let run. This action, last in the
cycle, takes each podgroup whose pods wait at that gate alone (another gate is its owner's business) in fair-share
order and lifts the gate when the queue's capacity checks pass — the ones allocate makes: the queue's limit and,
for a non-preemptible podgroup, its quota, up the hierarchy — counting what the cycle holds plus, as reserved, the
pods ungated earlier that still wait (within ``disruption.queueAdmissionReservation`` of their ungating) and those
ungated before it in this pass. A gang is ungated whole. The gate only mirrors the check allocate makes anyway:
a pod ungated by hand is held back by allocate as before. Pods gated for a queue that did not opt in (it opted
out since) are ungated at once.
"""

from kai.core.framework.queueing.job_queue import JobQueueOptions, JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import parse_time
from kai.core.state.fit_errors import JobFitError
from kai.core.state.pod_status import PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reasons import Reason, ReasonKind
from kai.core.state.task import TaskInfo, admission_gated

NAME = "ungate"
QUEUE_ADMISSION = "QueueAdmission"
"""The fit error's reason of a podgroup held at the gate."""


def execute(ssn: Session) -> None:
    gated = {job.key: job for job in ssn.cluster.may_wait() if any(admission_gated(t) for t in job.tasks.values())}
    if not gated:
        return
    reserved = _reserved(ssn)
    for task in reserved:
        ssn.allocated(task)
    admitted: list[TaskInfo] = []
    order = JobsOrderByQueues(ssn, JobQueueOptions())
    order.initialize(gated)
    while not order.empty():
        job = order.pop()
        if job is None:
            break
        tasks = [task for task in job.tasks.values() if admission_gated(task)]
        queue = ssn.queues.get(job.queue)
        if queue is None or not queue.queue.admission_gating:
            ssn.result.ungated.extend(task.key for task in tasks)
            continue
        refused = ssn.job_over_capacity(job, tasks)
        if refused is None:
            ssn.result.ungated.extend(task.key for task in tasks)
            for task in tasks:
                ssn.allocated(task)
            admitted.extend(tasks)
            continue
        _held(job, refused)
    for task in [*reserved, *admitted]:  # charged for this pass only: the cycle's accounting is as it was
        ssn.deallocated(task)


def _reserved(ssn: Session) -> list[TaskInfo]:
    """Pending pods of gated queues ungated within the reservation time: the quota they are to get is theirs."""
    since = ssn.now - ssn.config.disruption.admission_reservation_s
    found = []
    for job in ssn.cluster.may_wait():
        queue = ssn.queues.get(job.queue)
        if queue is None or not queue.queue.admission_gating:
            continue
        for task in job.tasks.values():
            stamp = task.pod.meta.annotations.get(names.QUEUE_ADMITTED_ANNOTATION)
            if task.status is PodStatus.PENDING and stamp and _time(stamp) >= since:
                found.append(task)
    return found


def _time(text: str) -> float:
    try:
        return parse_time(text, "pod", names.QUEUE_ADMITTED_ANNOTATION)
    except InvalidObject:  # not the scheduler's stamp: no reservation
        return 0.0


def _held(job: PodGroupInfo, refused: JobFitError) -> None:
    """The podgroup stays gated: why, in the queue check's own words and typed reason."""
    evidence = {"gate": names.QUEUE_ADMISSION_GATE, "why": refused.messages[0] if refused.messages else ""}
    children = (refused.why,) if refused.why is not None else ()
    fixes = refused.why.fixes if refused.why is not None else ()
    why = Reason(ReasonKind.QUEUE_ADMISSION, evidence, fixes, children)
    job.add_fit_error(JobFitError(QUEUE_ADMISSION, list(refused.messages), why=why))
