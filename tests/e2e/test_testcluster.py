"""Smoke tests of the test cluster's parts (testcluster.py): each does in the cluster what it does in a real one."""

from __future__ import annotations

import uuid
from typing import Any

from controlplane import ControlPlane
from kai_support import Kai, create, get, items, owners
from kube.kube_support import wait_until
from testcluster import RUN_FOR_ANNOTATION, Kwok, Part


def container(name: str = "main", gpus: int = 0) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    return {"name": name, "image": "busybox", "resources": {"limits": limits}}


def test_kwok_nodes_are_ready_untainted_and_keep_a_lease(kwok: Kwok, control_plane: ControlPlane) -> None:
    name = f"kwok-{uuid.uuid4().hex[:8]}"
    node = kwok.node(name, gpus=4, labels={"pool": name})
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert node["metadata"]["labels"]["nvidia.com/gpu.count"] == "4"
    assert not node["spec"].get("taints")
    lease = wait_until(
        "KWOK to hold the node's lease",
        lambda: get(control_plane, f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"),
    )
    assert owners(lease) == [("Node", name)]  # held by KWOK (its controller id), renewed as a kubelet would
    assert lease["spec"]["leaseDurationSeconds"] == 40 and lease["spec"]["renewTime"]


def test_a_pod_bound_to_a_kwok_node_runs_and_a_deleted_one_disappears(
    kwok: Kwok, control_plane: ControlPlane, namespace: str
) -> None:
    node = f"kwok-{uuid.uuid4().hex[:8]}"
    kwok.node(node, gpus=1)
    pods = f"/api/v1/namespaces/{namespace}/pods"
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"nodeName": node, "containers": [container(gpus=1)]},
    }
    create(control_plane, pods, body)
    running = wait_until(
        "the pod to run", lambda: (p := get(control_plane, f"{pods}/p")) and p["status"]["phase"] == "Running" and p
    )
    assert running["status"]["podIP"].startswith("10.244.")
    assert control_plane.request(f"{pods}/p", "DELETE")[0] == 200  # graceful (30 s): KWOK ends it at once
    wait_until("the pod to be gone", lambda: get(control_plane, f"{pods}/p") is None)


def test_a_job_pod_made_by_the_job_controller_runs_on_a_kwok_node_after_kai_binds_it_then_succeeds(
    kwok: Kwok, kai: Kai, control_plane: ControlPlane, namespace: str
) -> None:
    pool = f"job-{namespace}"
    kwok.node(f"{pool}-gpu", gpus=2, labels={"pool": pool})
    template = {
        "metadata": {"labels": {"kai.scheduler/queue": "default-queue"}, "annotations": {RUN_FOR_ANNOTATION: "2s"}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "restartPolicy": "Never",
            "nodeSelector": {"pool": pool},
            "containers": [container(gpus=1)],
        },
    }
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train"}, "spec": {"template": template}}
    create(control_plane, f"/apis/batch/v1/namespaces/{namespace}/jobs", job)

    def running_pod() -> Any:
        found = items(control_plane, f"/api/v1/namespaces/{namespace}/pods")
        return found and found[0]["status"]["phase"] in ("Running", "Succeeded") and found[0]

    pod = wait_until("the Job's pod to be bound by kai and run", running_pod)
    assert owners(pod) == [("Job", "train")]
    assert pod["spec"]["nodeName"] == f"{pool}-gpu"
    requests = items(control_plane, f"/apis/scheduling.run.ai/v1alpha2/namespaces/{namespace}/bindrequests")
    assert [r["spec"]["podName"] for r in requests] == [pod["metadata"]["name"]]
    done = wait_until(
        "the Job to complete",
        lambda: (
            (j := get(control_plane, f"/apis/batch/v1/namespaces/{namespace}/jobs/train"))
            and j.get("status", {}).get("succeeded") == 1
            and j
        ),
    )
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in done["status"]["conditions"])


def test_a_deployment_gets_a_replicaset_and_pods_and_deleting_it_collects_them(
    controllers: Part, control_plane: ControlPlane, namespace: str
) -> None:
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container()]}},
        },
    }
    create(control_plane, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment)
    pods = wait_until(
        "the Deployment's 2 pods",
        lambda: len(found := items(control_plane, f"/api/v1/namespaces/{namespace}/pods")) == 2 and found,
    )
    (replicaset,) = items(control_plane, f"/apis/apps/v1/namespaces/{namespace}/replicasets")
    assert owners(replicaset) == [("Deployment", "web")]
    assert {owners(p)[0] for p in pods} == {("ReplicaSet", replicaset["metadata"]["name"])}

    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    assert control_plane.request(path, "DELETE", {"propagationPolicy": "Background"})[0] == 200
    wait_until(
        "the garbage collector to delete the ReplicaSet and its pods",
        lambda: (
            not items(control_plane, f"/apis/apps/v1/namespaces/{namespace}/replicasets")
            and not items(control_plane, f"/api/v1/namespaces/{namespace}/pods")
        ),
    )
    assert control_plane.request(f"/api/v1/namespaces/{namespace}", "DELETE")[0] == 200
    wait_until(
        "the namespace controller to finish deleting the namespace",
        lambda: get(control_plane, f"/api/v1/namespaces/{namespace}") is None,
    )


def test_a_raycluster_makes_kuberay_create_its_head_and_worker_pods_from_the_templates(
    kuberay: Part, control_plane: ControlPlane, namespace: str
) -> None:
    def group(image_name: str) -> dict[str, Any]:
        return {"spec": {"schedulerName": "kai-scheduler", "containers": [container(image_name, gpus=1)]}}

    raycluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "labels": {"kai.scheduler/queue": "equipe-training"}},
        "spec": {
            "rayVersion": "2.46.0",
            "headGroupSpec": {"rayStartParams": {}, "template": group("ray-head")},
            "workerGroupSpecs": [
                {
                    "groupName": "gpu",
                    "replicas": 2,
                    "minReplicas": 2,
                    "maxReplicas": 4,
                    "rayStartParams": {},
                    "template": group("ray-worker"),
                }
            ],
        },
    }
    create(control_plane, f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters", raycluster)
    pods = wait_until(
        "KubeRay to create the head and 2 workers",
        lambda: len(found := items(control_plane, f"/api/v1/namespaces/{namespace}/pods")) == 3 and found,
    )
    kinds = sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods)
    assert kinds == ["head", "worker", "worker"]
    for pod in pods:
        assert owners(pod) == [("RayCluster", "rc")]
        assert pod["spec"]["schedulerName"] == "kai-scheduler"  # from the template: no batch scheduler plugin
        assert pod["metadata"]["labels"]["ray.io/cluster"] == "rc"
        assert not any(
            k.startswith(("scheduling.k8s.io", "kai.scheduler")) for k in pod["metadata"].get("annotations") or {}
        )


def test_a_pytorchjob_makes_the_training_operator_create_master_and_worker_pods(
    training_operator: Part, control_plane: ControlPlane, namespace: str
) -> None:
    def replicas(count: int) -> dict[str, Any]:
        template = {"spec": {"schedulerName": "kai-scheduler", "containers": [container("pytorch", gpus=1)]}}
        return {"replicas": count, "restartPolicy": "OnFailure", "template": template}

    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt", "labels": {"kai.scheduler/queue": "equipe-training"}},
        "spec": {"pytorchReplicaSpecs": {"Master": replicas(1), "Worker": replicas(2)}},
    }
    create(control_plane, f"/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs", job)
    pods = wait_until(
        "the training operator to create the master and 2 workers",
        lambda: len(found := items(control_plane, f"/api/v1/namespaces/{namespace}/pods")) == 3 and found,
    )
    roles = sorted(p["metadata"]["labels"]["training.kubeflow.org/replica-type"] for p in pods)
    assert roles == ["master", "worker", "worker"]
    for pod in pods:
        assert owners(pod) == [("PyTorchJob", "pt")]
        assert pod["spec"]["schedulerName"] == "kai-scheduler"  # from the template: no gang scheduler
        assert "scheduling.k8s.io/group-name" not in (pod["metadata"].get("annotations") or {})

    def condition(kind: str) -> bool:
        job = get(control_plane, f"/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs/pt")
        return any(c["type"] == kind and c["status"] == "True" for c in job.get("status", {}).get("conditions") or [])

    wait_until("the PyTorchJob's Created condition", lambda: condition("Created"))
