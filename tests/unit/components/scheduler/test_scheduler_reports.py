"""What the scheduler tells users on the objects (in-memory cluster): Unschedulable events counted on one Event,
conditions written on change and cleared once the podgroup is scheduled, bad objects reported once each."""

from collections import Counter
from typing import Any

import yaml
from repo import REPO

from kai.cluster.memory import MemoryCluster
from kai.components.binder.component import Binder
from kai.components.scheduler.loop import SchedulerLoop
from kai.core.framework.config import SchedulerConfig
from kai.core.model.errors import InvalidObject


class Clock:
    def __init__(self) -> None:
        self.now = 1_767_225_600.0

    def __call__(self) -> float:
        return self.now


def department() -> MemoryCluster:
    doc = yaml.safe_load((REPO / "examples" / "department.yaml").read_text())
    return MemoryCluster(doc["objects"])


def events_about(cluster: MemoryCluster, kind: str, name: str) -> list[dict[str, Any]]:
    return [
        e for e in cluster.list("Event") if e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"] == name
    ]


def condition(cluster: MemoryCluster, kind: str, key: str, condition_type: str) -> dict[str, Any] | None:
    obj = cluster.get(kind, key)
    assert obj is not None
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == condition_type), None)


def change(cluster: MemoryCluster, kind: str, key: str, edit: Any) -> None:
    obj = cluster.get(kind, key)
    assert obj is not None
    edit(obj)
    cluster.update(kind, obj)


def request_gpus(gpus: str) -> Any:
    def edit(pod: dict[str, Any]) -> None:
        resources = pod["spec"]["containers"][0]["resources"]
        resources["requests"]["nvidia.com/gpu"] = resources.setdefault("limits", {})["nvidia.com/gpu"] = gpus

    return edit


def test_a_waiting_pod_has_one_counted_event_and_its_condition_until_it_is_scheduled() -> None:
    cluster, clock = department(), Clock()
    # 5 GPUs: over the queue's limit (16 of 20 in use) yet within a node's 8, so OverLimit stays the only reason
    change(cluster, "Pod", "ml/training-job", request_gpus("5"))
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=clock)
    for _ in range(70):  # cycles a second apart
        loop.run_once()
        clock.now += 1
    [pod_event] = [e for e in events_about(cluster, "Pod", "training-job") if e["reason"] == "Unschedulable"]
    assert pod_event["type"] == "Warning" and pod_event["count"] > 1
    assert "equipe-training quota has reached the allowable limit of GPUs" in pod_event["message"]
    [group_event] = events_about(cluster, "PodGroup", "training-job")
    assert (group_event["type"], group_event["reason"]) == ("Normal", "Unschedulable")
    scheduled = condition(cluster, "Pod", "ml/training-job", "PodScheduled")
    assert scheduled is not None and scheduled["message"] == pod_event["message"]
    podgroup = cluster.get("PodGroup", "ml/training-job")
    assert podgroup is not None and podgroup["status"]["schedulingConditions"][0]["transitionID"] == "1"

    change(cluster, "Pod", "ml/training-job", request_gpus("1"))
    loop.run_once()
    podgroup = cluster.get("PodGroup", "ml/training-job")
    assert podgroup is not None and podgroup["status"]["schedulingConditions"], "kept while the bind is pending"
    Binder(cluster, clock).reconcile()
    loop.run_once()
    podgroup = cluster.get("PodGroup", "ml/training-job")
    assert podgroup is not None and podgroup["status"]["schedulingConditions"] == []


def test_a_gang_short_of_pods_gets_kais_notready_event_on_the_podgroup() -> None:
    """KAI records a Normal ``NotReady`` event on the PodGroup every cycle (KAI's scripts wait for it; repeats are
    counted on one Event); kai's pod event beside it carries the same text."""
    cluster, clock = department(), Clock()
    change(cluster, "PodGroup", "ml/training-job", lambda pg: pg["spec"].update(minMember=2))
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=clock)
    for _ in range(3):
        loop.run_once()
        clock.now += 1
    text = "Job is not ready for scheduling. Waiting for 2 pods, currently 1 exist, 0 are gated"
    [group_event] = events_about(cluster, "PodGroup", "training-job")
    assert (group_event["type"], group_event["reason"], group_event["message"]) == ("Normal", "NotReady", text)
    [pod_event] = events_about(cluster, "Pod", "training-job")
    assert (pod_event["type"], pod_event["reason"]) == ("Warning", "Unschedulable")
    assert pod_event["message"] == f"NotReady: {text}."


def test_a_waiting_pod_is_read_once_until_it_changes_and_its_event_is_counted_every_cycle() -> None:
    cluster, clock = department(), Clock()
    change(cluster, "Pod", "ml/training-job", request_gpus("5"))
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=clock)
    reads: Counter[tuple[str, str]] = Counter()
    get = cluster.get

    def counted(kind: str, key: str) -> dict[str, Any] | None:
        reads[(kind, key)] += 1
        return get(kind, key)

    cluster.get = counted  # type: ignore[method-assign]
    for _ in range(70):  # cycles a second apart: the event's count is written once a minute
        loop.run_once()
        clock.now += 1
    assert reads[("Pod", "ml/training-job")] == reads[("PodGroup", "ml/training-job")] == 1
    [pod_event] = [e for e in events_about(cluster, "Pod", "training-job") if e["reason"] == "Unschedulable"]
    assert pod_event["count"] > 1

    def forget_conditions(pod: dict[str, Any]) -> None:
        pod["status"]["conditions"] = []

    change(cluster, "Pod", "ml/training-job", forget_conditions)  # someone else's write: read again, set again
    loop.run_once()
    assert reads[("Pod", "ml/training-job")] == 3  # change() read it once too
    scheduled = condition(cluster, "Pod", "ml/training-job", "PodScheduled")
    assert scheduled is not None and scheduled["message"] == pod_event["message"]


def test_a_bad_gpu_fraction_is_reported_on_the_pod_once_and_lifted_when_fixed() -> None:
    cluster, clock = department(), Clock()

    def fraction(value: str) -> Any:
        def edit(pod: dict[str, Any]) -> None:
            pod["metadata"]["annotations"]["gpu-fraction"] = value

        return edit

    change(cluster, "Pod", "ml/inference-light", fraction("1.5"))
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=clock)
    for _ in range(5):
        loop.run_once()
        clock.now += 1
    [event] = events_about(cluster, "Pod", "inference-light")
    assert (event["type"], event["reason"], event["count"]) == ("Warning", "InvalidObject", 1)
    assert "metadata.annotations.gpu-fraction" in event["message"] and "(0, 1]" in event["message"]
    scheduled = condition(cluster, "Pod", "ml/inference-light", "PodScheduled")
    assert scheduled is not None
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
        "False",
        "InvalidObject",
        event["message"],
    )

    change(cluster, "Pod", "ml/inference-light", fraction("0.5"))
    loop.run_once()
    assert condition(cluster, "Pod", "ml/inference-light", "PodScheduled") is None
    assert cluster.get("BindRequest", "ml/inference-light") is not None


def test_a_bad_queue_and_a_bad_podgroup_get_an_event_and_a_condition() -> None:
    cluster, clock = department(), Clock()

    def own_parent(queue: dict[str, Any]) -> None:
        queue["spec"]["parentQueue"] = "equipe-inference"

    def preemptibility(podgroup: dict[str, Any]) -> None:
        podgroup["spec"]["preemptibility"] = "sometimes"

    change(cluster, "Queue", "equipe-inference", own_parent)
    change(cluster, "PodGroup", "ml/training-job", preemptibility)
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=clock)
    for _ in range(3):
        loop.run_once()
    [queue_event] = events_about(cluster, "Queue", "equipe-inference")
    assert queue_event["metadata"]["namespace"] == "default" and "spec.parentQueue" in queue_event["message"]
    valid = condition(cluster, "Queue", "equipe-inference", "Valid")
    assert valid is not None and (valid["status"], valid["reason"]) == ("False", "InvalidObject")
    [group_event] = events_about(cluster, "PodGroup", "training-job")
    assert "spec.preemptibility" in group_event["message"] and "non-preemptible" in group_event["message"]
    podgroup = cluster.get("PodGroup", "ml/training-job")
    assert podgroup is not None
    [scheduling] = podgroup["status"]["schedulingConditions"]
    assert scheduling["reasons"] == [{"reason": "InvalidObject", "message": group_event["message"]}]


def test_a_warning_is_an_event_only_once() -> None:
    cluster, clock = department(), Clock()
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=clock)
    warning = InvalidObject("Pod ml/inference-light", "spec.containers[0].resources", "both gpu-fraction and a GPU")
    loop.state.warnings[("Pod", "ml/inference-light")] = [warning]
    for _ in range(3):
        loop.run_once()
    [event] = [e for e in events_about(cluster, "Pod", "inference-light") if e["reason"] == "ObjectWarning"]
    assert (event["type"], event["count"], event["message"]) == ("Warning", 1, str(warning))
    assert condition(cluster, "Pod", "ml/inference-light", "PodScheduled") is None
