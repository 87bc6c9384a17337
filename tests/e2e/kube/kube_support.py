"""Helpers for the kube adapter's tests on the real control plane: objects, a change recorder, polling."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from testcluster import node_manifest

from kai.cluster.kube import KubeCluster

T = TypeVar("T")

WATCHED = ("Pod", "Node", "Queue", "PodGroup", "BindRequest")

# Every object these tests create carries this label, and `remove_test_objects` deletes them after each test: the
# control plane is shared with the component tests, whose scheduler must not see our nodes, queues or pods.
TEST_LABEL = ("kai.test/created-by", "kube-adapter-tests")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until(what: str, check: Callable[[], T], timeout: float = 30.0, interval: float = 0.02) -> T:
    """Polls `check` every `interval` seconds until it returns something truthy (returned); fails naming `what` after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    labeled: dict[str, Any] = {"name": name, "labels": dict([TEST_LABEL])}
    if namespace:
        labeled["namespace"] = namespace
    return labeled


def remove_test_objects(kubeconfig: Any) -> None:
    """Deletes every object of the watched kinds that carries TEST_LABEL. Pods go first and are waited for: KWOK
    finishes the deletion of those bound to its nodes, which must still exist for it to do so."""
    with KubeCluster.from_kubeconfig(kubeconfig) as cluster:

        def labelled(kind: str) -> list[str]:
            return [
                key_of(obj)
                for obj in cluster.list(kind)
                if (obj["metadata"].get("labels") or {}).get(TEST_LABEL[0]) == TEST_LABEL[1]
            ]

        for kind in WATCHED:
            for key in labelled(kind):
                cluster.delete(kind, key)
            if kind == "Pod":
                wait_until("the test pods to be gone", lambda: not labelled("Pod"))


def pod(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    body = {"schedulerName": "kai-scheduler", "containers": [{"name": "main", "image": "busybox"}], **spec}
    return {"metadata": meta(name, namespace), "spec": body}


def node(name: str, gpus: int = 8) -> dict[str, Any]:
    """A KWOK node (testcluster.node_manifest) with TEST_LABEL; the test's `kwok` fixture runs its pods."""
    return node_manifest(name, gpus, dict([TEST_LABEL]))


def queue(name: str, gpu_quota: float = 1, parent: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"resources": {"gpu": {"quota": gpu_quota, "limit": -1, "overQuotaWeight": 1}}}
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": meta(name), "spec": spec}


def podgroup(namespace: str, name: str, queue_name: str, min_member: int = 1) -> dict[str, Any]:
    return {"metadata": meta(name, namespace), "spec": {"queue": queue_name, "minMember": min_member}}


def key_of(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


class Recorder:
    """A listener that records (kind, key, deleted, object) for the keys it is told to follow."""

    def __init__(self, follow: set[str] | None = None) -> None:
        self.follow = follow
        self.changes: list[tuple[str, str, bool, Mapping[str, Any]]] = []
        self._lock = threading.Lock()

    def __call__(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        key = key_of(obj)
        if self.follow is None or key in self.follow:
            with self._lock:
                self.changes.append((kind, key, deleted, obj))

    def of(self, key: str) -> list[tuple[bool, Mapping[str, Any]]]:
        with self._lock:
            return [(deleted, obj) for _, k, deleted, obj in self.changes if k == key]

    def deleted(self, key: str) -> bool:
        return any(deleted for deleted, _ in self.of(key))

    def last(self, key: str) -> Mapping[str, Any] | None:
        seen = self.of(key)
        return seen[-1][1] if seen else None
