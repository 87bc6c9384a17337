"""consolidation: move running preemptible pods between nodes so that a pending job fits (defragmentation).

A solution is accepted only if every victim is re-placed (pipelined) elsewhere: nothing is lost, pods move.
At most ``maxNumberConsolidationPreemptees`` (+1, as in KAI) victim jobs are considered; 0 disables the action.
"""

from collections.abc import Callable

from kai.core.framework.eviction import (
    VICTIMS,
    SolverAction,
    cached_victims,
    each_task,
    has_live_pod,
    may_lose_pods,
    pending_jobs,
    run_solver_action,
)
from kai.core.framework.job_allocation import tasks_to_allocate
from kai.core.framework.queueing.job_index import JobIndex
from kai.core.framework.queueing.job_queue import JobQueueOptions, JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.victims.scenario import Scenario
from kai.core.state.pod_status import ACTIVE_ALLOCATED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo

NAME = "consolidation"


NOT_MOVED = frozenset({PodStatus.RELEASING, PodStatus.PENDING})
"""A victim's state when it was not placed again: evicted (releasing), or, pipelined earlier in the session (by
another consolidation, say, that moved it), put back to pending (kai's statement does that, docs/deviations.md)."""


def _everything_moved(scenario: Scenario) -> bool:
    """KAI's allPodsReallocated: every victim is placed again."""
    return all(task.status not in NOT_MOVED for tasks in scenario.victims.values() for task in tasks)


def _enough_gpus(ssn: Session, job: PodGroupInfo) -> bool:
    """Cheap check: the cluster's idle and releasing GPUs (whole and shared) cover what the job asks for."""
    nodes = ssn.nodes
    available = memory = 0.0
    for info in nodes.infos:
        if info.node.ready:
            gpus, mib = nodes.idle_or_releasing_gpus(info)
            available, memory = available + gpus, memory + mib
    tasks = tasks_to_allocate(ssn, job, False)
    wanted = sum(t.gpus_quota for t in tasks)
    wanted_memory = sum(t.request.gpu_memory_mib for t in tasks)
    return available + 1e-9 >= wanted and memory >= wanted_memory


def execute(ssn: Session) -> None:
    limit = ssn.config.max_consolidation_preemptees
    if limit == 0:
        return
    index: JobIndex | None = None

    def victims(preemptor: PodGroupInfo) -> Callable[[], JobsOrderByQueues]:
        """The first ``limit`` (+1) jobs that may lose pods, in session order, afresh for every queue; without a
        limit all of them, found once per pending job (as KAI does)."""

        def takeable(job: PodGroupInfo) -> bool:
            return job.preemptible and job.key != preemptor.key and job.count(ACTIVE_ALLOCATED) > 0

        def first_ones() -> JobsOrderByQueues:
            """KAI counts the candidates it takes and refuses every job after the last: the scan stops there."""
            chosen: dict[str, PodGroupInfo] = {}
            for job in ssn.jobs.values():
                if len(chosen) > limit:
                    break
                if has_live_pod(ssn, job) and takeable(job):
                    chosen[job.key] = job
            queue = JobsOrderByQueues(ssn, JobQueueOptions(victim_queue=True))
            queue.initialize(chosen)
            return queue

        def all_of_them() -> JobsOrderByQueues:
            """Every job with a live pod that may lose pods but the preemptor, from the index kept across commits."""
            nonlocal index
            if index is None:
                index = JobIndex(
                    ssn,
                    lambda job: may_lose_pods(job) and has_live_pod(ssn, job),
                    worst_first=True,
                    pool=ssn.preemptible_jobs(),
                )
            index.sync()  # a victims queue is made between simulations: only commits are in force
            return index.queue(VICTIMS, skip_jobs=[preemptor.key])

        return cached_victims(all_of_them) if limit == -1 else first_ones

    messages = each_task(
        lambda task, _job: (
            f"Pod {task.namespace}/{task.name} was preempted and rescheduled due to bin packing "
            "(resource consolidation) procedure"
        ),
        lambda _task, _job: "moved to another node to make room (bin packing)",
    )
    run_solver_action(
        ssn,
        SolverAction(
            NAME,
            pending_jobs(ssn, NAME, preemptible_only=True),
            victims,
            _everything_moved,
            messages,
            attempt=lambda job: _enough_gpus(ssn, job),
            signature_scope=lambda _job: "",  # the whole cluster
        ),
    )
