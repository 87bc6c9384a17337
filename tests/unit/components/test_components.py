"""Components against the in-memory cluster: scheduler loop → BindRequest → binder → bound pod; status controllers."""

from typing import Any

import yaml
from repo import REPO

from kai.cluster.memory import MemoryCluster
from kai.cluster.port import Listener, Raw
from kai.components.binder.component import Binder
from kai.components.controllers import (
    MAX_DEFERRED_PASSES,
    PodGroupStatusController,
    QueueStatusController,
    ensure_default_queues,
)
from kai.components.podgrouper import PodGrouper
from kai.components.scheduler.loop import ASSUME_S, HOLD_S, SchedulerLoop
from kai.core.framework.config import SchedulerConfig


def _cluster() -> MemoryCluster:
    doc = yaml.safe_load((REPO / "examples" / "department.yaml").read_text())
    return MemoryCluster(doc["objects"])


def test_scheduler_writes_bind_requests_and_binder_binds() -> None:
    cluster = _cluster()
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: 1_767_225_600.0)
    session = loop.run_once()
    assert len(session.result.binds) == 6
    requests = {r["metadata"]["name"]: r for r in cluster.list("BindRequest")}
    assert requests["inference-light"]["spec"]["receivedResourceType"] == "Fraction"
    selected = requests["training-job"]["spec"]["selectedNode"]
    assert selected.startswith("gpu-node-")
    assert Binder(cluster, lambda: 0.0).reconcile() == 6
    pod = cluster.get("Pod", "ml/training-job")
    assert pod is not None and pod["spec"]["nodeName"] == selected
    assert any(c["type"] == "PodBound" and c["status"] == "True" for c in pod["status"]["conditions"])
    reservations = [p for p in cluster.list("Pod") if p["metadata"]["namespace"] == "kai-resource-reservation"]
    assert len(reservations) == 1
    assert loop.run_once().result.binds == []  # nothing is bound twice


def test_over_limit_pod_waits_with_kai_reason() -> None:
    cluster = _cluster()
    worker = cluster.get("Pod", "ml/training-job")
    assert worker is not None
    resources = worker["spec"]["containers"][0]["resources"]
    resources["requests"]["nvidia.com/gpu"] = resources.setdefault("limits", {})["nvidia.com/gpu"] = "21"
    cluster.update("Pod", worker)
    SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: 0.0).run_once()
    podgroup = cluster.get("PodGroup", "ml/training-job")
    assert podgroup is not None
    condition = podgroup["status"]["schedulingConditions"][0]
    # allocate says OverLimit; as in KAI v0.17, the evicting actions add that no node is large enough (21 GPUs in
    # one pod, 8 per node at most), so the podgroup carries both reasons
    assert condition["reasons"][0]["reason"] == "Unschedulable"
    assert "equipe-training quota has reached the allowable limit of GPUs" in condition["message"]
    assert (
        "Max GPU resources available in a single node in the default node-pool is topped at 8" in condition["message"]
    )
    pod = cluster.get("Pod", "ml/training-job")
    assert pod is not None
    scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["status"] == "False" and scheduled["reason"] == "Unschedulable"
    events = [e for e in cluster.list("Event") if e["involvedObject"]["name"] == "training-job"]
    assert {e["reason"] for e in events} >= {"Unschedulable"}


def test_status_controllers_sum_allocations_up_the_hierarchy() -> None:
    cluster = _cluster()
    SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: 0.0).run_once()
    Binder(cluster, lambda: 0.0).reconcile()
    podgroups = PodGroupStatusController(cluster)
    podgroups.reconcile()
    distributed = cluster.get("PodGroup", "ml/distributed-training")
    assert distributed is not None and distributed["status"]["resourcesStatus"]["allocated"]["nvidia.com/gpu"] == "16"
    QueueStatusController(cluster, podgroups).reconcile()
    department = cluster.get("Queue", "departement-ml")
    assert department is not None
    assert department["status"]["allocated"]["nvidia.com/gpu"] == "17500m"
    assert department["status"]["childQueues"] == ["equipe-inference", "equipe-training"]
    inference = cluster.get("PodGroup", "ml/inference-light")
    assert inference is not None and inference["status"]["resourcesStatus"]["allocated"]["nvidia.com/gpu"] == "500m"


def test_status_controllers_remove_what_is_no_longer_allocated() -> None:
    """The status writes are merge patches: a resource a queue or podgroup no longer holds must leave its status,
    not stay behind from the last write."""
    cluster = _cluster()
    SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: 0.0).run_once()
    Binder(cluster, lambda: 0.0).reconcile()
    podgroups = PodGroupStatusController(cluster)
    queues = QueueStatusController(cluster, podgroups)
    podgroups.reconcile()
    queues.reconcile()
    training = cluster.get("Queue", "equipe-training")
    assert training is not None and "nvidia.com/gpu" in training["status"]["allocated"]
    for pod in cluster.list("Pod"):
        if pod["metadata"]["namespace"] == "ml":
            cluster.delete("Pod", f"ml/{pod['metadata']['name']}")
            cluster.finalize("Pod", f"ml/{pod['metadata']['name']}")
    podgroups.reconcile()
    queues.reconcile()
    training = cluster.get("Queue", "equipe-training")
    assert training is not None and "nvidia.com/gpu" not in training["status"].get("allocated", {})
    podgroup = cluster.get("PodGroup", "ml/training-job")
    assert podgroup is not None
    assert "nvidia.com/gpu" not in podgroup["status"]["resourcesStatus"].get("allocated", {})


def test_default_queues_are_created_once() -> None:
    cluster = MemoryCluster()
    ensure_default_queues(cluster)
    ensure_default_queues(cluster)
    queues = {q["metadata"]["name"]: q for q in cluster.list("Queue")}
    assert queues["default-queue"]["spec"]["parentQueue"] == "default-parent-queue"
    assert set(queues) == {"default-parent-queue", "default-queue"}


def test_podgrouper_groups_the_seed_training_pod() -> None:
    seed = yaml.safe_load((REPO / "examples" / "seed" / "training-job.yaml").read_text())
    seed["metadata"]["namespace"] = "default"
    seed["metadata"]["uid"] = "u-1"
    cluster = MemoryCluster([seed, {"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50}])
    assert PodGrouper(cluster).reconcile() == 1
    assert PodGrouper(cluster).reconcile() == 0
    podgroup = cluster.get("PodGroup", "default/pg-training-job-u-1")
    assert podgroup is not None
    assert podgroup["spec"] == {"minMember": 1, "queue": "equipe-training", "priorityClassName": "train"}
    pod = cluster.get("Pod", "default/training-job")
    assert pod is not None and pod["metadata"]["annotations"]["pod-group-name"] == "pg-training-job-u-1"


def test_binder_reports_a_failed_bind_and_rolls_back() -> None:
    cluster = _cluster()
    SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: 0.0).run_once()
    binder = Binder(cluster, lambda: 0.0)

    def refuse(namespace: str, name: str, node: str, uid: str = "", annotations: Any = None) -> None:
        raise RuntimeError(f"node {node} refused {namespace}/{name}")

    cluster.bind_pod = refuse  # type: ignore[method-assign]
    assert binder.reconcile() == 0
    request = cluster.get("BindRequest", "ml/inference-light")
    assert request is not None and request["status"]["phase"] == "Failed"
    assert "refused ml/inference-light" in request["status"]["reason"]
    pod = cluster.get("Pod", "ml/inference-light")
    assert pod is not None and "runai-gpu-group" not in pod["metadata"].get("labels", {})
    assert not [
        p
        for p in cluster.list("Pod")
        if p["metadata"]["namespace"] == "kai-resource-reservation" and not p["metadata"].get("deletionTimestamp")
    ]


def test_mark_unschedulable_false_gives_the_event_without_the_condition() -> None:
    cluster = _cluster()
    podgroup = cluster.get("PodGroup", "ml/training-job")
    pod = cluster.get("Pod", "ml/training-job")
    assert podgroup is not None and pod is not None
    podgroup["spec"]["markUnschedulable"] = False
    cluster.update("PodGroup", podgroup)
    resources = pod["spec"]["containers"][0]["resources"]
    resources["requests"]["nvidia.com/gpu"] = resources.setdefault("limits", {})["nvidia.com/gpu"] = "21"
    cluster.update("Pod", pod)
    SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: 0.0).run_once()
    pod = cluster.get("Pod", "ml/training-job")
    assert pod is not None
    assert not any(c["type"] == "PodScheduled" for c in pod.get("status", {}).get("conditions", []))
    events = [e for e in cluster.list("Event") if e["involvedObject"]["name"] == "training-job"]
    assert any(e["reason"] == "Unschedulable" and e["involvedObject"]["kind"] == "Pod" for e in events)


class _LaggingBindRequestInformer(MemoryCluster):
    """A cluster whose BindRequest informer shows nothing (it backs off, as after an API server restart)."""

    def get(self, kind: str, key: str) -> Raw | None:
        return None if kind == "BindRequest" else super().get(kind, key)

    def subscribe(self, listener: Listener) -> None:
        super().subscribe(lambda kind, obj, deleted: None if kind == "BindRequest" else listener(kind, obj, deleted))


def test_a_created_bind_request_counts_before_its_informer_shows_it() -> None:
    doc = yaml.safe_load((REPO / "examples" / "department.yaml").read_text())
    cluster = _LaggingBindRequestInformer(doc["objects"])
    now = [1_767_225_600.0]
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: now[0])
    assert len(loop.run_once().result.binds) == 6
    assert len(loop.in_flight.assumed) == 6
    # the next cycles see the six pods as bound where they were placed: nothing placed again, no node's room reused
    assert loop.run_once().result.binds == []
    assert len(cluster.list("BindRequest")) == 6
    # an informer that never shows them in time: they are dropped (and the pods, still pending, placed again)
    now[0] += ASSUME_S + 1
    assert len(loop.run_once().result.binds) == 6


def test_a_bind_request_deleted_before_its_pod_is_bound_still_holds_the_node() -> None:
    cluster = _cluster()
    now = [1_767_225_600.0]
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: now[0])
    assert len(loop.run_once().result.binds) == 6
    # deleted while the binder may be binding: the pod keeps its node until it is shown bound
    cluster.delete("BindRequest", "ml/training-job")
    cluster.delete("BindRequest", "ml/inference-light")
    assert loop.run_once().result.binds == []
    assert set(loop.in_flight.held) == {"ml/training-job", "ml/inference-light"}
    # one is bound (by a binder that read its request before the delete): the hold ends, the pod is placed
    pod = cluster.get("Pod", "ml/training-job")
    assert pod is not None
    cluster.bind_pod("ml", "training-job", "gpu-node-1")
    assert set(loop.in_flight.held) == {"ml/inference-light"}
    assert loop.run_once().result.binds == []
    # the other is never bound: after a while it is pending again and placed again
    now[0] += HOLD_S + 1
    assert [bind.pod_key for bind in loop.run_once().result.binds] == ["ml/inference-light"]


def test_a_settling_podgroup_status_is_written_once_it_holds_for_a_pass_and_never_rewritten_unchanged() -> None:
    """A pod placed between two passes costs its PodGroup one status write (allocated), not two; an unchanged
    status is not written again."""
    cluster = _cluster()
    controller = PodGroupStatusController(cluster, settle=True)
    writes: list[str] = []
    patch_status = cluster.patch_status

    def counted(kind: str, key: str, status: Raw, **options: Any) -> Raw:
        if kind == "PodGroup":
            writes.append(key)
        return patch_status(kind, key, status, **options)

    cluster.patch_status = counted  # type: ignore[method-assign]

    def resources(key: str) -> Any:
        podgroup = cluster.get("PodGroup", key)
        assert podgroup is not None
        return (podgroup.get("status") or {}).get("resourcesStatus")

    controller.reconcile()  # every pod pending: its requests are wanted, not written yet
    assert writes == [] and resources("ml/training-job") is None
    SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: 0.0).run_once()
    Binder(cluster, lambda: 0.0).reconcile()
    controller.reconcile()  # placed meanwhile: the allocation is new, so it waits one pass
    assert writes == []
    controller.reconcile()
    assert "ml/training-job" in writes
    assert resources("ml/training-job")["allocated"]["nvidia.com/gpu"] == "1"
    written = len(writes)
    controller.reconcile()
    assert len(writes) == written


def test_a_podgroup_status_that_keeps_changing_is_still_written_every_few_passes() -> None:
    cluster = _cluster()
    controller = PodGroupStatusController(cluster, settle=True)
    pod = cluster.get("Pod", "ml/training-job")
    assert pod is not None
    for passes in range(1, MAX_DEFERRED_PASSES + 2):
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = f"{passes}"
        cluster.update("Pod", pod)
        pod = cluster.get("Pod", "ml/training-job")
        assert pod is not None
        controller.reconcile()
        podgroup = cluster.get("PodGroup", "ml/training-job")
        assert podgroup is not None
        written = (podgroup.get("status") or {}).get("resourcesStatus")
        if passes <= MAX_DEFERRED_PASSES:
            assert written is None
    assert written is not None and written["requested"]["cpu"] == str(MAX_DEFERRED_PASSES + 1)
