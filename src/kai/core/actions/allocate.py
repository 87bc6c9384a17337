"""allocate: place pending jobs on free (or soon-free) resources, queue by queue, job by job.

Jobs come out of the queue tree in fair-share order. Each job is tried in its own statement: it is committed
whole or discarded whole. A gang that would wait on releasing resources is pipelined as a whole, so nothing of
it is bound until all of it can be. A job that still has pending pods (elastic growth) goes back in line.
"""

from kai.core.framework.job_allocation import allocate_job
from kai.core.framework.job_queue import JobQueueOptions, JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.state.podgroup_info import PodGroupInfo

NAME = "allocate"


def execute(ssn: Session) -> None:
    jobs = JobsOrderByQueues(
        ssn,
        JobQueueOptions(filter_non_pending=True, filter_unready=True, max_jobs_queue_depth=ssn.queue_depth(NAME)),
    )
    jobs.initialize(ssn.jobs)
    while not jobs.empty():
        job = jobs.pop()
        if job is None:
            break
        stmt = Statement(ssn)
        already_running = job.num_allocated > 0
        placed, pipelined = _attempt(ssn, stmt, job)
        if not placed:
            stmt.discard()
            continue
        stmt.commit(NAME)
        ssn.result.scheduled[NAME] = ssn.result.scheduled.get(NAME, 0) + 1
        if not pipelined and not already_running:
            job.last_start_ts = ssn.now
            ssn.result.started[job.key] = ssn.now
        if job.has_pending():
            jobs.push(job)


def _attempt(ssn: Session, stmt: Statement, job: PodGroupInfo) -> tuple[bool, bool]:
    if not allocate_job(ssn, stmt, job, pipeline_only=False):
        return False, False
    if job.should_pipeline():
        stmt.convert_allocated_to_pipelined(job.key)
        return True, True
    return True, False
