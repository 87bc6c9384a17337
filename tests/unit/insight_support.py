"""Scenarios for the tests of `kai explain` and `kai queues` (a team cluster, a file of workloads), and the
commands run as a user runs them."""

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kai.cli.main import main

NOW = "2025-01-01T00:10:00Z"


def queue_obj(name: str, parent: str = "", quota: float = -1, limit: float = -1) -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {"resources": {"gpu": {"quota": quota, "limit": limit, "overQuotaWeight": 1}}}
    spec["resources"] |= {"cpu": unlimited, "memory": unlimited}
    if parent:
        spec["parentQueue"] = parent
    return {"kind": "Queue", "metadata": {"name": name, "creationTimestamp": "2025-01-01T00:00:00Z"}, "spec": spec}


def podgroup_obj(
    name: str, queue: str, size: int, created: str = "2025-01-01T00:01:00Z", **spec: Any
) -> dict[str, Any]:
    meta = {"name": name, "namespace": "team", "creationTimestamp": created}
    return {"kind": "PodGroup", "metadata": meta, "spec": {"queue": queue, "minMember": size, **spec}}


def pod_obj(name: str, group: str, gpus: int, node: str = "", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "schedulerName": "kai-scheduler",
        "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}],
        **spec,
    }
    if node:
        body["nodeName"] = node
    meta = {"name": name, "namespace": "team", "annotations": {"pod-group-name": group} if group else {}}
    return {"kind": "Pod", "metadata": meta, "spec": body, "status": {"phase": "Running" if node else "Pending"}}


def node_obj(name: str, gpus: int) -> dict[str, Any]:
    allocatable = {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}}


def team_scenario(tmp_path: Path) -> Path:
    """dept → a (GPU limit 4), b (quota 2), c (quota 1) on one 8-GPU node: a holds 2 GPUs and wants 4 more as a
    gang; b has a 1-GPU job that fits and a gated one; c holds 3 GPUs; one podgroup kai cannot read; one pod of
    another scheduler."""
    objects = [
        {"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50},
        queue_obj("dept"),
        queue_obj("a", "dept", limit=4),
        queue_obj("b", "dept", quota=2),
        queue_obj("c", "dept", quota=1),
        node_obj("n0", 8),
        podgroup_obj("first", "a", 1, "2025-01-01T00:00:00Z"),
        pod_obj("first-0", "first", 2, "n0"),
        podgroup_obj("held", "c", 1, "2025-01-01T00:00:00Z"),
        pod_obj("held-0", "held", 3, "n0"),
        podgroup_obj("big", "a", 2),
        pod_obj("big-0", "big", 2),
        pod_obj("big-1", "big", 2),
        podgroup_obj("small", "b", 1),
        pod_obj("small-0", "small", 1),
        podgroup_obj("later", "b", 1, "2025-01-01T00:02:00Z"),
        pod_obj("later-0", "later", 1, schedulingGates=[{"name": "data"}]),
        podgroup_obj("broken", "b", 1, minMember="two"),
        pod_obj("other", "", 1, schedulerName="default-scheduler"),
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(
        yaml.safe_dump({"name": "team cluster", "now": NOW, "config": {"actions": "allocate"}, "objects": objects})
    )
    return path


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def explain_json(path: Path, *args: str) -> dict[str, Any]:
    told: dict[str, Any] = json.loads(run("explain", *args, "-n", "team", "-f", str(path), "-o", "json"))
    return told


def workloads_file(tmp_path: Path) -> Path:
    """Manifests of a PyTorchJob of 4 GPUs, too big for the 3-GPU node, and a Deployment of 2 one-GPU replicas,
    with a pod of another Job named like the PyTorchJob."""
    container = {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    template = {"spec": {"schedulerName": "kai-scheduler", "containers": [container]}}
    labels = {"kai.scheduler/queue": "a"}
    specs = {"Master": {"replicas": 1, "template": template}, "Worker": {"replicas": 3, "template": template}}
    objects = [
        queue_obj("dept"),
        queue_obj("a", "dept"),
        node_obj("n0", 3),
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "bert", "namespace": "team", "labels": labels},
            "spec": {"pytorchReplicaSpecs": specs},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "serve", "namespace": "team", "labels": labels},
            "spec": {"replicas": 2, "template": template},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "bert", "namespace": "team", "labels": labels},
            "spec": {"suspend": True, "template": template},
        },
    ]
    path = tmp_path / "workloads.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path
