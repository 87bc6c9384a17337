"""kai admission on the real control plane: the webhook configurations kai's contract renders, registered with a
URL and a CA made here, the server started as `kai admission`; everything through kubectl, as a user sees it."""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from controlplane import REPO, ControlPlane, free_port, make_pki
from kai_support import SEED, Kai, kubectl_json, pods, wait_until
from testcluster import Kwok

from kai.components.admission import webhooks


@dataclass
class Admission:
    cp: ControlPlane
    workdir: Path
    cert_dir: Path
    port: int
    probe_port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [
            sys.executable, "-m", "kai", "admission", f"--kubeconfig={self.cp.kubeconfig_path}",
            f"--webhook-addr=127.0.0.1:{self.port}", f"--cert-dir={self.cert_dir}", "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{self.probe_port}", "--gpu-sharing-enabled",
            "--gpu-fraction-runtime-class-name=",
        ]  # fmt: skip
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        wait_until("kai admission to be ready", lambda: Kai.get(self.probe_port, "/readyz")[0] == 200)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=40)

    def new_certificate(self, name: str) -> str:
        """A new CA and serving certificate for 127.0.0.1 in the cert dir (as a rotated Secret); the CA, base64."""
        (self.workdir / name).mkdir()
        pki = make_pki(self.workdir / name)
        shutil.copy(pki["server_key"], self.cert_dir / "tls.key.new")
        shutil.copy(pki["server_cert"], self.cert_dir / "tls.crt")
        (self.cert_dir / "tls.key.new").rename(self.cert_dir / "tls.key")
        return base64.b64encode(pki["ca"].read_bytes()).decode()

    def register(self, ca_bundle: str) -> None:
        client = webhooks.url_client(f"https://127.0.0.1:{self.port}", ca_bundle)
        self.cp.apply(*webhooks.configurations(client))


CONFIGURATIONS = (
    ("mutatingwebhookconfiguration", webhooks.MUTATING_CONFIGURATION),
    ("validatingwebhookconfiguration", webhooks.VALIDATING_CONFIGURATION),
    ("validatingwebhookconfiguration", webhooks.QUEUE_CONFIGURATION),
    ("validatingwebhookconfiguration", webhooks.PODGROUP_CONFIGURATION),
)


@pytest.fixture
def admission(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Admission]:
    """`kai admission` serving the webhooks, registered for the test and removed after it (the cluster is shared)."""
    cert_dir = tmp_path / "certs"
    cert_dir.mkdir()
    server = Admission(control_plane, tmp_path, cert_dir, free_port(), free_port(), tmp_path / "admission.log")
    ca = server.new_certificate("pki-1")
    server.start()
    server.register(ca)
    try:
        wait_until("the API server to call the queue webhook", lambda: kai_refuses(control_plane))
        yield server
    finally:
        for kind, name in CONFIGURATIONS:
            control_plane.kubectl("delete", kind, name, "--ignore-not-found")
        server.stop()
        if server.process is not None and server.process.returncode not in (0, None):
            print(server.log.read_text())


PROBE = "parent queue 'nowhere' does not exist"
"""What only kai's queue webhook answers for the probe queue (the CRD's schema accepts it)."""


def kai_refuses(cp: ControlPlane) -> str:
    return PROBE if PROBE in refused(cp, queue("probe", "nowhere"), "--dry-run=server") else ""


def kubectl_apply(cp: ControlPlane, document: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cp.kubectl_path), f"--kubeconfig={cp.kubeconfig_path}", "apply", *args, "-f", "-"],
        input=yaml.safe_dump(document), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def refused(cp: ControlPlane, document: dict[str, Any], *args: str) -> str:
    """kubectl's error for an object the cluster refuses ("" when it was accepted)."""
    done = kubectl_apply(cp, document, *args)
    return done.stderr if done.returncode else ""


UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def queue(name: str, parent: str = "", gpu: dict[str, float] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"resources": {"gpu": gpu or UNLIMITED, "cpu": UNLIMITED, "memory": UNLIMITED}}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


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
