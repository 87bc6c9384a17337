"""The kube adapter's writes on a real kube-apiserver: binding, idempotency, conflicts, status, events, batches."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kube_support import meta, node, pod, podgroup, queue, remove_test_objects, unique, wait_until

from kai.cluster.kube import AlreadyExists, ApiError, Conflict, KubeCluster
from kai.cluster.kube import resources as api


@pytest.fixture(autouse=True)
def tidy(control_plane, kwok) -> Iterator[None]:
    yield
    remove_test_objects(control_plane.kubeconfig_path)


@pytest.fixture
def cluster(control_plane) -> Iterator[KubeCluster]:
    with KubeCluster.from_kubeconfig(control_plane.kubeconfig_path, component="kai-e2e") as client:
        yield client


def test_bind_pod_sets_the_node_name_once_and_a_repeat_to_the_same_node_is_a_no_op(cluster, namespace):
    n1, n2, name = unique("gpu-node"), unique("gpu-node"), unique("pod")
    cluster.create("Node", node(n1))
    cluster.create("Node", node(n2))
    cluster.create("Pod", pod(namespace, name))

    cluster.bind_pod(namespace, name, n1)
    bound = cluster.get("Pod", f"{namespace}/{name}")
    assert bound["spec"]["nodeName"] == n1
    scheduled = [c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert [c["status"] for c in scheduled] == ["True"]  # (KWOK, running the pod, may add more conditions)

    cluster.bind_pod(namespace, name, n1)  # a retried bind: already done
    with pytest.raises(Conflict, match=f'already assigned to node "{n1}"'):
        cluster.bind_pod(namespace, name, n2)
    assert cluster.get("Pod", f"{namespace}/{name}")["spec"]["nodeName"] == n1


def test_a_binding_s_annotations_land_on_the_pod_with_the_node(cluster, namespace):
    """The binder's received-resource-type rides on the Binding (the API server copies its annotations)."""
    n1, name = unique("gpu-node"), unique("pod")
    cluster.create("Node", node(n1))
    cluster.create("Pod", pod(namespace, name))
    cluster.bind_pod(namespace, name, n1, annotations={"received-resource-type": "Regular"})
    bound = cluster.get("Pod", f"{namespace}/{name}")
    assert bound["spec"]["nodeName"] == n1
    assert bound["metadata"]["annotations"]["received-resource-type"] == "Regular"


def test_creates_can_be_idempotent_and_deletes_of_missing_objects_succeed(cluster):
    name = unique("queue")
    first = cluster.create("Queue", queue(name, gpu_quota=2))
    again = cluster.create("Queue", queue(name, gpu_quota=5), idempotent=True)
    assert again["metadata"]["uid"] == first["metadata"]["uid"]
    assert again["spec"]["resources"]["gpu"]["quota"] == 2  # the existing object, not the one asked for
    with pytest.raises(AlreadyExists, match=f'queues.scheduling.run.ai "{name}" already exists'):
        cluster.create("Queue", queue(name))

    cluster.delete("Queue", name)
    cluster.delete("Queue", name)
    assert cluster.get("Queue", name) is None


def test_an_update_from_a_stale_read_is_a_conflict(cluster):
    name = unique("queue")
    stale = cluster.create("Queue", queue(name))
    current = cluster.patch_merge("Queue", name, {"spec": {"priority": 3}})
    assert current["metadata"]["resourceVersion"] != stale["metadata"]["resourceVersion"]
    stale["spec"]["priority"] = 9
    with pytest.raises(Conflict, match="the object has been modified"):
        cluster.update("Queue", stale)
    assert cluster.get("Queue", name)["spec"]["priority"] == 3


def test_status_goes_through_the_status_subresource(cluster, namespace):
    name = unique("pg")
    key = f"{namespace}/{name}"
    cluster.create("PodGroup", podgroup(namespace, name, "default-queue", min_member=2))
    condition = {"type": "UnschedulableOnNodePool", "status": "True", "reason": "OverLimit", "message": "m"}
    patched = cluster.patch_status("PodGroup", key, {"phase": "Pending", "conditions": [condition]})
    assert patched["status"]["conditions"] == [condition]
    ignored = cluster.patch_merge("PodGroup", key, {"spec": {"minMember": 3}, "status": {"phase": "Running"}})
    assert (ignored["spec"]["minMember"], ignored["status"]["phase"]) == (3, "Pending")


def test_an_event_is_recorded_about_its_object(cluster, namespace):
    name = unique("pg")
    pg = cluster.create("PodGroup", podgroup(namespace, name, "default-queue"))
    cluster.create_event("PodGroup", pg, "Unschedulable", "queue over its limit", event_type="Warning")
    events = [e for e in cluster.list("Event") if e["involvedObject"].get("name") == name]
    assert len(events) == 1
    event = events[0]
    assert event["involvedObject"] == {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "name": name,
        "namespace": namespace,
        "uid": pg["metadata"]["uid"],
        "resourceVersion": pg["metadata"]["resourceVersion"],
    }
    assert (event["reason"], event["message"], event["type"], event["source"]) == (
        "Unschedulable",
        "queue over its limit",
        "Warning",
        {"component": "kai-e2e"},
    )


def test_a_batch_of_writes_reports_each_outcome_and_one_refusal_does_not_stop_the_rest(cluster, namespace):
    names = [unique("bind") for _ in range(6)]
    bodies = [{"metadata": meta(n, namespace), "spec": {"podName": n, "selectedNode": "node-1"}} for n in names]
    bodies[2]["spec"]["receivedGPU"] = {"count": "one"}  # not the CRD's integer
    kind = api.KINDS["BindRequest"]
    results = cluster.send_all([api.create_request(kind, body, idempotent=True) for body in bodies])

    assert isinstance(results[2], ApiError)
    assert results[2].code == 422
    assert "spec.receivedGPU.count" in results[2].message
    created = [r for i, r in enumerate(results) if i != 2]
    assert [r["metadata"]["name"] for r in created] == names[:2] + names[3:]
    again = cluster.send_all([api.create_request(kind, bodies[0], idempotent=True), api.delete_request(kind, "x/y")])
    assert again == [None, None]  # already created; already absent
    assert sorted(
        b["metadata"]["name"] for b in cluster.list("BindRequest") if b["metadata"]["name"] in names
    ) == sorted(names[:2] + names[3:])


def test_writing_back_a_cached_pod_changes_what_the_caller_changed_and_keeps_what_the_view_left_out(
    control_plane, namespace
):
    name = unique("pod")
    key = f"{namespace}/{name}"
    spec = {"containers": [{"name": "main", "image": "busybox", "env": [{"name": "MODE", "value": "train"}]}]}
    with KubeCluster.from_kubeconfig(control_plane.kubeconfig_path, kinds=["Pod"], component="kai-e2e") as cluster:
        assert cluster.wait_for_sync(30)
        cluster.create("Pod", pod(namespace, name, **spec))
        with_ip = cluster.patch_status("Pod", key, {"podIP": "10.1.2.3"})  # a field the view does not keep

        def cached_at(version: str) -> dict | None:
            cached = cluster.get("Pod", key)
            return cached if cached and cached["metadata"]["resourceVersion"] == version else None

        cached = wait_until("the cache to catch up", lambda: cached_at(with_ip["metadata"]["resourceVersion"]))
        cached["metadata"]["annotations"] = {"received-resource-type": "Regular"}
        annotated = cluster.update("Pod", cached)

        with pytest.raises(Conflict, match="the object has been modified"):
            cluster.update("Pod", cached)  # the version it was read at is gone (refused here or by the server)
        annotated["status"]["conditions"] = [{"type": "PodBound", "status": "True", "reason": "Bound"}]
        cluster.update_status("Pod", annotated)

        full = cluster.send(api.get_request(api.KINDS["Pod"], key))  # the whole object, not the view
        assert full["metadata"]["annotations"] == {"received-resource-type": "Regular"}
        assert full["spec"]["containers"][0]["image"] == "busybox"
        assert full["spec"]["containers"][0]["env"] == [{"name": "MODE", "value": "train"}]
        assert (full["status"]["podIP"], full["status"]["qosClass"]) == ("10.1.2.3", "BestEffort")
        assert [c["type"] for c in full["status"]["conditions"]] == ["PodBound"]
