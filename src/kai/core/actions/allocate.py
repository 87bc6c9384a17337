"""allocate: place pending jobs on free (or soon-free) resources, queue by queue, job by job.

Jobs come out of the queue tree in fair-share order. Each job is tried in its own statement: it is committed
whole or discarded whole. A gang that would wait on releasing resources is pipelined as a whole, so nothing of
it is bound until all of it can be. A job that still has pending pods (elastic growth) goes back in line.

Jobs the previous cycle pipelined are tried first (kai's, not KAI's: kube-scheduler's nominated pods play the same
part). Their victims' resources were freed for them; in fair-share order a job of a queue ahead (its own head job
too big to fit, say) would take them back, be reclaimed again, and so on every cycle. Their pods go back to the nodes
they were pipelined onto where they fit (``nominatednode``): a pod a consolidation moved, placed by binpack, went back
to the node it had left.
"""

from kai.core.framework.job_allocation import allocate_job
from kai.core.framework.queueing.job_queue import JobQueueOptions, JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.state.podgroup_info import PodGroupInfo

NAME = "allocate"


def execute(ssn: Session) -> None:
    """Only jobs that may have a pending task are candidates (the queue takes only those that have one): at 100,000
    mostly running jobs, testing each for a pending task was a tenth of a cycle."""
    cluster = ssn.cluster
    pipelined = {job.key: job for job in cluster.may_wait() if job.key in cluster.pipelined_before}
    tried_first = _allocate(ssn, pipelined, set()) if pipelined else set()
    _allocate(ssn, {job.key: job for job in cluster.may_wait()}, tried_first)


def _allocate(ssn: Session, candidates: dict[str, PodGroupInfo], skip: set[str]) -> set[str]:
    """Tries ``candidates`` in fair-share order, but not those in ``skip`` (tried already, on a cluster no
    emptier); returns the keys tried."""
    jobs = JobsOrderByQueues(
        ssn,
        JobQueueOptions(filter_non_pending=True, filter_unready=True, max_jobs_queue_depth=ssn.queue_depth(NAME)),
    )
    jobs.initialize(candidates)
    tried: set[str] = set()
    while not jobs.empty():
        job = jobs.pop()
        if job is None:
            break
        if job.key in skip:
            continue
        tried.add(job.key)
        if _try(ssn, job) and job.has_pending():
            jobs.push(job)
    return tried


def _try(ssn: Session, job: PodGroupInfo) -> bool:
    """One attempt in its own statement, committed whole or discarded whole; True when it placed the job."""
    stmt = Statement(ssn)
    already_running = job.num_allocated > 0
    placed, pipelined = _attempt(ssn, stmt, job)
    if not placed:
        stmt.discard()
        return False
    stmt.commit(NAME)
    ssn.result.scheduled[NAME] = ssn.result.scheduled.get(NAME, 0) + 1
    if not pipelined and not already_running:
        job.last_start_ts = ssn.now
        ssn.result.started[job.key] = ssn.now
    return True


def _attempt(ssn: Session, stmt: Statement, job: PodGroupInfo) -> tuple[bool, bool]:
    if not allocate_job(ssn, stmt, job, pipeline_only=False):
        return False, False
    if job.should_pipeline():
        stmt.convert_allocated_to_pipelined(job.key)
        return True, True
    return True, False
