"""Where each pending job stands in line: the order allocate would try jobs in, at session open.

The same order as KAI's reflectjoborder plugin (``/get-job-order``): ready jobs with pending pods, popped from the
queue tree one after another (fair-share queue order, then job order), at most the allocate queue depth per queue.
Beside it, the order of sibling queues at that moment (each by its best job), so a job's place can be told at every
level: its place in its queue, its queue's place among its siblings, and so up to the top.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cmp_to_key

from kai.core.framework.queueing.job_queue import JobQueueOptions, JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.queue_info import QueueInfo

ALLOCATE = "allocate"


@dataclass(frozen=True, slots=True)
class JobOrder:
    jobs: tuple[str, ...]
    """Pending job keys in the order allocate would try them."""
    by_queue: Mapping[str, tuple[str, ...]]
    """Each leaf queue's jobs in that order."""
    siblings: Mapping[str, tuple[str, ...]]
    """Per parent queue ("" for the top level), its children best first."""
    parents: Mapping[str, str]
    """Each queue's parent ("" at the top)."""

    def place(self, job_key: str, queue: str) -> list[tuple[str, int, int]]:
        """(queue, 1-based place, out of) from the job in its queue up through each ancestor among its siblings;
        empty when the job is not in line (not pending, not ready, or beyond the queue depth)."""
        line = self.by_queue.get(queue, ())
        if job_key not in line:
            return []
        places = [(queue, line.index(job_key) + 1, len(line))]
        current = queue
        while True:
            parent = self.parents.get(current, "")
            peers = self.siblings.get(parent, ())
            if current not in peers:
                break
            places.append((current, peers.index(current) + 1, len(peers)))
            if not parent:
                break
            current = parent
        return places


def job_order(ssn: Session) -> JobOrder:
    """Call on a freshly opened session, before any action changes allocations."""
    queue = JobsOrderByQueues(
        ssn,
        JobQueueOptions(filter_non_pending=True, filter_unready=True, max_jobs_queue_depth=ssn.queue_depth(ALLOCATE)),
    )
    queue.initialize(ssn.jobs)
    order: list[PodGroupInfo] = []
    while not queue.empty():
        job = queue.pop()
        if job is None:
            break
        order.append(job)
    by_queue: dict[str, list[str]] = {}
    for job in order:
        by_queue.setdefault(job.queue, []).append(job.key)
    heads = {name: ssn.jobs[keys[0]] for name, keys in by_queue.items()}
    siblings: dict[str, tuple[str, ...]] = {}
    parents = {uid: info.parent if info.parent in ssn.queues else "" for uid, info in ssn.queues.items()}
    _rank(ssn, "", [uid for uid, parent in parents.items() if not parent], heads, siblings)
    return JobOrder(tuple(job.key for job in order), {k: tuple(v) for k, v in by_queue.items()}, siblings, parents)


def _rank(
    ssn: Session,
    parent: str,
    children: list[str],
    heads: dict[str, PodGroupInfo],
    siblings: dict[str, tuple[str, ...]],
) -> None:
    """Order ``children`` by the queue order of their best jobs (queues with nothing pending last), deepest first,
    recording each inner queue's best job as its own head."""
    for child in children:
        grandchildren = ssn.queues[child].children
        if grandchildren:
            _rank(ssn, child, grandchildren, heads, siblings)
            best = next((heads[q] for q in siblings[child] if q in heads), None)
            if best is not None:
                heads[child] = best

    def compare(left: QueueInfo, right: QueueInfo) -> int:
        lj, rj = heads.get(left.uid), heads.get(right.uid)
        if lj is None or rj is None:
            return (lj is None) - (rj is None)
        if ssn.queue_less(left, right, lj, rj, [], []):
            return -1
        return 1 if ssn.queue_less(right, left, rj, lj, [], []) else 0

    ordered = sorted((ssn.queues[c] for c in children), key=cmp_to_key(compare))
    siblings[parent] = tuple(queue.uid for queue in ordered)


def reflect(ssn: Session, order: JobOrder) -> dict[str, object]:
    """KAI's ``/get-job-order`` answer: podgroup UIDs with their priority, globally and per queue."""

    def entry(key: str) -> dict[str, object]:
        job = ssn.jobs[key]
        return {"id": job.podgroup.meta.uid, "priority": job.priority}

    return {
        "global_order": [entry(key) for key in order.jobs],
        "queue_order": {queue: [entry(key) for key in keys] for queue, keys in order.by_queue.items()},
    }
