"""The event recorder through the kube adapter on a real kube-apiserver: `kubectl describe` lists the events
(matched by uid), repeats update the one Event's count, and an Event that expired is written anew."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from kube_support import pod, remove_test_objects, unique

from kai.cluster.kube import KubeCluster
from kai.components.shared.events import EventRecorder, ObjectRef


@pytest.fixture(autouse=True)
def tidy(control_plane) -> Iterator[None]:
    yield
    remove_test_objects(control_plane.kubeconfig_path)


@pytest.fixture
def cluster(control_plane) -> Iterator[KubeCluster]:
    with KubeCluster.from_kubeconfig(control_plane.kubeconfig_path, component="kai-e2e") as client:
        yield client


def events_about(cluster: KubeCluster, name: str) -> list[dict]:
    return [e for e in cluster.list("Event") if e["involvedObject"].get("name") == name]


def test_repeats_update_one_event_that_describe_lists(cluster, namespace, control_plane):
    name = unique("pod")
    created = cluster.create("Pod", pod(namespace, name))
    ref = ObjectRef.of("Pod", created)
    clock = [1_767_225_600.0]
    recorder = EventRecorder(cluster, "kai-scheduler", lambda: clock[0], refresh_s=10)
    for _ in range(3):
        recorder.record(ref, "Warning", "Unschedulable", "0/3 nodes are available")
        clock[0] += 10
    [event] = events_about(cluster, name)
    assert event["count"] == 3 and event["involvedObject"]["uid"] == created["metadata"]["uid"]
    assert (event["firstTimestamp"], event["lastTimestamp"]) == ("2026-01-01T00:00:00Z", "2026-01-01T00:00:20Z")
    described = control_plane.kubectl("describe", "pod", name, "-n", namespace).stdout
    assert re.search(
        r"Warning\s+Unschedulable\s+\S+ \(x3 over \S+\)\s+kai-scheduler\s+0/3 nodes are available", described
    )

    cluster.delete("Event", f"{namespace}/{event['metadata']['name']}")  # as the API server's event TTL does
    recorder.record(ref, "Warning", "Unschedulable", "0/3 nodes are available")
    [again] = events_about(cluster, name)
    assert (again["metadata"]["name"], again["count"]) == (event["metadata"]["name"], 4)
