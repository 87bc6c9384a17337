"""The binder on the in-memory cluster: conflicts resolved, terminal failures Failed once, KAI's backoffLimit with
bounded backoff, rollback, and the scheduler placing a pod again after a terminal failure (issue 6, item 3)."""

import logging
from typing import Any

import pytest
import yaml
from repo import REPO

from kai.cluster.memory import MemoryCluster
from kai.cluster.port import ClusterError
from kai.components.binder.component import Binder, retry_delay_s
from kai.components.scheduler.loop import SchedulerLoop
from kai.core.framework.config import SchedulerConfig
from kai.core.model.objects import parse_bind_request

NS = "team"


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def node(name: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}}


def pod(name: str, uid: str = "", node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "kai-scheduler", "containers": [{"name": "main"}]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": uid or f"uid-{name}"},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def bind_request(pod_name: str, node_name: str, backoff_limit: int | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"podName": pod_name, "selectedNode": node_name, "receivedResourceType": "Regular", **spec}
    if backoff_limit is not None:
        body["backoffLimit"] = backoff_limit
    return {
        "kind": "BindRequest",
        "metadata": {
            "name": pod_name,
            "namespace": NS,
            "uid": f"br-{pod_name}",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": f"uid-{pod_name}"}],
        },
        "spec": body,
    }


def fraction(pod_name: str, node_name: str, group: str) -> dict[str, Any]:
    return bind_request(pod_name, node_name, receivedResourceType="Fraction", selectedGPUGroups=[group])


def status(cluster: MemoryCluster, name: str, namespace: str = NS) -> dict[str, Any]:
    request = cluster.get("BindRequest", f"{namespace}/{name}")
    assert request is not None
    return dict(request.get("status") or {})


def refusing(error: Exception) -> Any:
    """A pods/binding that always fails with ``error``."""

    def bind_pod(namespace: str, name: str, node_name: str, uid: str = "", annotations: Any = None) -> None:
        raise error

    return bind_pod


def attempts(binder: Binder, result: str) -> float:
    return binder.metrics.reconciles.labels("bindrequest", result)._value.get()


def pod_bound_condition(cluster: MemoryCluster, name: str) -> dict[str, Any] | None:
    found = cluster.get("Pod", f"{NS}/{name}")
    assert found is not None
    return next((c for c in found["status"].get("conditions", []) if c["type"] == "PodBound"), None)


def events(cluster: MemoryCluster) -> list[tuple[str, str, str, str]]:
    """The binder's events: type, reason, message and the uid of the pod they are about."""
    return [
        (e["type"], e["reason"], e["message"], e["involvedObject"]["uid"])
        for e in cluster.list("Event")
        if e["source"]["component"] == "binder"
    ]


def live_reservations(cluster: MemoryCluster) -> list[str]:
    return sorted(
        p["metadata"]["name"]
        for p in cluster.list("Pod")
        if p["metadata"]["namespace"] == "kai-resource-reservation" and not p["metadata"].get("deletionTimestamp")
    )


def test_a_bind_request_bumped_by_another_client_between_read_and_write_still_succeeds_once() -> None:
    cluster = MemoryCluster([node("n1"), pod("p"), bind_request("p", "n1")])
    binder = Binder(cluster, Clock())
    bind = cluster.bind_pod

    def bump_then_bind(
        namespace: str, name: str, node_name: str, uid: str = "", annotations: dict[str, str] | None = None
    ) -> None:
        current = cluster.get("BindRequest", f"{namespace}/{name}")
        assert current is not None
        current["metadata"]["labels"] = {"bumped": "yes"}
        cluster.update("BindRequest", current)  # the binder's copy is stale from here on
        bind(namespace, name, node_name, uid, annotations)

    cluster.bind_pod = bump_then_bind  # type: ignore[method-assign]
    assert binder.reconcile() == 1
    assert status(cluster, "p") == {"phase": "Succeeded"}
    assert cluster.get("BindRequest", f"{NS}/p")["metadata"]["labels"] == {"bumped": "yes"}  # type: ignore[index]
    assert binder.reconcile() == 0
    assert (attempts(binder, "success"), attempts(binder, "error")) == (1, 0)
    assert events(cluster) == [("Normal", "Bound", "Pod bound successfully to node n1", "uid-p")]


def test_a_pod_changed_by_another_client_meanwhile_is_bound_and_keeps_the_change() -> None:
    cluster = MemoryCluster([node("n1"), pod("p"), fraction("p", "n1", "g1")])
    binder = Binder(cluster, Clock())
    stale_reads = cluster.get
    bumped: list[str] = []

    def get_then_bump(kind: str, key: str) -> dict[str, Any] | None:  # the binder's first read goes stale at once
        found = stale_reads(kind, key)
        if kind == "Pod" and key == f"{NS}/p" and not bumped:
            bumped.append(key)
            current = stale_reads(kind, key)
            assert current is not None
            current["metadata"]["labels"] = {"kubelet": "was-here"}
            cluster.update("Pod", current)
        return found

    cluster.get = get_then_bump  # type: ignore[method-assign]
    assert binder.reconcile() == 1
    bound = stale_reads("Pod", f"{NS}/p")
    assert bound is not None and bound["spec"]["nodeName"] == "n1"
    assert bound["metadata"]["labels"] == {"kubelet": "was-here", "runai-gpu-group": "g1"}
    assert bound["metadata"]["annotations"] == {"received-resource-type": "Fraction"}


@pytest.mark.parametrize("backoff_limit", [None, 3])
def test_a_deleted_node_fails_the_request_once_so_the_scheduler_drops_it(
    backoff_limit: int | None, caplog: pytest.LogCaptureFixture
) -> None:
    cluster = MemoryCluster([pod("p"), bind_request("p", "gone", backoff_limit)])
    clock = Clock()
    binder = Binder(cluster, clock)
    assert binder.reconcile() == 0
    failed = status(cluster, "p")
    assert failed["phase"] == "Failed" and failed["reason"] == "node gone does not exist"
    assert failed["failedAttempts"] == (backoff_limit or 1)
    assert parse_bind_request(cluster.get("BindRequest", f"{NS}/p")).failed  # type: ignore[arg-type]
    for _ in range(5):
        clock.t += 120
        assert binder.reconcile() == 0
    assert attempts(binder, "error") == 1
    [record] = [r for r in caplog.records if r.name == "kai.components.binder.component"]
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert record.getMessage() == (
        f"bind request {NS}/p (pod {NS}/p, node gone) failed: node gone does not exist; "
        "not retried: the scheduler will place the pod again"
    )
    condition = pod_bound_condition(cluster, "p")
    assert condition is not None and (condition["status"], condition["reason"]) == ("False", "BindingError")
    assert condition["message"] == f"Failed to bind pod {NS}/p to node gone: node gone does not exist"
    assert events(cluster) == [("Warning", "BindingError", condition["message"], "uid-p")]


@pytest.mark.parametrize(
    ("objects", "reason"),
    [
        ([node("n1")], f"pod {NS}/p does not exist"),
        ([node("n1"), pod("p", node_name="n2")], f"pod {NS}/p is already bound to node n2"),
        ([node("n1"), pod("p", uid="new")], f"pod {NS}/p was re-created (uid new; the request is for uid uid-p)"),
        ([node("n1"), pod("p"), bind_request("q", "n1")], ""),
    ],
    ids=["pod gone", "bound elsewhere", "pod re-created", "control"],
)
def test_a_pod_gone_replaced_or_bound_elsewhere_fails_the_request_once(
    objects: list[dict[str, Any]], reason: str
) -> None:
    cluster = MemoryCluster([*objects, bind_request("p", "n1", backoff_limit=5)])
    clock = Clock()
    binder = Binder(cluster, clock)
    binder.reconcile()
    clock.t += 120
    binder.reconcile()
    if not reason:
        assert status(cluster, "p") == {"phase": "Succeeded"}
        return
    assert status(cluster, "p") == {"phase": "Failed", "reason": reason, "failedAttempts": 5}
    assert attempts(binder, "error") == 1
    if cluster.get("Pod", f"{NS}/p") is not None:
        assert pod_bound_condition(cluster, "p") is None  # not the pod the request was for, or not unbound


def test_transient_failures_retry_with_growing_delays_up_to_the_backoff_limit(caplog: pytest.LogCaptureFixture) -> None:
    cluster = MemoryCluster([node("n1"), pod("p"), bind_request("p", "n1", backoff_limit=3)])
    clock = Clock()
    binder = Binder(cluster, clock)
    cluster.bind_pod = refusing(ClusterError("POST pods/binding: 500 InternalError: etcd leader changed"))  # type: ignore[method-assign]
    seen: list[tuple[float, int]] = []
    start = clock.t
    while clock.t < start + 30:
        binder.reconcile()
        current = status(cluster, "p").get("failedAttempts", 0)
        if not seen or seen[-1][1] != current:
            seen.append((clock.t - start, current))
        clock.t += 0.25
    assert seen == [(0.0, 1), (1.0, 2), (3.0, 3)]  # tried at once, after 1 s, after 2 more; then never again
    assert status(cluster, "p")["phase"] == "Failed"
    assert parse_bind_request(cluster.get("BindRequest", f"{NS}/p")).failed  # type: ignore[arg-type]
    assert attempts(binder, "error") == 3
    lines = [r.getMessage() for r in caplog.records if r.name == "kai.components.binder.component"]
    assert [line.rsplit("; ", 1)[1] for line in lines] == [
        "attempt 1 of 3, retried in 1s",
        "attempt 2 of 3, retried in 2s",
        "not retried: the scheduler will place the pod again",
    ]
    assert all("etcd leader changed" in line for line in lines)
    assert not any(r.exc_info for r in caplog.records)


def test_retry_delays_double_and_stop_growing_at_a_minute() -> None:
    assert [retry_delay_s(n) for n in (1, 2, 3, 6, 7, 20)] == [1, 2, 4, 32, 60, 60]


def test_a_transient_failure_then_success_binds_and_keeps_the_count() -> None:
    cluster = MemoryCluster([node("n1"), pod("p"), bind_request("p", "n1", backoff_limit=2)])
    clock = Clock()
    binder = Binder(cluster, clock)
    bind = cluster.bind_pod
    cluster.bind_pod = refusing(ClusterError("503"))  # type: ignore[method-assign]
    assert binder.reconcile() == 0
    cluster.bind_pod = bind  # type: ignore[method-assign]
    assert binder.reconcile() == 0  # not yet due
    clock.t += 1
    assert binder.reconcile() == 1
    assert status(cluster, "p") == {"phase": "Succeeded", "reason": "503", "failedAttempts": 1}


def test_without_a_backoff_limit_a_failure_is_final_as_in_kai() -> None:
    cluster = MemoryCluster([node("n1"), pod("p"), bind_request("p", "n1")])
    binder = Binder(cluster, Clock())
    cluster.bind_pod = refusing(ClusterError("503"))  # type: ignore[method-assign]
    binder.reconcile()
    assert parse_bind_request(cluster.get("BindRequest", f"{NS}/p")).failed  # type: ignore[arg-type]
    assert binder.reconcile() == 0 and attempts(binder, "error") == 1


def test_an_unexpected_error_is_logged_with_its_traceback_but_counted_like_any_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = MemoryCluster([node("n1"), pod("p"), bind_request("p", "n1")])
    binder = Binder(cluster, Clock())
    cluster.bind_pod = refusing(RuntimeError("bug"))  # type: ignore[method-assign]
    binder.reconcile()
    assert binder.reconcile() == 0
    [record] = [r for r in caplog.records if r.name == "kai.components.binder.component"]
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert status(cluster, "p")["reason"] == "bug"


def test_an_unreadable_request_is_deleted_so_the_scheduler_writes_a_valid_one(caplog: pytest.LogCaptureFixture) -> None:
    request = bind_request("p", "n1")
    request["spec"]["selectedGPUGroups"] = "g1"
    cluster = MemoryCluster([node("n1"), pod("p"), request])
    binder = Binder(cluster, Clock())
    binder.reconcile()
    assert cluster.get("BindRequest", f"{NS}/p") is None
    assert [r.getMessage() for r in caplog.records if r.name == "kai.components.binder.component"] == [
        f"bind request {NS}/p is invalid (BindRequest {NS}/p: field spec.selectedGPUGroups: got 'g1'; expected a "
        "list); deleted so that the scheduler writes a valid one"
    ]
    assert binder.reconcile() == 0 and attempts(binder, "error") == 1


def test_a_fraction_request_without_gpu_groups_fails_once() -> None:
    request = fraction("p", "n1", "g")
    request["spec"]["selectedGPUGroups"] = []
    cluster = MemoryCluster([node("n1"), pod("p"), request])
    binder = Binder(cluster, Clock())
    binder.reconcile()
    assert status(cluster, "p") == {
        "phase": "Failed",
        "reason": "invalid BindRequest: a Fraction request needs spec.selectedGPUGroups",
        "failedAttempts": 1,
    }
    assert binder.reconcile() == 0 and attempts(binder, "error") == 1


def test_a_failed_bind_rolls_back_its_pod_and_reservation_but_not_another_binds() -> None:
    cluster = MemoryCluster(
        [node("n1"), pod("bad"), pod("good"), fraction("bad", "n1", "g-bad"), fraction("good", "n1", "g-good")]
    )
    binder = Binder(cluster, Clock())
    bind = cluster.bind_pod

    def refuse_bad(namespace: str, name: str, node_name: str, uid: str = "", annotations: Any = None) -> None:
        if name == "bad":
            raise ClusterError("refused")
        bind(namespace, name, node_name, uid, annotations)

    cluster.bind_pod = refuse_bad  # type: ignore[method-assign]
    assert binder.reconcile() == 1
    bad = cluster.get("Pod", f"{NS}/bad")
    assert bad is not None and "runai-gpu-group" not in bad["metadata"].get("labels", {})
    assert "received-resource-type" not in bad["metadata"].get("annotations", {})
    assert live_reservations(cluster) == ["gpu-reservation-n1-g-good"]


def deletes_refused_while(cluster: MemoryCluster, away: list[bool]) -> None:
    """Pod deletes fail as with the API server away while ``away[0]``."""
    delete = cluster.delete

    def delete_unless_away(kind: str, key: str) -> None:
        if kind == "Pod" and away[0]:
            raise ClusterError("DELETE pods: 0 ConnectionError: All connection attempts failed")
        delete(kind, key)

    cluster.delete = delete_unless_away  # type: ignore[method-assign]


def test_a_request_whose_reservation_pod_cannot_be_removed_is_not_given_up_until_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API server away while the binder rolls back a failed fractional bind: failed for good, the request would
    let the scheduler give the reservation pod's GPU to another pod while a kubelet still counts it held. So it stays,
    is tried again when due, removes the reservation pod first, and only then fails for good."""
    cluster = MemoryCluster([node("n1"), pod("bad"), fraction("bad", "n1", "g-bad")])
    clock = Clock()
    binder = Binder(cluster, clock)
    cluster.bind_pod = refusing(ClusterError("refused"))  # type: ignore[method-assign]
    away = [True]
    deletes_refused_while(cluster, away)
    with caplog.at_level(logging.WARNING):
        assert binder.reconcile() == 0
    assert live_reservations(cluster) == ["gpu-reservation-n1-g-bad"]
    assert status(cluster, "bad") == {}  # not Failed: the scheduler still counts the pod on n1
    warnings = [r.message for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings[:2] == [
        "rolling back pod team/bad after a failed bind: its reservation pods: DELETE pods: 0 ConnectionError: All "
        "connection attempts failed",
        "bind request team/bad (pod team/bad, node n1) failed: refused; kept and tried again in 1s: its reservation "
        "pods could not be removed",
    ]
    assert not [r for r in caplog.records if r.exc_info]
    clock.t += 1
    binder.reconcile()  # still away: still kept
    assert status(cluster, "bad") == {} and live_reservations(cluster) == ["gpu-reservation-n1-g-bad"]
    away[0] = False
    clock.t += 1
    binder.reconcile()
    assert live_reservations(cluster) == []
    assert status(cluster, "bad") == {"phase": "Failed", "reason": "refused", "failedAttempts": 1}


def test_a_kept_request_binds_once_the_api_server_is_back() -> None:
    cluster = MemoryCluster([node("n1"), pod("p"), fraction("p", "n1", "g")])
    clock = Clock()
    binder = Binder(cluster, clock)
    bind = cluster.bind_pod
    cluster.bind_pod = refusing(ClusterError("refused"))  # type: ignore[method-assign]
    away = [True]
    deletes_refused_while(cluster, away)
    binder.reconcile()
    away[0] = False
    cluster.bind_pod = bind  # type: ignore[method-assign]
    clock.t += 1
    assert binder.reconcile() == 1
    bound = cluster.get("Pod", f"{NS}/p")
    assert bound is not None and bound["spec"]["nodeName"] == "n1"
    assert live_reservations(cluster) == ["gpu-reservation-n1-g"]
    assert status(cluster, "p") == {"phase": "Succeeded"}


def test_a_fraction_is_not_bound_onto_a_reservation_pod_being_deleted() -> None:
    """Its GPU is about to be free for anyone: the attempt fails, and the request is retried once it is gone."""
    cluster = MemoryCluster(
        [
            node("n1"),
            pod("p"),
            bind_request("p", "n1", backoff_limit=3, receivedResourceType="Fraction", selectedGPUGroups=["g"]),
        ]
    )
    clock = Clock()
    binder = Binder(cluster, clock)
    binder.reservations.ensure("n1", "g")
    cluster.delete("Pod", "kai-resource-reservation/gpu-reservation-n1-g")  # terminating until finalized
    assert binder.reconcile() == 0
    assert (
        status(cluster, "p")["reason"]
        == "reservation pod kai-resource-reservation/gpu-reservation-n1-g is being deleted"
    )
    cluster.finalize("Pod", "kai-resource-reservation/gpu-reservation-n1-g")
    clock.t += 1
    assert binder.reconcile() == 1
    assert live_reservations(cluster) == ["gpu-reservation-n1-g"]


def test_a_reservation_cleanup_the_api_server_refuses_is_tried_again_on_the_next_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API server away when the binder tidies reservation pods whose last pod went: one WARNING line, no exception
    out of the pass, and the next pass removes them."""
    cluster = MemoryCluster([node("n1"), pod("p"), fraction("p", "n1", "g")])
    binder = Binder(cluster, Clock())
    assert binder.reconcile() == 1
    away = [True]
    deletes_refused_while(cluster, away)
    finished = cluster.get("Pod", f"{NS}/p")
    assert finished is not None
    finished["status"] = {"phase": "Succeeded"}
    cluster.update("Pod", finished)
    with caplog.at_level(logging.WARNING):
        binder.reconcile()
    assert live_reservations(cluster) == ["gpu-reservation-n1-g"]
    assert [r.message for r in caplog.records if "reservation pods could not be cleaned up" in r.message]
    assert not [r for r in caplog.records if r.exc_info]
    away[0] = False
    binder.reconcile()
    assert live_reservations(cluster) == []


def test_the_reservation_namespace_is_created_once() -> None:
    cluster = MemoryCluster()
    binder = Binder(cluster, Clock(), reservation_namespace="gpu-holders")
    binder.reservations.ensure_namespace()
    binder.reservations.ensure_namespace()
    assert [n["metadata"]["name"] for n in cluster.list("Namespace")] == ["gpu-holders"]


def test_after_a_deleted_node_the_scheduler_places_the_pod_again_and_it_binds() -> None:
    doc = yaml.safe_load((REPO / "examples" / "department.yaml").read_text())
    cluster = MemoryCluster(doc["objects"])
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: 0.0)
    binder = Binder(cluster, lambda: 0.0)
    loop.run_once()
    first = cluster.get("BindRequest", "ml/training-job")
    assert first is not None
    gone = first["spec"]["selectedNode"]
    cluster.delete("Node", gone)
    binder.reconcile()
    assert status(cluster, "training-job", "ml")["reason"] == f"node {gone} does not exist"
    for _ in range(3):
        loop.run_once()
        binder.reconcile()
    placed = cluster.get("Pod", "ml/training-job")
    assert placed is not None and placed["spec"]["nodeName"] not in ("", gone)
    assert status(cluster, "training-job", "ml") == {"phase": "Succeeded"}
