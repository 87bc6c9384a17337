"""reclaim: a queue below its fair share takes resources back from jobs of queues above theirs.

Only jobs whose queue may reclaim (within fair share with the job) try; victims are preemptible running jobs of
other queues, worst first; the proportion plugin judges each scenario fair or not.
"""

from collections.abc import Callable

from kai.core.framework.eviction import (
    VICTIMS,
    QueueVictimFilter,
    ScopedVictimFilter,
    SolverAction,
    all_of,
    cached_victims,
    candidates_queue,
    may_lose_pods,
    pending_jobs,
    run_solver_action,
)
from kai.core.framework.queueing.job_index import JobIndex
from kai.core.framework.queueing.job_queue import JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.victims.hopeless import strictest
from kai.core.model.text import BYTES_PER_GB, MILLI_CPU_PER_CORE, amount_of, humanize
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.queue_info import QueueInfo
from kai.core.state.task import TaskInfo

NAME = "reclaim"
AUDITED = (("gpu", "GPUs", 1.0), ("cpu", "cores", MILLI_CPU_PER_CORE), ("memory", "GB", BYTES_PER_GB))
"""The resources an eviction's audit names, in the order it looks at them: (share key, unit, per unit)."""


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


def messages(
    ssn: Session, tasks: list[TaskInfo], reclaimer: PodGroupInfo, details: dict[tuple[str, str], tuple[str, str]]
) -> list[tuple[str, str]]:
    """Each victim's eviction message and why. The queue details of a (reclaimer queue, victim queue) pair are
    worked out once into ``details``, which the caller empties when allocations change: a large gang's scenario
    evicts thousands of pods of a few queues, and every simulation starts from the last commit."""
    result = []
    for task in tasks:
        text = f"Pod {task.namespace}/{task.name} was preempted by workload {reclaimer.namespace}/{reclaimer.name}."
        why = f"queue {reclaimer.queue} reclaims from queue {ssn.jobs[task.job_key].queue}"
        if ssn.queue_share_fns:
            pair = (reclaimer.queue, ssn.jobs[task.job_key].queue)
            found = details.get(pair)
            if found is None:
                found = details[pair] = _details(ssn, ssn.queues[pair[0]], ssn.queues[pair[1]])
            text += found[0]
            why = found[1]
        result.append((text, why))
    return result


def _details(ssn: Session, mine: QueueInfo, theirs: QueueInfo) -> tuple[str, str]:
    if mine.parent != theirs.parent and mine.parent in ssn.queues and theirs.parent in ssn.queues:
        mine, theirs = ssn.queues[mine.parent], ssn.queues[theirs.parent]
    text = f"\n{_queue_details(ssn, theirs.uid)}\n{_queue_details(ssn, mine.uid)}"
    return text, _why(ssn, mine, theirs)


def _why(ssn: Session, mine: QueueInfo, theirs: QueueInfo) -> str:
    """The audit's reason, from the shares before the eviction, in the first resource it holds for (GPUs first): the
    reclaimer below its quota and the victim's queue over its own (KAI's guarantee of deserved quota, which holds
    whatever else the cluster has free), else the victim's queue over its fair share (which depends on all of it)."""
    victim, reclaimer = ssn.queue_share_fns[0](theirs.uid), ssn.queue_share_fns[0](mine.uid)
    for resource, unit, scale in AUDITED:
        below = reclaimer["deserved"][resource] - reclaimer["allocated"][resource]
        over = victim["allocated"][resource] - victim["deserved"][resource]
        if min(reclaimer["deserved"][resource], victim["deserved"][resource]) >= 0 and min(below, over) > 1e-9:
            return (
                f"{mine.name} below its quota by {amount_of(below, unit, scale)}, "
                f"{theirs.name} over its quota by {amount_of(over, unit, scale)}"
            )
    for resource, unit, scale in AUDITED:
        over = victim["allocated"][resource] - victim["fairShare"][resource]
        if over > 1e-9:
            return f"{theirs.name} over its fair share by {amount_of(over, unit, scale)}"
    return f"{mine.name} reclaims its fair share from {theirs.name}"


def execute(ssn: Session) -> None:
    filters = ssn.reclaim_victim_filters
    scoped = [keep for keep in filters if isinstance(keep, ScopedVictimFilter)]
    by_queue = [keep for keep in filters if isinstance(keep, QueueVictimFilter)]
    index: JobIndex | None = None
    involved: dict[str, list[PodGroupInfo]] = {}

    def scan(reclaimer: PodGroupInfo) -> JobsOrderByQueues:
        """KAI's: every job of another queue that every filter keeps."""
        candidates = {
            key: job
            for key, job in ssn.jobs.items()
            if job.queue != reclaimer.queue and all(keep(reclaimer, job) for keep in filters)
        }
        return candidates_queue(ssn, candidates)

    def indexed(reclaimer: PodGroupInfo) -> JobsOrderByQueues:
        """The same queue from the victims kept across commits, without the queues a queue filter refuses, the
        other filters asked only about the jobs they may refuse (what a scan asks them about every other job they
        accept without a trace)."""
        nonlocal index
        if index is None:
            index = JobIndex(ssn, may_lose_pods, worst_first=True, pool=ssn.preemptible_jobs())
        index.sync()  # a victims queue is made between simulations: only commits are in force
        others = [uid for uid in index.runs if uid != reclaimer.queue]
        skipped = {reclaimer.queue, *(uid for keep in by_queue for uid in keep.refused(reclaimer, others))}
        asked = involved.get(reclaimer.queue)
        if asked is None:
            keys = sorted(
                {key for keep in scoped for key in keep.involved(reclaimer.queue)}, key=index.position.__getitem__
            )
            asked = involved[reclaimer.queue] = [ssn.jobs[k] for k in keys if ssn.jobs[k].queue != reclaimer.queue]
        refused = [job.key for job in asked if not all(keep(reclaimer, job) for keep in filters)]
        return index.queue(VICTIMS, skip_queues=skipped, skip_jobs=refused)

    def victims(reclaimer: PodGroupInfo) -> Callable[[], JobsOrderByQueues]:
        make = indexed if len(scoped) + len(by_queue) == len(filters) else scan
        return cached_victims(lambda: make(reclaimer))

    details: dict[tuple[str, str], tuple[str, str]] = {}
    commits = [len(ssn.committed)]

    def eviction_messages(tasks: list[TaskInfo], reclaimer: PodGroupInfo) -> list[tuple[str, str]]:
        if commits[0] != len(ssn.committed):  # simulations start from the last commit: only a commit changes shares
            details.clear()
            commits[0] = len(ssn.committed)
        return messages(ssn, tasks, reclaimer, details)

    run_solver_action(
        ssn,
        SolverAction(
            NAME,
            pending_jobs(ssn, NAME),
            victims,
            all_of(ssn.reclaim_validators),
            eviction_messages,
            eligible=ssn.can_reclaim,
            yields=strictest(ssn.reclaim_yield_fns),
        ),
    )
