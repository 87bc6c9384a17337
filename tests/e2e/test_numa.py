"""The numa plugin on a real API server: the scheduler reads NodeResourceTopology objects, binds Guaranteed pods
into the NUMA zones it predicts, and the prediction travels BindRequest → pod.

The NodeResourceTopology CRD comes from another project (k8stopologyawareschedwg/noderesourcetopology-api) and an
exporter (NFD's topology updater) publishes the objects from the kubelet; neither runs here, so the test installs a
stand-in CRD of the same group, version and kind, and writes the object an exporter would. KWOK runs the pods: no
kubelet admits or refuses them by their zones, and no placement exporter reports where they landed (KAI's
numa-placement-exporter reads the kubelet's PodResources API), so the scheduler counts its own predictions.
"""

from __future__ import annotations

import io
import json
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from controlplane import ControlPlane
from kai_support import PRIORITY_CLASSES, Kai, apply, gpu_pod, kubectl_json, pods, queue, wait_until
from testcluster import Kwok

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "name": "noderesourcetopologies.topology.node.k8s.io",
        "annotations": {"api-approved.kubernetes.io": "unapproved, a test stand-in"},  # a *.k8s.io group
    },
    "spec": {
        "group": "topology.node.k8s.io",
        "names": {
            "kind": "NodeResourceTopology",
            "plural": "noderesourcetopologies",
            "singular": "noderesourcetopology",
        },
        "scope": "Cluster",
        "versions": [
            {
                "name": "v1alpha2",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}
PREDICTED = "kai.scheduler/numa-placement-predicted"
NOT_ALIGNED = "node cannot NUMA-align the pod's resources under its Topology Manager policy"


def _topology(node: str) -> dict[str, Any]:
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": node},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
            {"name": "topologyManagerScope", "value": "pod"},
        ],
        "zones": [
            {
                "name": f"node-{i}",
                "type": "Node",
                "resources": [{"name": "cpu", "capacity": "4", "allocatable": "4", "available": "4"}],
            }
            for i in range(2)
        ],
    }


def _guaranteed(namespace: str, name: str, queue_name: str, node: str) -> dict[str, Any]:
    """A Guaranteed pod of 3 whole cpus on ``node`` (its ``pool`` label)."""
    pod = gpu_pod(namespace, name, queue_name, node, 0)
    amounts = {"cpu": "3", "memory": "1Gi"}
    pod["spec"]["containers"][0]["resources"] = {"requests": amounts, "limits": amounts}
    return pod


def test_guaranteed_pods_take_numa_zones_and_the_prediction_reaches_the_pod(
    control_plane: ControlPlane, namespace: str, kwok: Kwok, tmp_path: Path
) -> None:
    node, queue_name = f"numa-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name)
    kwok.node(node, 0, {"pool": node})
    config = tmp_path / "numa.yaml"
    config.write_text("actions: allocate\ntiers:\n- plugins:\n  - {name: predicates}\n  - {name: proportion}\n"
                      "  - {name: priority}\n  - {name: numa}\n")  # fmt: skip
    control_plane.kubectl("delete", "crd", CRD["metadata"]["name"], "--ignore-not-found")
    control_plane.kubectl("apply", "-f", str(PRIORITY_CLASSES))
    kai = Kai(control_plane, tmp_path / "kai.log", f"--scheduler-conf={config}")
    try:
        _runs_without_the_crd(control_plane, namespace, queue_name, node, tmp_path)
        apply(control_plane, tmp_path, CRD)
        wait_until("the CRD to be served", lambda: _served(control_plane))
        apply(control_plane, tmp_path, _topology(node))
        wait_until("the scheduler to read the topology", lambda: _scheduler_sees_topology(kai, node))
        for name, zone in (("first", "node-0"), ("second", "node-1")):
            apply(control_plane, tmp_path, _guaranteed(namespace, name, queue_name, node))
            bound = wait_until(f"{name} to be bound", lambda name=name: _bound(control_plane, namespace, name))
            expected = [{"zone": zone, "amount": {"cpu": "3"}}]
            request = kubectl_json(control_plane, "get", "bindrequest", name, "-n", namespace)
            assert request["spec"]["predictedNUMAZones"] == expected
            assert json.loads(bound["metadata"]["annotations"][PREDICTED]) == expected
        apply(control_plane, tmp_path, _guaranteed(namespace, "third", queue_name, node))
        wait_until("third to wait for a NUMA zone", lambda: NOT_ALIGNED in _scheduled_message(control_plane, namespace))
        assert not pods(control_plane, namespace)["third"]["spec"].get("nodeName")
    finally:
        kai.stop()
        control_plane.kubectl("delete", "crd", CRD["metadata"]["name"], "--ignore-not-found", "--wait=false")


def _runs_without_the_crd(cp: ControlPlane, namespace: str, queue_name: str, node: str, tmp_path: Path) -> None:
    """With the numa plugin configured but no NodeResourceTopology API, the scheduler starts and schedules (KAI
    watches the kind only where its API is served)."""
    apply(cp, tmp_path, _guaranteed(namespace, "before", queue_name, node))
    wait_until("a pod to be bound without the CRD", lambda: _bound(cp, namespace, "before"))
    cp.kubectl("delete", "pod", "before", "-n", namespace, "--wait=true")


def _scheduler_sees_topology(kai: Kai, node: str) -> bool:
    """The scheduler's own snapshot (``/get-snapshot``) holds the node's NodeResourceTopology."""
    with urllib.request.urlopen(f"http://127.0.0.1:{kai.plugin_port}/get-snapshot", timeout=10) as answer:
        data = answer.read()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        raw = json.loads(archive.read("snapshot.json"))["rawObjects"]
    return any(t["metadata"]["name"] == node for t in raw.get("nodeResourceTopologies") or [])


def _served(cp: ControlPlane) -> bool:
    return cp.kubectl("get", "noderesourcetopologies", check=False).returncode == 0


def _bound(cp: ControlPlane, namespace: str, name: str) -> dict[str, Any] | None:
    pod = pods(cp, namespace).get(name)
    return pod if pod is not None and pod["spec"].get("nodeName") else None


def _scheduled_message(cp: ControlPlane, namespace: str) -> str:
    conditions = pods(cp, namespace)["third"]["status"].get("conditions") or []
    return " ".join(c.get("message", "") for c in conditions if c["type"] == "PodScheduled")
