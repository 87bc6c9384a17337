"""kai admission on the real control plane: the webhook configurations kai's contract renders, registered with a
URL and a CA made here, the server started as `kai admission`; everything through kubectl, as a user sees it."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from admission_support import Admission, kai_refuses, queue, refused
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


def test_each_bad_case_is_refused_with_the_field_and_what_is_allowed(
    control_plane: ControlPlane, admission: Admission, namespace: str
) -> None:
    cp, ns = control_plane, namespace
    suffix = ns.removeprefix("e2e-")
    assert not refused(cp, queue(f"top-{suffix}"))
    assert not refused(cp, queue(f"child-{suffix}", f"top-{suffix}"))
    cases = [
        (queue(f"neg-{suffix}", gpu={"quota": -5, "limit": -1, "overQuotaWeight": 1}),
         "spec.resources.gpu.quota in body should be greater than or equal to -1"),  # the CRD's own minimum
        (queue(f"half-{suffix}", gpu={"quota": -0.5, "limit": -1, "overQuotaWeight": 1}),
         "field spec.resources.gpu.quota: got -0.5; allowed: -1 (unlimited) or a number of at least 0"),
        (queue(f"orphan-{suffix}", f"missing-{suffix}"),
         f"field spec.parentQueue: parent queue 'missing-{suffix}' does not exist"),
        (queue(f"top-{suffix}", f"child-{suffix}"),
         f"parent cycle top-{suffix} → child-{suffix} → top-{suffix}"),
        (queue(f"low-{suffix}", gpu={"quota": 4, "limit": 2, "overQuotaWeight": 1}),
         "field spec.resources.gpu.limit: got 2, below the quota 4"),
        (podgroup(ns, "both", {"minMember": 2, "minSubGroup": 1, "subGroups": [{"name": "a", "minMember": 1}]}),
         "minMember and minSubGroup are mutually exclusive"),
        (podgroup(ns, "leaf", {"subGroups": [{"name": "a"}]}),
         "field spec.subGroups[0].minMember: is required on a leaf sub-group"),
        (podgroup(ns, "loop", {"subGroups": [{"name": "a", "parent": "b", "minMember": 1},
                                             {"name": "b", "parent": "a"}]}),
         "sub-group cycle a → b → a"),
        (kai_pod(ns, "fraction", {"gpu-fraction": "1.5"}, [{"name": "main", "image": "busybox"}]),
         "field metadata.annotations.gpu-fraction: got '1.5'; allowed: a number in (0, 1)"),
        (kai_pod(ns, "both-gpu", {"gpu-fraction": "0.5", "gpu-memory": "2000"}, [{"name": "main", "image": "busybox"}]),
         "field metadata.annotations.gpu-memory: set together with gpu-fraction; allowed: one of the two"),
        (kai_pod(ns, "empty", {}, []), "spec.containers: Required value"),
        ({"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology", "metadata": {"name": f"t-{suffix}"},
          "spec": {"levels": [{"nodeLabel": "zone", "alias": "rack"}, {"nodeLabel": "rack"}]}},
         "field spec.levels[0].alias: 'rack' is a node label of a level"),
    ]  # fmt: skip
    for document, message in cases:
        error = refused(cp, document)
        assert message in error, f"{document['kind']} {document['metadata']['name']}: {error!r}"
    assert kubectl_json(cp, "get", "queue", f"top-{suffix}")["spec"].get("parentQueue") is None


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
