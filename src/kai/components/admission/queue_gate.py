"""Queue admission gating (kai's, KAI's design for #1615): a pod of a queue that opted in is created with the
``kai.scheduler/queue-admission`` scheduling gate, so that no cluster autoscaler adds nodes for it while its queue's
quota or limit would not let it run; the scheduler's ``ungate`` action lifts the gate once the queue admits it.

The webhook does no quota arithmetic (what a queue uses is the scheduler's to know): it gates every such pod at
create, the only time a gate may be added. A pod's queue is its queue label (``kai.scheduler/queue``), else KAI's
``default-queue``; a pod whose queue does not exist is gated too (it could not run anyway, and its queue may opt in
once made; the ``ungate`` action lifts gates for queues that do not opt in).
"""

from collections.abc import Mapping
from typing import Any

from kai.core.model import names
from kai.core.model.objects import Queue

DEFAULT_QUEUE = "default-queue"


def gates_pod(pod: Mapping[str, Any], queues: Mapping[str, Queue], queue_label: str = names.QUEUE_LABEL) -> bool:
    """Whether the pod being created gets the gate (the caller checked it is the scheduler's)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    if any(isinstance(g, Mapping) and g.get("name") == names.QUEUE_ADMISSION_GATE for g in gates):
        return False
    queue = queues.get(str(labels.get(queue_label) or DEFAULT_QUEUE))
    return queue is None or queue.admission_gating


def with_gate(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod with the gate appended to its scheduling gates (a copy's spec)."""
    spec = pod.setdefault("spec", {})
    spec["schedulingGates"] = [*(spec.get("schedulingGates") or []), {"name": names.QUEUE_ADMISSION_GATE}]
    return pod
