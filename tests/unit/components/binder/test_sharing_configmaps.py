"""The GPU-sharing ConfigMaps the binder writes for a pod bound to a share of a GPU (KAI's binder gpusharing
plugin): named as admission pointed the pod at them, owned by the pod, removed with it or after a failed bind."""

from typing import Any

from components.binder.test_binder import NS, Clock, fraction, node, pod, refusing, status
from kai.cluster.memory import MemoryCluster
from kai.cluster.port import ClusterError
from kai.components.binder.component import Binder
from kai.components.binder.sharing_configmaps import PORTION_KEYS, VISIBLE_DEVICES


def shared_pod(name: str, prefix: str) -> dict[str, Any]:
    """A pod as kai's admission leaves a GPU-sharing pod: its ConfigMaps' prefix, its container reading them."""
    shared = pod(name)
    shared["metadata"]["annotations"] = {"gpu-fraction": "0.5", "runai/shared-gpu-configmap": prefix}
    shared["spec"]["containers"][0]["env"] = [
        {"name": key, "valueFrom": {"configMapKeyRef": {"name": f"{prefix}-0", "key": key}}}
        for key in (VISIBLE_DEVICES, *PORTION_KEYS)
    ]
    return shared


def configmaps(cluster: MemoryCluster) -> dict[str, tuple[dict[str, str], list[tuple[str, str, str]]]]:
    """The ConfigMaps of the test namespace: their data and owners (kind, name, uid)."""
    return {
        c["metadata"]["name"]: (
            c.get("data") or {},
            [(o["kind"], o["name"], o["uid"]) for o in c["metadata"].get("ownerReferences") or []],
        )
        for c in cluster.list("ConfigMap")
        if c["metadata"]["namespace"] == NS
    }


def test_a_shared_gpu_pod_gets_its_configmaps_owned_by_it_and_they_go_with_it() -> None:
    """KAI's binder makes the capabilities and -evar ConfigMaps admission pointed the pod at, owned by the pod; the
    capabilities one carries the portion, and the device once the reservation pod has reported it."""
    request = fraction("p", "n1", "g")
    request["spec"]["receivedGPU"] = {"count": 1, "portion": "0.50"}
    cluster = MemoryCluster([node("n1"), shared_pod("p", "p-abc1234-shared-gpu"), request])
    assert Binder(cluster, Clock()).reconcile() == 1
    owner = [("Pod", "p", "uid-p")]
    assert configmaps(cluster) == {
        "p-abc1234-shared-gpu-0": ({"GPU_PORTION": "0.50", "RUNAI_NUM_OF_GPUS": "0.50"}, owner),
        "p-abc1234-shared-gpu-0-evar": ({}, owner),
    }
    cluster.finalize("Pod", f"{NS}/p")
    assert configmaps(cluster) == {}, "the garbage collector removes them with their pod"


def test_the_device_a_reservation_pod_reports_is_the_pods_visible_device() -> None:
    reservation = {
        "kind": "Pod",
        "metadata": {
            "name": "gpu-reservation-n1-g",
            "namespace": "kai-resource-reservation",
            "labels": {"runai-gpu-group": "g"},
            "annotations": {"run.ai/reserve_for_gpu_index": "GPU-1234"},
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "resource-reservation"}]},
        "status": {"phase": "Running"},
    }
    request = fraction("p", "n1", "g")
    request["spec"]["receivedGPU"] = {"count": 1, "portion": "0.50"}
    direct = shared_pod("p", "p-abc1234-shared-gpu")
    direct["spec"]["containers"][0]["env"] = []  # the device then goes to the -evar ConfigMap, read as a whole
    cluster = MemoryCluster([node("n1"), shared_pod("q", "q-abc1234-shared-gpu"), direct, reservation, request])
    other = fraction("q", "n1", "g")
    other["spec"]["receivedGPU"] = {"count": 1, "portion": "0.50"}
    cluster.create("BindRequest", other)
    assert Binder(cluster, Clock()).reconcile() == 2
    found = {name: data for name, (data, _) in configmaps(cluster).items()}
    assert found["q-abc1234-shared-gpu-0"]["NVIDIA_VISIBLE_DEVICES"] == "GPU-1234"
    assert found["p-abc1234-shared-gpu-0-evar"] == {"NVIDIA_VISIBLE_DEVICES": "GPU-1234"}
    assert "NVIDIA_VISIBLE_DEVICES" not in found["p-abc1234-shared-gpu-0"]


def test_a_failed_shared_bind_removes_its_configmaps_and_a_pod_admission_did_not_see_gets_none() -> None:
    cluster = MemoryCluster(
        [node("n1"), shared_pod("bad", "bad-abc1234-shared-gpu"), pod("plain"), fraction("bad", "n1", "g-bad")]
    )
    cluster.create("BindRequest", fraction("plain", "n1", "g-plain"))
    cluster.bind_pod = refusing(ClusterError("refused"))  # type: ignore[method-assign]
    Binder(cluster, Clock()).reconcile()
    assert configmaps(cluster) == {}
    assert status(cluster, "bad")["phase"] == "Failed"
    cluster = MemoryCluster([node("n1"), pod("plain"), fraction("plain", "n1", "g-plain")])
    assert Binder(cluster, Clock()).reconcile() == 1 and configmaps(cluster) == {}
