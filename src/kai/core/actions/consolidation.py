"""consolidation: move running preemptible pods between nodes so that a pending job fits (defragmentation).

A solution is accepted only if every victim is re-placed (pipelined) elsewhere: nothing is lost, pods move.
At most ``maxNumberConsolidationPreemptees`` (+1, as in KAI) victim jobs are considered; 0 disables the action.
"""

from collections.abc import Callable

from kai.core.framework.eviction import (
    JobFilter,
    cached_victims,
    candidates_queue,
    each_task,
    pending_jobs,
    run_solver_action,
    victim_candidates,
    victims_queue,
)
from kai.core.framework.job_allocation import tasks_to_allocate
from kai.core.framework.job_queue import JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.victims import Scenario
from kai.core.state.pod_status import ACTIVE_ALLOCATED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo

NAME = "consolidation"


def _everything_moved(scenario: Scenario) -> bool:
    return all(task.status is not PodStatus.RELEASING for tasks in scenario.victims.values() for task in tasks)


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

    def victims(preemptor: PodGroupInfo) -> Callable[[], JobsOrderByQueues]:
        """Up to ``limit`` (+1) candidate jobs, counted afresh for every queue; without a limit the candidates are
        found once per pending job (as KAI does)."""

        def accept_first() -> JobFilter:
            taken = [0]

            def accept(job: PodGroupInfo) -> bool:
                if not job.preemptible or job.key == preemptor.key:
                    return False
                if limit != -1 and taken[0] > limit:
                    return False
                if job.count(ACTIVE_ALLOCATED) == 0:
                    return False
                taken[0] += 1
                return True

            return accept

        if limit == -1:
            return cached_victims(lambda: candidates_queue(ssn, victim_candidates(ssn, accept_first())))
        return lambda: victims_queue(ssn, accept_first())

    run_solver_action(
        ssn,
        NAME,
        pending_jobs(ssn, NAME, preemptible_only=True),
        None,
        lambda job: _enough_gpus(ssn, job),
        victims,
        _everything_moved,
        each_task(
            lambda task, _job: (
                f"Pod {task.namespace}/{task.name} was preempted and rescheduled due to bin packing "
                "(resource consolidation) procedure"
            )
        ),
        lambda _job: "",
    )
