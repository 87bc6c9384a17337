"""Building the one view (``view``) from one inspection: the waiting podgroups first (their reasons are the pods'
and their waits the queues'), then the queues and the pods; then, for the rows a command shows, the fixes proven
for them (``with_fixes``)."""

from dataclasses import replace

from kai.components.insight.inspect import Inspection, Moment
from kai.components.insight.pending import Line, Prove, pending_rows, proven
from kai.components.insight.queues import queue_rows
from kai.components.insight.view import PendingView, PodView, View


def build_view(ins: Inspection, config_source: str = "") -> View:
    """``config_source``: where the scheduler config came from (a file's own, else said by the caller)."""
    pending = pending_rows(ins, Line(ins.order))
    moment = "as given" if ins.moment is Moment.GIVEN else f"after cycle {ins.cycle}"
    config = ins.scenario.config
    other = sum(
        1 for p in ins.state.pods.values() if p.scheduler_name != config.scheduler_name and not p.is_reservation
    )
    return View(
        source=ins.scenario.name,
        moment=moment,
        at=ins.now,
        config=config_source or "the input's, else KAI's default",
        queues=tuple(queue_rows(ins, pending)),
        pending=tuple(pending),
        pods=tuple(_pods(ins, pending)),
        problems=tuple(ins.problems),
        other_schedulers=other,
    )


def with_fixes(view: View, prove: Prove | None) -> View:
    """The view with the fix search run for its waiting podgroups, in the order the next cycle tries them (the
    search's one deadline reaches the first in line first); narrow the view first to search only what is shown."""
    if prove is None:
        return view
    return replace(view, pending=tuple(proven(row, prove) for row in view.pending))


def _pods(ins: Inspection, pending: list[PendingView]) -> list[PodView]:
    """Every pod of a podgroup at the moment shown, by name; a waiting one with its own reason, else its
    podgroup's headline."""
    rows = {row.podgroup: row for row in pending}
    own = ins.session.result.pod_reasons
    session = ins.shown
    pods = []
    for job in (*session.jobs.values(), *session.cluster.unschedulable_jobs.values()):
        row = rows.get(job.key)
        for task in job.tasks.values():
            waits = task.status.value in ("Pending", "Gated") and row is not None
            pods.append(
                PodView(
                    pod=task.key,
                    podgroup=job.key,
                    namespace=job.namespace,
                    queue=job.queue,
                    status=task.status.value,
                    node=task.node_name or "",
                    gpus=task.gpus_quota,
                    reason=(own.get(task.key) or row.reason) if waits and row is not None else None,
                    waiting_since=row.waiting_since if waits and row is not None else None,
                )
            )
    return sorted(pods, key=lambda pod: pod.pod)
