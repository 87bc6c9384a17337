"""stalegangeviction: a gang that has fallen below its minimum for longer than the grace period is evicted whole.

A job is stale when it has running pods but some pod set is below its gang size (and nothing succeeded). The
first cycle that sees it stale records since when; once the grace period has passed, every remaining pod is
evicted so the gang can start again whole. The grace period is the podgroup's ``stalenessGracePeriod``, else the
scheduler's global default; a negative one never evicts. These evictions do not re-arm the podgroup's preemption
delay (KAI evicts them outside a statement). kai evicts only the pods its PodDisruptionBudgets and the eviction
budget allow; the others go in a later cycle (a stale gang runs nothing useful, so taking it in parts harms none).
"""

from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.model import names
from kai.core.model.meta import format_time
from kai.core.state.pod_status import ACTIVE_ALLOCATED, ACTIVE_USED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.task import TaskInfo

NAME = "stalegangeviction"


def is_stale(job: PodGroupInfo) -> bool:
    if any(task.status is PodStatus.SUCCEEDED for task in job.tasks.values()):
        return False
    if job.count(ACTIVE_USED) == 0:
        return False
    return not job.is_gang_satisfied()


def eviction_message(task: TaskInfo, job: PodGroupInfo) -> str:
    pod = f"{task.namespace}/{task.name}"
    if len(job.pod_sets) == 1 and names.DEFAULT_SUBGROUP in job.pod_sets:
        minimum = job.pod_sets[names.DEFAULT_SUBGROUP].min_available
        return f"Workload doesn't meet the minimum required number of pods ({minimum}), evicting remaining pod: {pod}"
    pod_set = job.pod_sets.get(task.subgroup)
    if pod_set is None:
        return (
            f"Workload doesn't meet the minimum required number of pods in sub-group {task.subgroup}, "
            f"evicting remaining pod: {pod}"
        )
    return (
        f"Workload doesn't meet the minimum required number of pods ({pod_set.min_available}) in sub-group "
        f"{pod_set.name}, evicting remaining pod: {pod}"
    )


def execute(ssn: Session) -> None:
    for job in ssn.cluster.may_be_stale():  # the others are not stale and have no staleness time to clear
        if not is_stale(job):
            if job.stale_ts is not None:
                job.stale_ts = None
                ssn.result.stale_since[job.key] = None
            continue
        if job.stale_ts is None:
            job.stale_ts = ssn.now
            ssn.result.stale_since[job.key] = ssn.now
        grace = job.podgroup.stale_grace_s
        if grace is None:
            grace = ssn.config.staleness_grace_s
        if grace < 0 or ssn.now - job.stale_ts < grace:
            continue
        stmt = Statement(ssn)
        taken: list[TaskInfo] = []
        why = f"the gang has been below its minimum since {format_time(job.stale_ts)}"
        for task in [t for t in job.tasks.values() if t.status in ACTIVE_ALLOCATED]:
            if ssn.disruption.refusal([*taken, task], NAME) is None:  # the rest go in a later cycle
                taken.append(task)
                stmt.evict(task, eviction_message(task, job), why=why)
        stmt.commit(NAME, rearm_preemption_delay=False)
