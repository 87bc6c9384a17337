"""The one view of a cluster every insight command shows (``kai simulate``, ``kai queues``, ``kai explain``, the
what-if's input, the dashboard): plain typed data built once from one inspection (``build``), with a JSON form.

It holds the moment it shows (the input as given, or after the last cycle: ``inspect.Moment``), a summary (pods
placed, waiting, and why), the queue tree with each queue's numbers, every waiting podgroup with its typed reason,
the fixes proven for it by running the scheduler on the changed cluster (``fixes``, when a search was run) or what
it needs that no such change gives, when it began to wait, its place in line at every level and what puts it there
(the order key, as Slurm's ``sprio`` breaks a job's priority down), and every pod. Renderers only choose and
format; a filter (``View.only``) keeps the same numbers.
"""

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from kai.components.insight.fixes.found import FixSearch, brief
from kai.components.insight.fixes.found import as_json as fixes_json
from kai.components.sim.problems import Problem
from kai.core.state.reason_text import as_json, describe_fix, fix_json
from kai.core.state.reasons import Fix, Reason

RESOURCES = {"gpu": ("GPUs", 1.0), "cpu": ("cores", 1000.0), "memory": ("GB", 1e9)}
"""The resources a queue's numbers are told in: unit and the scale from the scheduler's units."""


@dataclass(frozen=True)
class Place:
    place: int
    of: int


@dataclass(frozen=True)
class LevelPlace:
    """A queue's place among its siblings (``under`` its parent, "" at the top)."""

    queue: str
    place: int
    of: int
    under: str


@dataclass(frozen=True)
class Position:
    """Where a podgroup stands in line: in its queue, its queues among their siblings up to the top, the cluster;
    or why it is not in line."""

    queue: str
    in_queue: Place | None = None
    levels: tuple[LevelPlace, ...] = ()
    cluster: Place | None = None
    why_not: str = ""

    @property
    def in_line(self) -> bool:
        return self.in_queue is not None


@dataclass(frozen=True)
class QueueTerms:
    """What the queue order compares of one queue with the podgroup as its next job, most decisive first."""

    queue: str
    over_fair_share: bool
    within_deserved_with_job: bool
    priority: int
    fair_share_ratio: float
    """The dominant resource's share of the queue's fair share with the job (DRF); the lower goes first."""
    created: float


@dataclass(frozen=True)
class OrderKey:
    """What puts a podgroup where it stands: its queues from the leaf up (siblings are compared at each level), then
    its own terms inside its queue."""

    queues: tuple[QueueTerms, ...]
    priority: int
    gang: str
    """elastic's term: below its minimum, at it, or beyond it."""
    created: float


@dataclass(frozen=True)
class PendingView:
    podgroup: str
    workload: str | None
    """``Kind/name`` of the workload that owns it."""
    namespace: str
    queue: str
    state: str
    pods: int
    """Its waiting pods."""
    gpus: float
    """GPUs its waiting pods ask for."""
    priority: int
    preemptible: bool
    reasons: tuple[Reason, ...]
    """Typed, most decisive first."""
    needs: Fix | None
    """What a reason no change of quota, room or nodes can lift asks for (a smaller request, the queue created, a
    gate removed…; ``fixes.candidates.searchable``); None when the fix search covers its reasons."""
    waiting_since: float | None
    position: Position
    order_key: OrderKey | None
    estimated_start: tuple[float | None, str]
    """(when, on what basis); when None: not known."""
    fixes: FixSearch | None = None
    """What the fix search found: fixes proven by a what-if run of the changed input (None: no search was run)."""

    @property
    def reason(self) -> Reason | None:
        return self.reasons[0] if self.reasons else None

    def fix_text(self, now: float) -> str:
        """What starts it, in a listing's words: the search's (``found.brief``), else what it needs ("" when
        neither)."""
        told = brief(self.fixes) if self.fixes is not None else ""
        if told:
            return told
        return f"needs: {describe_fix(self.needs, now)}" if self.needs is not None else ""


@dataclass(frozen=True)
class Amounts:
    """A queue's numbers for one resource, in the resource's unit (``RESOURCES``); -1: unlimited."""

    quota: float
    limit: float
    weight: float
    deserved: float
    fair_share: float
    allocated: float
    requested: float
    usage: float | None
    """Recent usage (time-based fair share), as a share of the cluster; None when it is off."""
    borrows: tuple[tuple[str, float], ...] = ()
    lends: tuple[tuple[str, float], ...] = ()
    unassigned: float = 0.0
    """Borrowed beyond every sibling's idle quota: from capacity no quota claims."""


@dataclass(frozen=True)
class QueueView:
    queue: str
    parent: str
    depth: int
    priority: int
    order: Place | None
    """Its place among its siblings for the next cycle (by their best jobs)."""
    in_line: int
    """Podgroups of its subtree in line for the next cycle."""
    running: int
    """Podgroups of its subtree with pods placed."""
    running_pods: int
    pending: int
    """Podgroups of its subtree with waiting pods."""
    pending_pods: int
    oldest_pending: float | None
    """When its subtree's longest-waiting podgroup began to wait."""
    resources: Mapping[str, Amounts]
    problem: str = ""
    """Why kai cannot use it ("" when it can: then ``resources`` holds its numbers)."""


@dataclass(frozen=True)
class PodView:
    pod: str
    podgroup: str
    namespace: str
    queue: str
    status: str
    node: str
    gpus: float
    reason: Reason | None
    """Why it waits: its own reason, else its podgroup's headline."""
    waiting_since: float | None = None
    """When its podgroup began to wait (a waiting pod's)."""


@dataclass(frozen=True)
class Summary:
    pods: int
    placed: int
    waiting: int
    finished: int
    by_reason: tuple[tuple[str, int], ...]
    """Waiting pods by the kind of their reason, most first."""
    other_schedulers: int
    """Pods of other schedulers (they only take room)."""
    errors: int
    warnings: int


@dataclass(frozen=True)
class View:
    source: str
    moment: str
    """What the numbers are of: "as given", or "after cycle N"."""
    at: float
    config: str
    """Where the scheduler config came from."""
    queues: tuple[QueueView, ...]
    pending: tuple[PendingView, ...]
    """In the order the next cycle tries them, then those not in line."""
    pods: tuple[PodView, ...]
    problems: tuple[Problem, ...]
    other_schedulers: int = 0
    filters: Mapping[str, str] = field(default_factory=dict)

    @property
    def summary(self) -> Summary:
        return summary_of(self.pods, self.other_schedulers, self.problems)

    def only(
        self,
        queues: frozenset[str] | None = None,
        namespace: str | None = None,
        pending: bool = False,
        whole_tree: bool = False,
    ) -> "View":
        """The same view narrowed to ``queues`` (names, with their subtrees already expanded; the tree too unless
        ``whole_tree``), a namespace, or the waiting pods; the queues' numbers stay those of the whole cluster."""
        pods, rows, tree = self.pods, self.pending, self.queues
        filters = dict(self.filters)
        if queues is not None:
            pods = tuple(p for p in pods if p.queue in queues)
            rows = tuple(r for r in rows if r.queue in queues)
            tree = tree if whole_tree else tuple(q for q in tree if q.queue in queues)
            filters["queue"] = ", ".join(sorted(queues))
        if namespace is not None:
            pods = tuple(p for p in pods if p.namespace == namespace)
            rows = tuple(r for r in rows if r.namespace == namespace)
            filters["namespace"] = namespace
        if pending:
            pods = tuple(p for p in pods if p.status in WAITING_STATUSES)
            filters["pending"] = "yes"
        return replace(self, pods=pods, pending=rows, queues=tree, filters=filters)


WAITING_STATUSES = frozenset({"Pending", "Gated"})
PLACED_STATUSES = frozenset({"Allocated", "Pipelined", "Binding", "Bound", "Running", "Releasing", "StuckInReleasing"})
FINISHED_STATUSES = frozenset({"Succeeded", "Failed"})


def summary_of(pods: tuple[PodView, ...], other_schedulers: int, problems: tuple[Problem, ...]) -> Summary:
    statuses = Counter(pod.status for pod in pods)
    reasons = Counter(
        pod.reason.kind.value if pod.reason is not None else "Unknown" for pod in pods if pod.status in WAITING_STATUSES
    )
    return Summary(
        len(pods),
        sum(n for status, n in statuses.items() if status in PLACED_STATUSES),
        sum(n for status, n in statuses.items() if status in WAITING_STATUSES),
        sum(n for status, n in statuses.items() if status in FINISHED_STATUSES),
        tuple(sorted(reasons.items(), key=lambda item: (-item[1], item[0]))),
        other_schedulers,
        sum(1 for p in problems if p.severity == "error"),
        sum(1 for p in problems if p.severity != "error"),
    )


# ---------------------------------------------------------------------------------------------------------- JSON


def view_json(view: View) -> dict[str, Any]:
    return {
        "source": view.source,
        "moment": view.moment,
        "at": view.at,
        "config": view.config,
        "filters": dict(view.filters),
        "summary": summary_json(view.summary),
        "queues": [queue_json(queue) for queue in view.queues],
        "pending": [pending_json(row, view.at) for row in view.pending],
        "pods": [pod_json(pod, view.at) for pod in view.pods],
        "problems": [asdict(problem) for problem in view.problems],  # as kai simulate --json lists them
    }


def summary_json(summary: Summary) -> dict[str, Any]:
    return {
        "pods": summary.pods,
        "placed": summary.placed,
        "waiting": summary.waiting,
        "finished": summary.finished,
        "waitingByReason": dict(summary.by_reason),
        "otherSchedulers": summary.other_schedulers,
        "errors": summary.errors,
        "warnings": summary.warnings,
    }


def queue_json(queue: QueueView) -> dict[str, Any]:
    return {
        "queue": queue.queue,
        "parent": queue.parent,
        "depth": queue.depth,
        "priority": queue.priority,
        "order": _place(queue.order),
        "inLine": queue.in_line,
        "running": queue.running,
        "runningPods": queue.running_pods,
        "pending": queue.pending,
        "pendingPods": queue.pending_pods,
        "oldestPending": queue.oldest_pending,
        "problem": queue.problem,
        "resources": {
            name: {
                "unit": RESOURCES[name][0],
                "quota": amounts.quota,
                "limit": amounts.limit,
                "weight": amounts.weight,
                "deserved": amounts.deserved,
                "fairShare": amounts.fair_share,
                "allocated": amounts.allocated,
                "requested": amounts.requested,
                "usage": amounts.usage,
                "borrows": [{"from": lender, "amount": n} for lender, n in amounts.borrows],
                "lends": [{"to": borrower, "amount": n} for borrower, n in amounts.lends],
                "unassigned": amounts.unassigned,
            }
            for name, amounts in queue.resources.items()
        },
    }


def pending_json(row: PendingView, now: float) -> dict[str, Any]:
    at, basis = row.estimated_start
    return {
        "podgroup": row.podgroup,
        "workload": row.workload,
        "namespace": row.namespace,
        "queue": row.queue,
        "state": row.state,
        "pods": row.pods,
        "gpus": row.gpus,
        "priority": row.priority,
        "preemptible": row.preemptible,
        "reason": as_json(row.reason, now) if row.reason is not None else None,
        "needs": fix_json(row.needs, now) if row.needs is not None else None,
        "fixes": fixes_json(row.fixes, now) if row.fixes is not None else None,
        "waitingSince": row.waiting_since,
        "position": position_json(row.position),
        "orderKey": order_key_json(row.order_key),
        "estimatedStart": {"at": at, "basis": basis},
    }


def pod_json(pod: PodView, now: float) -> dict[str, Any]:
    return {
        "pod": pod.pod,
        "podgroup": pod.podgroup,
        "namespace": pod.namespace,
        "queue": pod.queue,
        "status": pod.status,
        "node": pod.node,
        "gpus": pod.gpus,
        "reason": as_json(pod.reason, now) if pod.reason is not None else None,
        "waitingSince": pod.waiting_since,
    }


def position_json(position: Position) -> dict[str, Any]:
    if not position.in_line:
        return {"inLine": False, "why": position.why_not}
    return {
        "inLine": True,
        "inQueue": {"queue": position.queue, **(_place(position.in_queue) or {})},
        "queues": [{"queue": q.queue, "place": q.place, "of": q.of, "under": q.under} for q in position.levels],
        "cluster": _place(position.cluster),
    }


def order_key_json(key: OrderKey | None) -> dict[str, Any] | None:
    if key is None:
        return None
    return {
        "queues": [
            {
                "queue": terms.queue,
                "overFairShare": terms.over_fair_share,
                "withinDeservedWithJob": terms.within_deserved_with_job,
                "priority": terms.priority,
                "fairShareRatio": terms.fair_share_ratio,
                "created": terms.created,
            }
            for terms in key.queues
        ],
        "priority": key.priority,
        "gang": key.gang,
        "created": key.created,
    }


def _place(place: Place | None) -> dict[str, int] | None:
    return {"place": place.place, "of": place.of} if place is not None else None
