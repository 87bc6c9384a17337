"""consolidation: move running preemptible pods between nodes so that a pending job fits (defragmentation).

A solution is accepted only if every victim is re-placed (pipelined) elsewhere: nothing is lost, pods move.
At most ``maxNumberConsolidationPreemptees`` (+1, as in KAI) victim jobs are considered; 0 disables the action.
"""

from collections.abc import Callable

from kai.core.framework.eviction import run_solver_action, victims_queue
from kai.core.framework.job_allocation import tasks_to_allocate
from kai.core.framework.job_queue import JobQueueOptions, JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.victims import Scenario
from kai.core.state.pod_status import ACTIVE_ALLOCATED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.resource_index import GPU_ROW

NAME = "consolidation"


def _everything_moved(scenario: Scenario) -> bool:
    return all(task.status is not PodStatus.RELEASING for tasks in scenario.victims.values() for task in tasks)


def _enough_gpus(ssn: Session, job: PodGroupInfo) -> bool:
    """Cheap check: the cluster's idle and releasing GPUs (whole and shared) cover what the job asks for."""
    nodes = ssn.nodes
    available = 0.0
    memory = 0.0
    for info in nodes.infos:
        if not info.node.ready:
            continue
        whole = nodes.idle[GPU_ROW, info.column] + nodes.releasing[GPU_ROW, info.column]
        available += whole
        memory += int(whole) * info.gpu_memory_mib
        for group, allocated in info.shared.allocated.items():
            if allocated > 0:
                available += 1 - allocated / info.gpu_memory_mib
                memory += info.gpu_memory_mib - allocated
            released = info.shared.releasing.get(group, 0)
            if released > 0 and not info.shared.releasing_from_shared_tasks(group):
                available += released / info.gpu_memory_mib
                memory += released
    tasks = tasks_to_allocate(ssn, job, False)
    wanted = sum(t.gpus_quota for t in tasks)
    wanted_memory = sum(t.request.gpu_memory_mib for t in tasks)
    return available + 1e-9 >= wanted and memory >= wanted_memory


def execute(ssn: Session) -> None:
    limit = ssn.config.max_consolidation_preemptees
    if limit == 0:
        return

    def victims(preemptor: PodGroupInfo) -> Callable[[], JobsOrderByQueues]:
        def build() -> JobsOrderByQueues:
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

            return victims_queue(ssn, accept)

        return build

    run_solver_action(
        ssn,
        NAME,
        JobQueueOptions(
            filter_non_pending=True,
            filter_unready=True,
            filter_non_preemptible=True,
            filter_within_preemption_delay=True,
            max_jobs_queue_depth=ssn.queue_depth(NAME),
        ),
        lambda job: _enough_gpus(ssn, job),
        victims,
        _everything_moved,
        lambda task, _job: (
            f"Pod {task.namespace}/{task.name} was preempted and rescheduled due to bin packing "
            "(resource consolidation) procedure"
        ),
        lambda _job: "",
    )
