"""Scheduling behaviours KAI's own end-to-end suite expects (issue 32), as kai does them on a real kube-apiserver with
KWOK nodes: a preferred pod anti-affinity outweighs the preference of a CPU-only pod for CPU nodes, and a pod whose
ConfigMap does not exist waits Unschedulable, in KAI's words, until the ConfigMap is created.

Each test uses nodes of its own pool (a node selector), so the other tests' nodes change nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from controlplane import ControlPlane
from kai_support import Kai, apply, kai_cli, pods, queue, wait_until
from testcluster import Kwok

from kai.components.operator.fields import Fields
from kai.components.operator.shard import scheduler_config


def cpu_pod(namespace: str, name: str, queue_name: str, pool: str, **spec: Any) -> dict[str, Any]:
    """A pod that asks for no GPU (nor anything else), of ``queue_name``, on the nodes of ``pool``."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kai.scheduler/queue": queue_name}},
        "spec": {"schedulerName": "kai-scheduler", "nodeSelector": {"pool": pool},
                 "containers": [{"name": "main", "image": "busybox"}], **spec},
    }  # fmt: skip


def node_of(cp: ControlPlane, namespace: str, name: str) -> str:
    return str(wait_until(f"{name} to be bound", lambda: pods(cp, namespace)[name]["spec"].get("nodeName")))


def test_a_cpu_pod_that_prefers_to_avoid_a_pod_leaves_its_cpu_node_for_a_gpu_node(
    control_plane: ControlPlane, namespace: str, kwok: Kwok, tmp_path: Path
) -> None:
    """With the plugins KAI's operator enables (podaffinity among them), a preferred anti-affinity of weight 10
    outweighs resourcetype's preference of a CPU-only pod for the CPU node, as in KAI's node order."""
    cp, pool = control_plane, f"aff-{namespace}"
    kwok.node(f"{pool}-cpu", 0, {"pool": pool})
    for i in (1, 2):
        kwok.node(f"{pool}-gpu-{i}", 8, {"pool": pool})
    queue(cp, tmp_path, f"q-{namespace}")
    conf = tmp_path / "scheduler.yaml"
    conf.write_text(yaml.safe_dump(scheduler_config(Fields("SchedulingShard default", {}, "spec"))))
    assert "podaffinity" in conf.read_text()
    kai = Kai(cp, tmp_path / "kai.log", f"--scheduler-conf={conf}")
    try:
        running = cpu_pod(namespace, "running", f"q-{namespace}", pool)
        running["metadata"]["labels"]["hello"] = "world"
        apply(cp, tmp_path, running)
        assert node_of(cp, namespace, "running") == f"{pool}-cpu"  # resourcetype: a CPU pod prefers the CPU node
        avoid = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 10,
            "podAffinityTerm": {"labelSelector": {"matchLabels": {"hello": "world"}},
                                "topologyKey": "kubernetes.io/hostname"},
        }]}}  # fmt: skip
        apply(cp, tmp_path, cpu_pod(namespace, "avoiding", f"q-{namespace}", pool, affinity=avoid))
        assert node_of(cp, namespace, "avoiding").startswith(f"{pool}-gpu-")
        near = {"podAffinity": avoid["podAntiAffinity"]}
        apply(cp, tmp_path, cpu_pod(namespace, "near", f"q-{namespace}", pool, affinity=near))
        assert node_of(cp, namespace, "near") == f"{pool}-cpu"
    finally:
        kai.stop()


def test_a_pod_whose_config_map_does_not_exist_waits_unschedulable_in_kais_words_until_it_is_created(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    cp, pool = control_plane, f"cm-{namespace}"
    kwok.node(f"{pool}-gpu", 8, {"pool": pool})
    queue(cp, tmp_path, f"q-{namespace}")
    mounting = cpu_pod(namespace, "mounting", f"q-{namespace}", pool,
                       volumes=[{"name": "config", "configMap": {"name": "settings"}}])  # fmt: skip
    mounting["spec"]["containers"][0]["volumeMounts"] = [{"name": "config", "mountPath": "/etc/settings"}]
    apply(cp, tmp_path, mounting)

    def unschedulable() -> dict[str, Any] | None:
        conditions = pods(cp, namespace)["mounting"]["status"].get("conditions", [])
        return next((c for c in conditions if c["type"] == "PodScheduled" and c["reason"] == "Unschedulable"), None)

    condition = wait_until("the pod to be Unschedulable", unschedulable)
    assert "ConfigMap: Missing required configmaps: [settings]." in condition["message"]
    assert f"(ConfigMap settings does not exist in namespace {namespace}: create it" in condition["message"]
    told = kai_cli(cp, kai, "explain", "pod", "mounting", "-n", namespace)
    assert f"needs ConfigMap settings, which does not exist in namespace {namespace}" in told
    assert f"create ConfigMap settings in namespace {namespace}" in told
    assert not pods(cp, namespace)["mounting"]["spec"].get("nodeName")
    apply(cp, tmp_path, {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "settings", "namespace": namespace}, "data": {"a": "1"}})  # fmt: skip
    assert node_of(cp, namespace, "mounting") == f"{pool}-gpu"
