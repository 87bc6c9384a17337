"""The pod-grouper on a real kube-apiserver: two replicas racing for one workload's PodGroup, owners whose CRD is not
installed or whose kind kai does not know, and a PodGroup the API server refuses — each ending in PodGroups or in a
warning event on the pod (`kubectl describe pod` shows it), never in a traceback.

A Job's pods come from the real Job controller (the `controllers` fixture); for owners no controller here runs, the
tests create the pods as their controllers would (ownerReferences with the owners' uids).
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from controlplane import ControlPlane
from kube.kube_support import wait_until
from testcluster import Part

from kai.cluster.kube import KubeCluster
from kai.components.runtime.loops import RuntimeOptions, run
from kai.components.shared.components import kinds_for

REPO = Path(__file__).resolve().parents[2]
QUEUE = "kai.scheduler/queue"


@contextmanager
def podgroupers(cp: ControlPlane, replicas: int) -> Iterator[None]:
    """``replicas`` pod-groupers, each with its own connection and caches, as separate replicas would run."""
    running: list[tuple[KubeCluster, threading.Event, threading.Thread]] = []
    try:
        for index in range(replicas):
            cluster = KubeCluster.from_kubeconfig(
                cp.kubeconfig_path, kinds=sorted(kinds_for({"podgrouper"})), component=f"pod-grouper-{index}"
            )
            cluster.start()
            assert cluster.wait_for_sync(60)
            stop = threading.Event()
            options = RuntimeOptions(write_workers=16, max_concurrent_reconciles=10)
            thread = threading.Thread(target=run, args=(cluster, {"podgrouper"}, options, stop), daemon=True)
            running.append((cluster, stop, thread))
        for _, _, thread in running:
            thread.start()
        yield
    finally:
        for cluster, stop, thread in running:
            stop.set()
            thread.join(timeout=30)
            cluster.close()


def apply(cp: ControlPlane, tmp_path: Path, *documents: dict[str, Any]) -> None:
    path = tmp_path / f"apply-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    cp.kubectl("apply", "--server-side", "-f", str(path))


def get(cp: ControlPlane, *args: str) -> Any:
    return json.loads(cp.kubectl("get", *args, "-o", "json").stdout)


def pod(namespace: str, name: str, owner: dict[str, Any] | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels}
    if owner:
        meta["ownerReferences"] = [
            {k: owner[k] for k in ("apiVersion", "kind")} | {k: owner["metadata"][k] for k in ("name", "uid")}
        ]
    containers = [{"name": "main", "image": "busybox"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"schedulerName": "kai-scheduler", "containers": containers},
    }


def grouped_as(cp: ControlPlane, namespace: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: (p["metadata"].get("annotations") or {}).get("pod-group-name", "")
        for p in get(cp, "pods", "-n", namespace)["items"]
    }


def warning_events(cp: ControlPlane, namespace: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for event in get(cp, "events", "-n", namespace)["items"]:
        if event["reason"] == "PodGrouperWarning":
            found.setdefault(event["involvedObject"]["name"], []).append(event["message"])
    return found


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_two_replicas_group_a_burst_of_one_job_s_pods_into_one_podgroup(
    control_plane: ControlPlane, controllers: Part, namespace: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cp = control_plane
    cp.kubectl("apply", "-f", str(REPO / "deploy" / "priority-classes.yaml"))
    containers = [{"name": "main", "image": "busybox"}]
    template = {"spec": {"schedulerName": "kai-scheduler", "restartPolicy": "Never", "containers": containers}}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "etl", "namespace": namespace, "labels": {QUEUE: "equipe-training"}},
        "spec": {"parallelism": 30, "completions": 30, "template": template},
    }
    apply(cp, tmp_path, job)
    job = get(cp, "job", "etl", "-n", namespace)
    wait_until("the Job controller to create the 30 pods", lambda: len(grouped_as(cp, namespace)) == 30)
    expected = f"pg-etl-{job['metadata']['uid']}"
    with caplog.at_level(logging.DEBUG, logger="kai.components.podgrouper"), podgroupers(cp, 2):
        wait_until("every pod of the Job grouped", lambda: set(grouped_as(cp, namespace).values()) == {expected})
    [podgroup] = get(cp, "podgroups", "-n", namespace)["items"]
    assert podgroup["metadata"]["name"] == expected
    assert podgroup["spec"] == {"minMember": 1, "queue": "equipe-training", "priorityClassName": "train"}
    assert warning_events(cp, namespace) == {}
    assert no_tracebacks(caplog) == []


WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


def test_owners_kai_cannot_read_and_refused_podgroups_are_told_on_their_pods(
    control_plane: ControlPlane, namespace: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cp = control_plane
    cp.kubectl("apply", "-f", str(REPO / "deploy" / "priority-classes.yaml"))
    apply(cp, tmp_path, WIDGET_CRD)
    cp.kubectl("wait", "--for=condition=established", "crd/widgets.example.com", "--timeout=60s")
    apply(
        cp,
        tmp_path,
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": namespace}},
    )
    widget = get(cp, "widget", "w", "-n", namespace)
    # no test installs the LeaderWorkerSet CRD, so the pod names an owner that cannot exist (where an owner's kind
    # is served, as RayCluster is once a test of the session has started KubeRay, the garbage collector deletes it)
    leaderworkerset = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "lws", "uid": str(uuid.uuid4())},
    }
    long_name = "x" * 240
    apply(
        cp,
        tmp_path,
        pod(namespace, "widget-0", widget, **{QUEUE: "equipe-inference"}),
        pod(namespace, "lws-leader", leaderworkerset),
        pod(namespace, long_name),
        pod(namespace, "plain"),
    )
    with caplog.at_level(logging.WARNING), podgroupers(cp, 1):
        wait_until(
            "the readable pods grouped", lambda: all(grouped_as(cp, namespace)[p] for p in ("widget-0", "plain"))
        )
        told = wait_until(
            "the others told", lambda: (w := warning_events(cp, namespace)).keys() >= {"lws-leader", long_name} and w
        )
    podgroups = {pg["metadata"]["name"]: pg for pg in get(cp, "podgroups", "-n", namespace)["items"]}
    by_widget = podgroups[f"pg-w-{widget['metadata']['uid']}"]
    assert by_widget["spec"] == {"minMember": 1, "queue": "equipe-inference", "priorityClassName": "train"}
    assert by_widget["metadata"]["ownerReferences"][0]["kind"] == "Widget"
    uid = leaderworkerset["metadata"]["uid"]
    assert told["lws-leader"] == [
        f"Pod {namespace}/lws-leader: field metadata.ownerReferences[0]: names LeaderWorkerSet {namespace}/lws "
        f"(uid {uid}), which does not exist"
    ]
    [refused] = told[long_name]
    assert refused.startswith(f"its PodGroup {namespace}/pg-{long_name}-") and "must be no more than 253" in refused
    assert "PodGrouperWarning" in cp.kubectl("describe", "pod", "lws-leader", "-n", namespace).stdout
    assert no_tracebacks(caplog) == []
