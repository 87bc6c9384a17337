"""The waiting podgroups of a view: each one's typed reasons (from the last cycle), state, place in line at every
level (from the real job order at the moment shown), the order key that puts it there, when it began to wait and
when it may start."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kai.components.insight.fixes.candidates import searchable
from kai.components.insight.fixes.found import FixSearch
from kai.components.insight.inspect import Inspection, Moment
from kai.components.insight.view import LevelPlace, OrderKey, PendingView, Place, Position, QueueTerms
from kai.components.insight.workload_podgroups import workload_of
from kai.core.cycle import typed_reasons
from kai.core.framework.queueing.job_order import JobOrder
from kai.core.model.meta import ZERO_TIME
from kai.core.plugins import elastic
from kai.core.state.pod_status import ACTIVE_USED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reason_text import describe_fix
from kai.core.state.reasons import Fix, FixKind, Reason, pipelined
from kai.core.state.reasons import amount as rounded

WAITING = frozenset({PodStatus.PENDING, PodStatus.GATED})
TIMED_FIXES = frozenset({FixKind.WAIT_UNTIL, FixKind.RECLAIM_AFTER, FixKind.WAIT_FOR_JOB})
"""Fixes that are a wait with a known end: the start can be estimated."""
GANG_TERMS = ("below its minimum", "at its minimum", "beyond its minimum")
"""elastic's job-order term, by its value."""

Prove = Callable[[str, tuple[Reason, ...]], FixSearch]
"""The fix search (``fixes.search.FixFinder.search``): what it found for a waiting podgroup, by its key and its
reasons."""


@dataclass(frozen=True)
class CycleDid:
    """What the last cycle did with a podgroup: pods placed, pipelined, and why it still waits."""

    placed: dict[str, str]
    waiting_on: dict[str, str]
    reasons: tuple[Reason, ...]
    state: str


class Line:
    """The job order with its places looked up in constant time."""

    def __init__(self, order: JobOrder) -> None:
        self.order = order
        self.cluster = {key: index + 1 for index, key in enumerate(order.jobs)}
        self.in_queue = {key: index + 1 for keys in order.by_queue.values() for index, key in enumerate(keys)}
        self.siblings = {
            uid: (index + 1, len(peers)) for peers in order.siblings.values() for index, uid in enumerate(peers)
        }


def did(ins: Inspection, key: str) -> CycleDid:
    """What the last cycle did with the podgroup ``key`` and why it waits (typed, most decisive first)."""
    result = ins.session.result
    job = ins.session.jobs.get(key) or ins.session.cluster.unschedulable_jobs.get(key)
    placed = {b.pod_key: b.node for b in result.binds if b.podgroup_key == key}
    waiting_on = {p.pod_key: p.node for p in result.pipelined if p.podgroup_key == key}
    waits = result.unschedulable.get(key)
    reasons: list[Reason] = list(waits.reasons) if waits is not None else []
    if job is not None and waits is None and job.fit_errors and any(t.status in WAITING for t in job.tasks.values()):
        reasons = list(typed_reasons(ins.session, job))  # gated only: KAI reports no condition, only an event
    if waiting_on and waits is None:
        reasons.append(pipelined(waiting_on.values()))
    starting = placed
    if ins.moment is Moment.AFTER:  # what the last cycle placed is bound by now: the podgroup as it stands says
        job = ins.shown.jobs.get(key) or ins.shown.cluster.unschedulable_jobs.get(key) or job
        starting = {}
    state = _state(job, starting, waiting_on, bool(reasons) and not waiting_on)
    return CycleDid(placed, waiting_on, tuple(reasons), state)


def nearest_fix(reasons: Sequence[Reason]) -> Fix | None:
    """The headline reason's fix, else the first other reason's: a wait with a known end dates the estimated start
    (not offered as a fix: only proven ones are)."""
    if reasons and reasons[0].fix is not None:
        return reasons[0].fix
    return next((reason.fix for reason in reasons if reason.fix is not None), None)


def _state(job: PodGroupInfo | None, placed: dict[str, str], waiting_on: dict[str, str], waits: bool) -> str:
    if waits:
        return "waiting"
    if placed:
        return "starting"
    if waiting_on:
        return "pipelined"
    if job is None:
        return "pending"
    if job.tasks and all(task.status in ACTIVE_USED for task in job.tasks.values()):
        return "running"
    if job.tasks and all(task.status is PodStatus.SUCCEEDED for task in job.tasks.values()):
        return "succeeded"
    return "nothing to schedule" if not job.has_pending() else "pending"


def position(ins: Inspection, line: Line, job: PodGroupInfo) -> Position:
    """Where the job stands in line at the moment shown, or why it is not in line."""
    place = line.in_queue.get(job.key)
    if place is not None:
        levels = []
        current = job.queue
        while current in line.siblings:
            parent = line.order.parents.get(current, "")
            at, of = line.siblings[current]
            levels.append(LevelPlace(current, at, of, parent))
            if not parent:
                break
            current = parent
        in_queue = Place(place, len(line.order.by_queue[job.queue]))
        return Position(job.queue, in_queue, tuple(levels), Place(line.cluster[job.key], len(line.order.jobs)))
    if job.key in ins.shown.cluster.unschedulable_jobs:
        why = f"its queue {job.queue} cannot be used"
    elif not any(task.status in WAITING for task in job.tasks.values()):
        why = "it has no pending pods"
    elif not job.is_ready_for_scheduling():
        why = "it is not ready: too few of its pods exist or they are gated"
    elif not job.has_pending():
        why = "all its waiting pods are gated"
    else:
        why = "it is beyond the allocate queue depth of its queue"
    return Position(job.queue, why_not=why)


def order_key(ins: Inspection, job: PodGroupInfo) -> OrderKey | None:
    """The terms the scheduler orders the job by: its queues' from the leaf up, then its own (None when its queue
    cannot be used or no plugin orders queues)."""
    session = ins.shown
    if not session.queue_order_terms_fns or job.queue not in session.queues:
        return None
    terms_of = session.queue_order_terms_fns[0]
    queues = []
    uid = job.queue
    while uid in session.queues:
        terms: dict[str, Any] = terms_of(uid, job)
        queues.append(
            QueueTerms(
                uid,
                terms["overFairShare"],
                terms["withinDeservedWithJob"],
                terms["priority"],
                rounded(terms["dominantShareWithJob"]),
                terms["created"],
            )
        )
        uid = session.queues[uid].parent
    gang = GANG_TERMS[elastic.job_key(job)] if elastic.job_key in session.job_order_keys else ""
    return OrderKey(tuple(queues), job.priority, gang, job.creation_ts)


def waiting_since(job: PodGroupInfo, now: float) -> float | None:
    """When its longest-waiting pod was created (else the podgroup); None when neither says (no creation time, in a
    cluster whose clock has one)."""
    created = [task.pod.meta.creation_ts for task in job.tasks.values() if task.status in WAITING]
    since = min((ts for ts in created if ts != ZERO_TIME), default=job.creation_ts)
    return since if since != ZERO_TIME or now == ZERO_TIME else None


def estimated_start(state: str, fix: Fix | None, now: float) -> tuple[float | None, str]:
    if state == "starting":
        return now, "the next cycle binds it (this cycle placed it)"
    if state == "pipelined":
        return None, "once the pods evicted for it are gone"
    if state != "waiting":
        return None, ""
    if fix is not None and fix.kind in TIMED_FIXES:
        return fix.evidence["until"], f"if nothing else changes: {describe_fix(fix, now)}"
    return None, "none known: it needs a fix, or others to finish (kai knows no runtimes)"


def pending_rows(ins: Inspection, line: Line) -> list[PendingView]:
    """Every podgroup with waiting pods at the moment shown: in line first, in the order the next cycle tries them,
    then the others by name."""
    session = ins.shown
    jobs = {**session.cluster.unschedulable_jobs, **session.jobs}
    waiting = [key for key, job in jobs.items() if any(t.status in WAITING for t in job.tasks.values())]
    waiting.sort(key=lambda key: (line.cluster.get(key, len(line.cluster) + 1), key))
    return [pending_row(ins, line, jobs[key]) for key in waiting]


def pending_row(ins: Inspection, line: Line, job: PodGroupInfo, prove: Prove | None = None) -> PendingView:
    """One waiting podgroup (``job`` as the moment shown has it); with ``prove``, the fixes proven for it."""
    key = job.key
    cycle = did(ins, key)
    held_by = searchable(cycle.reasons)
    pods = [task for task in job.tasks.values() if task.status in WAITING]
    row = PendingView(
        podgroup=key,
        workload=workload_of(ins.cluster, key),
        namespace=job.namespace,
        queue=job.queue,
        state=cycle.state,
        pods=len(pods),
        gpus=rounded(sum(task.gpus_quota for task in pods)),
        priority=job.priority,
        preemptible=job.preemptible,
        reasons=cycle.reasons,
        needs=held_by.fix if held_by is not None else None,
        waiting_since=waiting_since(job, ins.now),
        position=position(ins, line, job),
        order_key=order_key(ins, job),
        estimated_start=estimated_start(cycle.state, nearest_fix(cycle.reasons), ins.now),
    )
    return proven(row, prove) if prove is not None else row


def proven(row: PendingView, prove: Prove) -> PendingView:
    """The row with what the fix search found for it, when it waits."""
    return replace(row, fixes=prove(row.podgroup, row.reasons)) if row.state == "waiting" else row
