"""The kube adapter's calls as plain values: kinds, keys, paths, query parameters, bodies and idempotency."""

import pytest

from kai.cluster.kube import resources as api
from kai.cluster.kube.resources import KINDS, Request

POD, NODE, QUEUE, PODGROUP = KINDS["Pod"], KINDS["Node"], KINDS["Queue"], KINDS["PodGroup"]


@pytest.mark.parametrize(
    ("kind", "api_version", "collection", "namespaced_collection"),
    [
        ("Pod", "v1", "/api/v1/pods", "/api/v1/namespaces/ns/pods"),
        ("Node", "v1", "/api/v1/nodes", "/api/v1/nodes"),
        ("Event", "v1", "/api/v1/events", "/api/v1/namespaces/ns/events"),
        (
            "PriorityClass",
            "scheduling.k8s.io/v1",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
        ),
        (
            "Lease",
            "coordination.k8s.io/v1",
            "/apis/coordination.k8s.io/v1/leases",
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases",
        ),
        ("Queue", "scheduling.run.ai/v2", "/apis/scheduling.run.ai/v2/queues", "/apis/scheduling.run.ai/v2/queues"),
        (
            "PodGroup",
            "scheduling.run.ai/v2alpha2",
            "/apis/scheduling.run.ai/v2alpha2/podgroups",
            "/apis/scheduling.run.ai/v2alpha2/namespaces/ns/podgroups",
        ),
        (
            "BindRequest",
            "scheduling.run.ai/v1alpha2",
            "/apis/scheduling.run.ai/v1alpha2/bindrequests",
            "/apis/scheduling.run.ai/v1alpha2/namespaces/ns/bindrequests",
        ),
        (
            "Topology",
            "kai.scheduler/v1alpha1",
            "/apis/kai.scheduler/v1alpha1/topologies",
            "/apis/kai.scheduler/v1alpha1/topologies",
        ),
    ],
)
def test_each_kind_has_its_group_version_and_paths(kind, api_version, collection, namespaced_collection):
    k = api.kind_of(kind)
    assert k.api_version == api_version
    assert k.collection_path() == collection
    assert k.collection_path("ns") == namespaced_collection


def test_an_unknown_kind_is_refused_with_the_known_ones_listed():
    with pytest.raises(ValueError, match=r"unknown kind .Widget.; kai knows: BindRequest, ClusterRole, "):
        api.kind_of("Widget")


def test_a_kind_named_with_its_version_and_group_is_a_namespaced_custom_resource():
    widget = api.kind_of("Widget.v1.example.com")
    assert widget == api.Kind("Widget", "example.com", "v1", "widgets", namespaced=True)
    assert widget.object_path("ns/w") == "/apis/example.com/v1/namespaces/ns/widgets/w"


@pytest.mark.parametrize(
    ("kind", "key", "path"),
    [
        (POD, "team-a/p1", "/api/v1/namespaces/team-a/pods/p1"),
        (NODE, "node-1", "/api/v1/nodes/node-1"),
        (QUEUE, "equipe-training", "/apis/scheduling.run.ai/v2/queues/equipe-training"),
        (PODGROUP, "team-a/pg-1", "/apis/scheduling.run.ai/v2alpha2/namespaces/team-a/podgroups/pg-1"),
    ],
)
def test_object_paths_come_from_port_keys(kind, key, path):
    assert kind.object_path(key) == path
    assert kind.object_path(key, "status") == path + "/status"


@pytest.mark.parametrize(
    ("kind", "key", "message"),
    [
        (POD, "p1", "Pod key 'p1' must be 'namespace/name'"),
        (POD, "a/b/c", "Pod key 'a/b/c' must be 'namespace/name'"),
        (POD, "/p1", "Pod key '/p1' must be 'namespace/name'"),
        (NODE, "ns/node-1", "Node is cluster-scoped: key 'ns/node-1' must be a bare name"),
        (QUEUE, "", "Queue is cluster-scoped: key '' must be a bare name"),
    ],
)
def test_malformed_keys_are_refused_naming_the_kind(kind, key, message):
    with pytest.raises(ValueError, match=message):
        kind.object_path(key)


def test_object_key_needs_a_name_and_for_namespaced_kinds_a_namespace():
    assert api.object_key(POD, {"metadata": {"name": "p", "namespace": "n"}}) == "n/p"
    assert api.object_key(NODE, {"metadata": {"name": "n1", "namespace": "ignored"}}) == "n1"
    with pytest.raises(ValueError, match=r"Pod p has no metadata\.namespace"):
        api.object_key(POD, {"metadata": {"name": "p"}})
    with pytest.raises(ValueError, match=r"Queue object has no metadata\.name"):
        api.object_key(QUEUE, {"spec": {}})


def test_list_pages_carry_limit_and_the_continue_token():
    assert api.list_request(POD, limit=500) == Request("GET", "/api/v1/pods", {"limit": "500"})
    assert api.list_request(POD, limit=2, continue_token="abc", namespace="ns") == Request(
        "GET", "/api/v1/namespaces/ns/pods", {"limit": "2", "continue": "abc"}
    )


def test_a_watch_resumes_from_a_resource_version_with_bookmarks_and_a_server_timeout():
    assert api.watch_request(QUEUE, "1234", timeout_s=300) == Request(
        "GET",
        "/apis/scheduling.run.ai/v2/queues",
        {"watch": "true", "resourceVersion": "1234", "allowWatchBookmarks": "true", "timeoutSeconds": "300"},
    )


def test_create_posts_to_the_collection_with_type_fields_and_field_manager():
    obj = {"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"minMember": 2}}
    request = api.create_request(PODGROUP, obj, field_manager="kai-scheduler")
    assert request == Request(
        "POST",
        "/apis/scheduling.run.ai/v2alpha2/namespaces/ns/podgroups",
        {"fieldManager": "kai-scheduler"},
        {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", **obj},
    )
    assert obj == {"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"minMember": 2}}  # input untouched


def test_idempotent_create_accepts_already_exists_and_delete_accepts_not_found():
    assert api.create_request(QUEUE, {"metadata": {"name": "q"}}, idempotent=True).accept == {"AlreadyExists"}
    assert api.create_request(QUEUE, {"metadata": {"name": "q"}}).accept == frozenset()
    assert api.delete_request(POD, "ns/p") == Request(
        "DELETE", "/api/v1/namespaces/ns/pods/p", accept=frozenset({"NotFound"})
    )
    assert api.delete_request(POD, "ns/p", grace_period_s=0).params == {"gracePeriodSeconds": "0"}


def test_update_is_a_put_of_the_whole_object_at_its_own_path():
    obj = {"metadata": {"name": "q", "resourceVersion": "7"}, "spec": {"priority": 1}}
    assert api.update_request(QUEUE, obj) == Request(
        "PUT",
        "/apis/scheduling.run.ai/v2/queues/q",
        {},
        {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", **obj},
    )


def test_patches_name_their_content_type_and_status_goes_through_the_subresource():
    merge = api.patch_request(POD, "ns/p", {"metadata": {"labels": {"a": "b"}}})
    assert (merge.method, merge.path, merge.content_type) == (
        "PATCH",
        "/api/v1/namespaces/ns/pods/p",
        "application/merge-patch+json",
    )
    status = api.status_patch_request(POD, "ns/p", {"conditions": [{"type": "PodScheduled"}]}, strategic=True)
    assert status == Request(
        "PATCH",
        "/api/v1/namespaces/ns/pods/p/status",
        {},
        {"status": {"conditions": [{"type": "PodScheduled"}]}},
        "application/strategic-merge-patch+json",
    )


def test_binding_posts_a_binding_to_the_pods_binding_subresource():
    assert api.binding_request("ns", "p1", "node-7") == Request(
        "POST",
        "/api/v1/namespaces/ns/pods/p1/binding",
        {},
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "p1", "namespace": "ns"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "node-7"},
        },
    )


def test_an_event_refers_to_its_object_and_cluster_scoped_objects_get_events_in_default():
    pg = {"metadata": {"name": "pg", "namespace": "ns", "uid": "u-1", "resourceVersion": "9"}}
    request = api.event_request(
        PODGROUP,
        pg,
        reason="Unschedulable",
        message="not enough GPUs",
        event_type="Warning",
        component="kai-scheduler",
        now="2026-01-01T00:00:00Z",
        suffix="abc",
    )
    assert request.path == "/api/v1/namespaces/ns/events"
    assert request.body == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "pg.abc", "namespace": "ns"},
        "involvedObject": {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "name": "pg",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "9",
        },
        "reason": "Unschedulable",
        "message": "not enough GPUs",
        "type": "Warning",
        "source": {"component": "kai-scheduler"},
        "reportingComponent": "kai-scheduler",
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z",
        "count": 1,
    }
    queue_event = api.event_request(
        QUEUE,
        {"metadata": {"name": "q"}},
        reason="R",
        message="m",
        event_type="Normal",
        component="c",
        now="t",
        suffix="1",
    )
    assert queue_event.path == "/api/v1/namespaces/default/events"
    assert queue_event.body is not None
    assert queue_event.body["involvedObject"] == {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "name": "q"}


def test_an_eviction_is_a_policy_v1_eviction_posted_to_the_pods_subresource_a_missing_pod_counts_as_evicted():
    request = api.eviction_request("ns", "web-0", field_manager="kai-scheduler")
    assert (request.method, request.path) == ("POST", "/api/v1/namespaces/ns/pods/web-0/eviction")
    assert request.body == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-0", "namespace": "ns"},
    }
    assert request.accept == frozenset({"NotFound"})
    assert "dryRun" not in request.params
    assert api.eviction_request("ns", "web-0", dry_run=True).params["dryRun"] == "All"
