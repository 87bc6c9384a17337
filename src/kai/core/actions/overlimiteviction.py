"""overlimiteviction (kai's, for KAI #1783): a queue holding more than its limit — the limit was cut under running
work — gives back the excess.

KAI only keeps such a queue from growing (allocate refuses its new work over the limit); what it already runs stays
over the limit for as long as it runs. With this action in the config, the preemptible jobs of every queue over a
limit (its own and its descendants') that hold some of what it is over in are evicted worst first (the victims'
order of reclaim and preempt), an elastic job's pods above its gang sizes first, until no queue on the way up is
over any of its limits. A job within its preempt min runtime is passed over (the excess then goes once its
protection ends: an elastic one may lose its surplus), and no eviction goes past the PodDisruptionBudgets or the
eviction budget: what they hold back goes in a later cycle. Non-preemptible jobs are never evicted. The evicted pods
come back pending and allocate refuses them at the limit, so nothing is placed back and evicted again.

A cut of a queue's quota (deserved) needs nothing of its own: other queues' pending work reclaims what the queue
holds above its new fair share, as reclaim always does (over the following cycles, within the same budgets).
"""

from kai.core.framework.eviction import VICTIMS
from kai.core.framework.queueing.job_queue import JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.framework.victims.victims import tasks_to_evict
from kai.core.model.text import BYTES_PER_GB, MILLI_CPU_PER_CORE, amount_of
from kai.core.state.pod_status import ACTIVE_ALLOCATED
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.task import TaskInfo

NAME = "overlimiteviction"
RESOURCES = (
    ("gpu", "GPU", "GPUs", 1.0),
    ("cpu", "CPU", "cores", MILLI_CPU_PER_CORE),
    ("memory", "memory", "GB", BYTES_PER_GB),
)
"""(resource, its name, unit, per unit): a queue's limits, and the units the audit names them in."""


def excess(ssn: Session, uid: str) -> str:
    """How far the queue is over one of its limits ("" when within them), for the audit."""
    queue = ssn.queues[uid]
    allocated = ssn.queue_share_fns[0](uid)["allocated"]
    for resource, name, unit, scale in RESOURCES:
        limit = getattr(queue.queue, resource).limit
        over = allocated[resource] - limit
        if limit >= 0 and over > 1e-9:
            return f"queue {queue.name} over its {name} limit by {amount_of(over, unit, scale)}"
    return ""


def _over(ssn: Session, uid: str) -> set[str]:
    """The resources the queue holds more of than its limits allow."""
    queue = ssn.queues[uid]
    allocated = ssn.queue_share_fns[0](uid)["allocated"]
    return {
        resource
        for resource, _, _, _ in RESOURCES
        if (limit := getattr(queue.queue, resource).limit) >= 0 and allocated[resource] - limit > 1e-9
    }


def _held(task: TaskInfo, resource: str) -> float:
    request = task.request
    return task.gpus_quota if resource == "gpu" else request.milli_cpu if resource == "cpu" else request.memory_bytes


def over_above(ssn: Session, job: PodGroupInfo) -> str:
    """The first queue from the job's queue up over a limit of a resource the job's placed pods hold (its uid), ""
    for none: evicting a job that holds none of it would not bring the queue back, and allocate would place it
    again."""
    placed = [task for task in job.tasks.values() if task.status in ACTIVE_ALLOCATED]
    uid = job.queue
    while uid in ssn.queues:
        if any(_held(task, resource) > 0 for resource in _over(ssn, uid) for task in placed):
            return uid
        uid = ssn.queues[uid].parent
    return ""


def execute(ssn: Session) -> None:
    if not ssn.queue_share_fns or not any(excess(ssn, uid) for uid in ssn.queues):
        return
    candidates = {key: job for key, job in ssn.jobs.items() if over_above(ssn, job)}
    victims = JobsOrderByQueues(ssn, VICTIMS)
    victims.initialize(candidates)
    statement = Statement(ssn)
    taken: list[TaskInfo] = []
    while not victims.empty():
        job = victims.pop()
        if job is None:
            break
        while (over := over_above(ssn, job)) and job.has_active_allocated():
            tasks, more = tasks_to_evict(ssn, job)
            if not tasks or not all(guard(job, tasks) for guard in ssn.eviction_guards):
                break
            if ssn.disruption.refusal([*taken, *tasks], NAME) is not None:
                break
            why = excess(ssn, over)
            for task in tasks:
                statement.evict(task, _message(task, ssn.queues[over].name), why=why)
            taken.extend(tasks)
            if not more:
                break
    statement.commit(NAME)


def _message(task: TaskInfo, queue: str) -> str:
    return f"Pod {task.namespace}/{task.name} was evicted: queue {queue} is over its limit"
