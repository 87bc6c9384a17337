"""The one view model's JSON form (``kai.components.insight.view.view_json``, issue 27) from what
``kai.components.insight`` offers on main today: the queue tree and the waiting podgroups of ``kai queues``, with the
keys the view model gives them. A thin stand-in, dropped for ``view_json(build_view(ins, config))`` once that lands
on main: the pages read only this document, so they do not change then.
"""

from typing import Any

from kai.components.insight.inspect import Inspection, inspect
from kai.components.insight.queues import NoQueues, pending, queue_tree
from kai.components.sim.scenario import Scenario
from kai.components.sim.timeline import TimelineSample, sample_of
from kai.core.framework.session import Session
from kai.core.state.pod_status import ACTIVE_USED, PodStatus

WAITING = frozenset({PodStatus.PENDING, PodStatus.GATED})


def view_document(ins: Inspection, config_source: str) -> dict[str, Any]:
    try:
        tree = queue_tree(ins)
    except NoQueues:
        tree = []
    rows = [row for queue in tree if not queue["parent"] for row in pending(ins, queue["queue"])]
    in_line = sum(1 for row in rows if row["place"] is not None)
    return {
        "source": ins.scenario.name,
        "moment": "as the last cycle found it",
        "at": ins.now,
        "config": config_source,
        "summary": _summary(shown_session(ins), rows),
        "queues": [_queue(queue) for queue in tree],
        "pending": [_pending(row, in_line) for row in rows],
        "problems": [
            {"severity": p.severity, "kind": p.kind, "name": p.name, "field": p.field, "problem": p.problem}
            for p in ins.problems
        ],
    }


def inspected(scenario: Scenario, live: bool) -> Inspection:
    """A look at ``scenario``: a live cluster as it is, a file after its cycles."""
    return inspect(scenario)


def shown_session(ins: Inspection) -> Session:
    """The session of the moment the view shows (nodes and shares as the last cycle found them)."""
    return ins.opened


def timeline(ins: Inspection) -> list[TimelineSample]:
    """Each cycle's per-queue allocation and fair share (the run's timeline)."""
    start = ins.cycles[0].session.now if ins.cycles else ins.now
    return [sample_of(r.number, r.session.now, r.session.now - start, r.session) for r in ins.cycles]


def _queue(row: dict[str, Any]) -> dict[str, Any]:
    return {("inLine" if key == "pendingInLine" else key): value for key, value in row.items()}


def _pending(row: dict[str, Any], in_line: int) -> dict[str, Any]:
    place = row["place"]
    return {
        "podgroup": row["podgroup"],
        "workload": row["workload"],
        "namespace": row["podgroup"].partition("/")[0],
        "queue": row["queue"],
        "state": row["state"],
        "pods": row["pods"],
        "gpus": row["gpus"],
        "reason": row["reason"],
        "nearestFix": row["nearestFix"],
        "provenFixes": [],
        "waitingSince": None,
        "position": {"inLine": True, "cluster": {"place": place, "of": in_line}}
        if place is not None
        else {"inLine": False, "why": ""},
        "estimatedStart": row["estimatedStart"],
    }


def _summary(session: Session, rows: list[dict[str, Any]]) -> dict[str, Any]:
    tasks = [t for job in session.jobs.values() for t in job.tasks.values()]
    by_reason: dict[str, int] = {}
    for row in rows:
        kind = row["reason"]["kind"] if row["reason"] else row["state"]
        by_reason[kind] = by_reason.get(kind, 0) + row["pods"]
    return {
        "pods": len(tasks),
        "placed": sum(1 for t in tasks if t.status in ACTIVE_USED),
        "waiting": sum(1 for t in tasks if t.status in WAITING),
        "waitingByReason": dict(sorted(by_reason.items(), key=lambda item: (-item[1], item[0]))),
    }
