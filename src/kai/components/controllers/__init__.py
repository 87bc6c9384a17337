"""Status controllers: PodGroup ``status.resourcesStatus`` and Queue ``status`` (KAI's podgroup- and
queue-controller, docs/kai-reference.md §1.5–1.6), plus the queue metrics the queue-controller exports.

Both are kept from the cluster's change events, not recomputed: a pass takes in what changed since the last one and
writes only the statuses that it changed (``podgroup_status``, ``queue_status``), so a quiet pass costs nothing at
140,000 pods. An object they cannot read is skipped and logged once (``problems``); the scheduler reports it on the
object (``kai.components.scheduler.invalid``). Like KAI's, these controllers record no events.
"""

from kai.components.controllers.default_queues import default_queue, ensure_default_queues
from kai.components.controllers.podgroup_status import MAX_DEFERRED_PASSES, PodGroupStatusController, PodGroupTotals
from kai.components.controllers.queue_status import QueueStatusController, TotalsSource
from kai.components.controllers.status_totals import StatusTotals

__all__ = [
    "MAX_DEFERRED_PASSES",
    "PodGroupStatusController",
    "PodGroupTotals",
    "QueueStatusController",
    "StatusTotals",
    "TotalsSource",
    "default_queue",
    "ensure_default_queues",
]
