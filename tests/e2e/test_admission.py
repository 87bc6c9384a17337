"""kai admission on the real control plane: the webhook configurations kai's contract renders, registered with a
URL and a CA made here, the server started as `kai admission`; everything through kubectl, as a user sees it."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from admission_support import Admission, kai_refuses, kubectl_apply, queue, refused
from controlplane import ControlPlane
from kai_support import SEED, Kai, kubectl_json, pods, wait_until
from testcluster import Kwok


def kai_pod(namespace: str, name: str, annotations: dict[str, str], containers: list[dict[str, Any]] | None = None):
    gpu = {"nvidia.com/gpu": "1"}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"schedulerName": "kai-scheduler", "containers": containers if containers is not None else [
            {"name": "main", "image": "busybox", "resources": {"requests": gpu, "limits": gpu}}]},
    }  # fmt: skip


def podgroup(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}  # fmt: skip


def queue_condition(cp: ControlPlane, name: str, condition_type: str) -> dict[str, Any] | None:
    conditions = kubectl_json(cp, "get", "queue", name).get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == condition_type), None)


def test_what_kai_refuses_it_refuses_in_kais_words_then_its_own(
    control_plane: ControlPlane, admission: Admission, namespace: str
) -> None:
    cp, ns = control_plane, namespace
    suffix = ns.removeprefix("e2e-")
    cases = [
        ({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": f"bare-{suffix}"}, "spec": {}},
         "resources must be specified", f"Queue bare-{suffix}: field spec.resources: is required"),
        (podgroup(ns, "both", {"minMember": 2, "minSubGroup": 1, "subGroups": [{"name": "a", "minMember": 1}]}),
         "minMember and minSubGroup are mutually exclusive: set minMember (2) to schedule a fixed number of pods",
         "field spec.minSubGroup: set together with minMember"),
        (podgroup(ns, "leaf", {"subGroups": [{"name": "a"}]}), "subgroup a: minMember is required",
         "field spec.subGroups[0].minMember: is required on a leaf sub-group"),
        (podgroup(ns, "loop", {"subGroups": [{"name": "a", "parent": "b", "minMember": 1},
                                             {"name": "b", "parent": "a"}]}),
         "cycle detected in subgroups", "sub-group cycle a → b → a"),
        (kai_pod(ns, "fraction", {"gpu-fraction": "1.5"}, [{"name": "main", "image": "busybox"}]),
         "gpu-fraction annotation value must be a positive number smaller than 1.0",
         "field metadata.annotations.gpu-fraction: got '1.5'; allowed: a number in (0, 1)"),
        (kai_pod(ns, "both-gpu", {"gpu-fraction": "0.5", "gpu-memory": "2000"}, [{"name": "main", "image": "busybox"}]),
         "cannot request both GPU and GPU memory",
         "field metadata.annotations.gpu-memory: set together with gpu-fraction; allowed: one of the two"),
        ({"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology", "metadata": {"name": f"t-{suffix}"},
          "spec": {"levels": [{"nodeLabel": "zone", "alias": "rack"}, {"nodeLabel": "rack"}]}},
         "invalid topology aliases: an alias must not equal a nodeLabel; conflicting: [rack]",
         "field spec.levels[0].alias: 'rack' is a node label of a level"),
    ]  # fmt: skip
    for document, kai, explained in cases:
        error = refused(cp, document)
        assert f"denied the request: {kai}" in error, f"{document['kind']} {document['metadata']['name']}: {error!r}"
        assert f"({document['kind']} " in error and explained in error, error
    assert "spec.containers: Required value" in refused(cp, kai_pod(ns, "empty", {}, []))  # the API server's own


def test_what_kai_admits_is_admitted_with_kais_warning(
    control_plane: ControlPlane, admission: Admission, namespace: str
) -> None:
    """Everything KAI's admission accepts, kai's accepts; what kai's scheduler cannot use comes back as a warning that
    kubectl prints (the object is stored, and reported on by the scheduler until mended)."""
    cp, ns = control_plane, namespace
    suffix = ns.removeprefix("e2e-")
    mended = "kai's scheduler will not use it until this is mended"
    tops = [queue(f"top-{suffix}"), queue(f"child-{suffix}", f"top-{suffix}")]
    cases = [
        (queue(f"half-{suffix}", gpu={"quota": -0.5, "limit": -1, "overQuotaWeight": 1}),
         f"Queue half-{suffix}: field spec.resources.gpu.quota: got -0.5; allowed: -1 (unlimited) or a number of at"),
        (queue(f"orphan-{suffix}", f"missing-{suffix}"),
         f"Queue orphan-{suffix}: field spec.parentQueue: parent queue 'missing-{suffix}' does not exist; {mended}"),
        (queue(f"top-{suffix}", f"child-{suffix}"),
         f"Queue top-{suffix}: field spec.parentQueue: parent cycle top-{suffix} → child-{suffix} → top-{suffix}"),
        (queue(f"low-{suffix}", gpu={"quota": 4, "limit": 2, "overQuotaWeight": 1}),
         f"Queue low-{suffix}: field spec.resources.gpu.limit: got 2, below the quota 4"),
        (podgroup(ns, "too-many", {"minSubGroup": 3, "subGroups": [{"name": "a", "minMember": 1}]}),
         "minSubGroup (3) exceeds the number of direct child SubGroups (1) (PodGroup"),
        (podgroup(ns, "elastic", {"minSubGroup": 1, "subGroups": [
            {"name": "w", "minSubGroup": 0}, {"name": "a", "parent": "w", "minMember": 1},
            {"name": "b", "parent": "w", "minMember": 1}]}), ""),
        (kai_pod(ns, "all-devices", {}, [{"name": "main", "image": "busybox", "env": [
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
            "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]), ""),
    ]  # fmt: skip
    try:
        for document in tops:
            assert kubectl_apply(cp, document).returncode == 0
        for document, warning in cases:
            done = kubectl_apply(cp, document)
            name = f"{document['kind']} {document['metadata']['name']}"
            assert done.returncode == 0, f"{name}: {done.stderr!r}"
            if warning:
                assert f"Warning: {warning}" in done.stderr, f"{name}: {done.stderr!r}"
            else:
                assert "Warning:" not in done.stderr, f"{name}: {done.stderr!r}"
    finally:
        queues = {d["metadata"]["name"] for d in [*tops, *(case[0] for case in cases)] if d["kind"] == "Queue"}
        cp.kubectl("delete", "queue", *sorted(queues), "--ignore-not-found")


def test_a_child_queue_applied_before_its_parent_is_used_once_the_parent_appears(
    control_plane: ControlPlane, admission: Admission, kai: Kai, kwok: Kwok, namespace: str
) -> None:
    """Objects applied in any order converge (`kubectl apply -f dir/`, GitOps): the child is admitted with a
    warning, the Queue says why it is not used and its pod waits; the parent arrives and the pod runs."""
    cp, ns = control_plane, namespace
    parent, child = f"parent-{ns}", f"child-{ns}"
    kwok.node(f"order-{ns}", 1)
    try:
        done = kubectl_apply(cp, queue(child, parent))
        assert done.returncode == 0 and f"parent queue '{parent}' does not exist" in done.stderr, done.stderr
        pod = kai_pod(ns, "early", {})
        pod["metadata"]["labels"] = {"kai.scheduler/queue": child}
        assert kubectl_apply(cp, pod).returncode == 0
        valid = wait_until("the child queue's condition", lambda: queue_condition(cp, child, "Valid"))
        assert (valid["status"], valid["reason"]) == ("False", "InvalidObject")
        assert f"parent queue '{parent}' does not exist" in valid["message"]
        assert not pods(cp, ns)["early"]["spec"].get("nodeName")
        assert kubectl_apply(cp, queue(parent)).returncode == 0
        wait_until("the pod to run", lambda: pods(cp, ns)["early"]["status"].get("phase") == "Running")
        wait_until("the condition to go", lambda: queue_condition(cp, child, "Valid") is None)
    finally:
        cp.kubectl("delete", "pod", "early", "-n", ns, "--ignore-not-found", "--wait=false")
        cp.kubectl("delete", "queue", child, parent, "--ignore-not-found")


def test_inference_light_warns_then_runs_on_half_a_gpu(
    control_plane: ControlPlane, admission: Admission, kai: Kai, kwok: Kwok, namespace: str
) -> None:
    cp = control_plane
    cp.kubectl("apply", "-f", str(SEED / "queues.yaml"))
    cp.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kai-resource-reservation"}})  # the chart's
    kwok.node(f"light-{namespace}", 2)
    done = cp.kubectl("apply", "-n", namespace, "-f", str(SEED / "inference-light.yaml"))
    assert 'Warning: gpu-fraction "0.5" decides the GPU request: kai removed nvidia.com/gpu 1' in done.stderr
    light = wait_until("the pod to run", lambda: (p := pods(cp, namespace)["inference-light"])["status"].get(
        "phase") == "Running" and p)  # fmt: skip
    resources = light["spec"]["containers"][0]["resources"]
    assert "nvidia.com/gpu" not in resources.get("limits", {}) and "nvidia.com/gpu" not in resources.get("requests", {})
    assert light["metadata"]["annotations"]["received-resource-type"] == "Fraction"
    (bind,) = kubectl_json(cp, "get", "bindrequests", "-n", namespace)["items"]
    assert bind["spec"]["receivedGPU"] == {"count": 1, "portion": "0.50"}
    env = {e["name"] for e in light["spec"]["containers"][0]["env"]}
    assert {"NVIDIA_VISIBLE_DEVICES", "GPU_PORTION"} <= env


def test_other_pods_pass_untouched_even_when_the_webhook_is_down(
    control_plane: ControlPlane, admission: Admission, namespace: str
) -> None:
    admission.stop()
    plain = kai_pod(namespace, "plain", {"gpu-fraction": "7"}, [{"name": "main", "image": "busybox"}])
    plain["spec"]["schedulerName"] = "default-scheduler"
    assert not refused(control_plane, plain)
    stored = kubectl_json(control_plane, "get", "pod", "plain", "-n", namespace)
    assert "runai/shared-gpu-configmap" not in stored["metadata"]["annotations"] and "volumes" not in stored["spec"]
    error = refused(control_plane, kai_pod(namespace, "mine", {}))
    assert "failed calling webhook" in error  # kai's own pods wait for kai (failurePolicy Fail)


def test_a_rotated_certificate_is_served_without_a_restart(control_plane: ControlPlane, admission: Admission) -> None:
    assert admission.process is not None
    pid = admission.process.pid
    ca = admission.new_certificate("pki-2")
    admission.register(ca)  # the operator publishes the new CA; the API server now trusts only it
    wait_until("a refusal through the new certificate", lambda: kai_refuses(control_plane))
    _, checks = Kai.get(admission.probe_port, "/readyz?verbose")
    assert "(load 2)" in checks and admission.process.pid == pid and admission.process.poll() is None


def test_an_in_place_resize_past_the_queues_limit_is_refused_with_the_reason(
    control_plane: ControlPlane, admission: Admission, kai: Kai, kwok: Kwok, namespace: str
) -> None:
    """KAI #2021 through the API server's pods/resize subresource: growth within the queue's cpu limit is admitted
    (and then charged: the queue's status follows the new size), growth past it refused with KAI's reason. KWOK,
    the kubelet's stand-in, does not report container resources, without which the API server refuses any resize
    (version skew: "node without support for resize"); the test writes them as a kubelet does."""
    cp, name = control_plane, f"resize-{namespace.removeprefix('e2e-')}"
    limited = queue(name)
    limited["spec"]["resources"]["cpu"] = {"quota": -1, "limit": 3000, "overQuotaWeight": 1}
    assert not refused(cp, limited)
    kwok.node(name, 0)
    cpu = {"cpu": "2", "memory": "1Gi"}
    web = kai_pod(
        namespace, "web", {}, [{"name": "main", "image": "busybox", "resources": {"requests": cpu, "limits": cpu}}]
    )
    web["metadata"]["labels"] = {"kai.scheduler/queue": name}
    web["spec"]["nodeSelector"] = {"kubernetes.io/hostname": name}
    assert not refused(cp, web)
    wait_until("the pod to run", lambda: pods(cp, namespace)["web"]["status"].get("phase") == "Running")

    def allocated() -> str:
        return str((kubectl_json(cp, "get", "queue", name).get("status") or {}).get("allocated", {}).get("cpu", ""))

    def resize(cores: str) -> subprocess.CompletedProcess[str]:
        amounts = {"cpu": cores, "memory": "1Gi"}
        patch = {"spec": {"containers": [{"name": "main", "resources": {"requests": amounts, "limits": amounts}}]}}
        return cp.kubectl("patch", "pod", "web", "-n", namespace, "--subresource=resize", "-p", json.dumps(patch),
                          check=False)  # fmt: skip

    def report(cores: str) -> None:
        amounts = {"cpu": cores, "memory": "1Gi"}
        status = {"name": "main", "resources": {"requests": amounts, "limits": amounts}, "allocatedResources": amounts}
        patch = json.dumps({"status": {"containerStatuses": [status]}})
        cp.kubectl("patch", "pod", "web", "-n", namespace, "--subresource=status", "--type=strategic", "-p", patch)

    report("2")
    wait_until("the queue to count the pod", lambda: allocated() == "2")
    assert resize("3").returncode == 0
    report("3")
    wait_until("the queue to count the resize", lambda: allocated() == "3")
    growing = resize("5")
    assert growing.returncode != 0
    assert f"CPU upsize would push queue {name} Allocated (3000m + 2000m) over limit (3000m)" in growing.stderr
    assert pods(cp, namespace)["web"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "3"


def test_shared_gpu_pods_get_their_configmaps_and_a_scaled_down_deployment_leaves_none(
    control_plane: ControlPlane, admission: Admission, kai: Kai, kwok: Kwok, namespace: str
) -> None:
    """Admission points each GPU-sharing pod at two ConfigMaps (`<prefix>-0` and `<prefix>-0-evar`); the binder
    makes them when it binds the pod, owned by it, so the garbage collector removes them with it (KAI's binder
    does the same; KAI's suite counts them up to 20 for 10 pods and back to 0)."""
    cp = control_plane
    cp.kubectl("apply", "-f", str(SEED / "queues.yaml"))
    pool = f"share-{namespace}"
    kwok.node(pool, 1, {"pool": pool})
    labels = {"app": "sharing", "kai.scheduler/queue": "equipe-inference"}
    template = {
        "metadata": {"labels": labels, "annotations": {"gpu-fraction": "0.1"}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "nodeSelector": {"pool": pool},
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "sharing", "namespace": namespace},
        "spec": {"replicas": 10, "selector": {"matchLabels": labels}, "template": template},
    }
    cp.apply(deployment)

    def shared() -> dict[str, Any]:
        found = kubectl_json(cp, "get", "configmaps", "-n", namespace)["items"]
        return {c["metadata"]["name"]: c for c in found if "shared-gpu" in c["metadata"]["name"]}

    def running() -> list[dict[str, Any]]:
        return [p for p in pods(cp, namespace).values() if p["status"].get("phase") == "Running"]

    wait_until("10 pods on the one shared GPU", lambda: len(running()) == 10)
    configmaps = wait_until("2 ConfigMaps per pod", lambda: found if len(found := shared()) == 20 else None)
    for p in running():
        prefix = p["metadata"]["annotations"]["runai/shared-gpu-configmap"]
        capabilities, direct = configmaps[f"{prefix}-0"], configmaps[f"{prefix}-0-evar"]
        owner = [{"apiVersion": "v1", "kind": "Pod", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}]
        assert capabilities["metadata"]["ownerReferences"] == owner == direct["metadata"]["ownerReferences"]
        assert capabilities["data"] == {"GPU_PORTION": "0.10", "RUNAI_NUM_OF_GPUS": "0.10"}
    cp.kubectl("scale", "deployment", "sharing", "-n", namespace, "--replicas=0")
    wait_until("no GPU-sharing ConfigMap left", lambda: not shared())
