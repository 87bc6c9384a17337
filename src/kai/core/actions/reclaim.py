"""reclaim: a queue below its fair share takes resources back from jobs of queues above theirs.

Only jobs whose queue may reclaim (within fair share with the job) try; victims are preemptible running jobs of
other queues, worst first; the proportion plugin judges each scenario fair or not.
"""

from collections.abc import Callable

from kai.core.framework.eviction import all_of, cached_victims, pending_jobs, run_solver_action
from kai.core.framework.job_queue import JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.model.text import BYTES_PER_GB, MILLI_CPU_PER_CORE, humanize
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.queue_info import QueueInfo
from kai.core.state.task import TaskInfo

NAME = "reclaim"


def _resources(shares: dict[str, float]) -> str:
    return (
        f"GPU: {humanize(shares['gpu'])}, CPU: {humanize(shares['cpu'], MILLI_CPU_PER_CORE)} (cores), "
        f"memory: {humanize(shares['memory'], BYTES_PER_GB)} (GB)"
    )


def _queue_details(ssn: Session, uid: str) -> str:
    queue = ssn.queues[uid]
    shares = ssn.queue_share_fns[0](uid)
    return (
        f"{queue.name} uses <{_resources(shares['allocated'])}> with a quota of <{_resources(shares['deserved'])}>, "
        f"fair-share of <{_resources(shares['fairShare'])}> and queue priority of <{queue.priority}>."
    )


def messages(ssn: Session, tasks: list[TaskInfo], reclaimer: PodGroupInfo) -> list[str]:
    """Each victim's eviction message; the queue details are worked out once per victim queue (a large gang's
    scenario evicts thousands of pods of a few queues)."""
    details: dict[str, str] = {}
    result = []
    for task in tasks:
        text = f"Pod {task.namespace}/{task.name} was preempted by workload {reclaimer.namespace}/{reclaimer.name}."
        if ssn.queue_share_fns:
            theirs = ssn.jobs[task.job_key].queue
            suffix = details.get(theirs)
            if suffix is None:
                suffix = details[theirs] = _details(ssn, ssn.queues[reclaimer.queue], ssn.queues[theirs])
            text += suffix
        result.append(text)
    return result


def _details(ssn: Session, mine: QueueInfo, theirs: QueueInfo) -> str:
    if mine.parent != theirs.parent and mine.parent in ssn.queues and theirs.parent in ssn.queues:
        mine, theirs = ssn.queues[mine.parent], ssn.queues[theirs.parent]
    return f"\n{_queue_details(ssn, theirs.uid)}\n{_queue_details(ssn, mine.uid)}"


def execute(ssn: Session) -> None:
    def victims(reclaimer: PodGroupInfo) -> Callable[[], JobsOrderByQueues]:
        def candidates() -> dict[str, PodGroupInfo]:
            return {
                key: job
                for key, job in ssn.jobs.items()
                if job.queue != reclaimer.queue and all(keep(reclaimer, job) for keep in ssn.reclaim_victim_filters)
            }

        return cached_victims(ssn, candidates)

    run_solver_action(
        ssn,
        NAME,
        pending_jobs(ssn, NAME),
        ssn.can_reclaim,
        None,
        victims,
        all_of(ssn.reclaim_validators),
        lambda tasks, job: messages(ssn, tasks, job),
        lambda job: job.queue,
    )
