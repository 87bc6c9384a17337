"""KAI's ``--full-hierarchy-fairness=false`` (its reclaim suite's "Hierarchy level fairness"): the departments —
queues without a parent — stop counting, every other queue shares one unlimited top queue. A pod held back by its
department's limit is scheduled once the scheduler runs so."""

from __future__ import annotations

from pathlib import Path

from controlplane import ControlPlane
from kai_support import Kai, apply, gpu_pod, kai_all, kubectl_json, wait_until
from test_explain import bound, queue_tree
from testcluster import Kwok


def test_without_full_hierarchy_fairness_a_departments_limit_no_longer_holds_its_queues(
    control_plane: ControlPlane, namespace: str, kwok: Kwok, tmp_path: Path
) -> None:
    pool, department, queue = f"flat-{namespace}", f"d-{namespace}", f"q-{namespace}"
    kwok.node(f"{pool}-gpu", 2, {"pool": pool})
    queue_tree(control_plane, tmp_path, department, (queue, {"quota": 0}))
    control_plane.kubectl(
        "patch", "queue", department, "--type=merge", "-p", '{"spec":{"resources":{"gpu":{"quota":0,"limit":0}}}}'
    )
    with kai_all(control_plane, tmp_path / "kai.log") as kai:
        apply(control_plane, tmp_path, gpu_pod(namespace, "held", queue, pool, 1))
        reason = wait_until("the pod to wait with a reason", lambda: _waiting(control_plane, namespace))
        assert department in reason, reason  # the department's limit holds it
        assert not bound(control_plane, namespace, "held")
        kai.stop()
    flat = Kai(control_plane, tmp_path / "flat.log", "--full-hierarchy-fairness=false")
    try:
        wait_until("the pod to be scheduled under the one top queue", lambda: bound(control_plane, namespace, "held"))
    finally:
        flat.stop()


def _waiting(cp: ControlPlane, namespace: str) -> str:
    """The message of the pod's PodScheduled=False condition ("" before there is one)."""
    conditions = kubectl_json(cp, "get", "pod", "held", "-n", namespace).get("status", {}).get("conditions") or []
    waiting = [c for c in conditions if c["type"] == "PodScheduled" and c["status"] == "False"]
    return str(waiting[0].get("message") or "") if waiting else ""
