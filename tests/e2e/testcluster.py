"""The rest of a cluster for the e2e tests, beside kube-apiserver + etcd (controlplane.py): real parts, no mocks.

- kube-controller-manager of the apiserver's release: the workload controllers, garbage collection, namespace
  deletion, the node lifecycle controller (which lifts the not-ready taint once a node is Ready) and the disruption
  controller (PodDisruptionBudgets' status, which the API server's eviction subresource judges by);
- KWOK as the kubelet stand-in: nodes annotated `kwok.x-k8s.io/node: fake` get Ready and keep their lease, pods bound
  to them go Running, deleted pods go away; a pod annotated `kai.test/run-for: <duration>` (e.g. "2s") succeeds that
  long after it started, as KAI's scale tests make pods complete with a Stage;
- the KubeRay operator and the Kubeflow training operator, with their CRDs, run as KAI's docs tell users to install
  them (no batch-scheduler / gang-scheduler option): their pods take `schedulerName` from the templates;
- kube-state-metrics, for the node capacity (kube_node_status_capacity) KAI's time-based fair share divides by.

Binaries, CRDs and stages come from hack/testcluster.sh (built once from the Go module proxy, cached under
~/.cache/kai/testcluster/). Every part runs on loopback as the identity it has in a cluster: a ServiceAccount bound
to the ClusterRole its own manifests define (kube-controller-manager: the bootstrap system:kube-controller-manager
role, one ServiceAccount per controller). Each logs to its own file and is stopped when its fixture ends.
"""

from __future__ import annotations

import base64
import os
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from controlplane import (
    REPO,
    ControlPlane,
    Proc,
    free_port,
    http_ready,
    install_crds,
    poll_until,
    provided_directory,
    spawn,
)

TESTCLUSTER_SCRIPT = REPO / "hack" / "testcluster.sh"
STAGES_DIR = Path(__file__).resolve().parent / "stages"
START_TIMEOUT_S = 90.0

KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
RUN_FOR_ANNOTATION = "kai.test/run-for"

# kube-controller-manager's controllers a cluster needs for the workloads KAI schedules; nothing else runs.
CONTROLLERS = (
    "job-controller",
    "cronjob-controller",
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "node-lifecycle-controller",
    "taint-eviction-controller",
    "pod-garbage-collector-controller",
    "ttl-after-finished-controller",
    "clusterrole-aggregation-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "disruption-controller",
)

# The training operator's webhook server reads its serving certificate from this fixed path (a mounted Secret in its
# Deployment); the harness writes the Secret's certificate there, as the kubelet would. No webhook configuration is
# installed, so the API server never calls it (docs/deviations.md).
TRAINING_OPERATOR_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")


def find_part(name: str) -> Path:
    """The directory holding one part (its binary, and its crds/, rbac/, stages/): built once if missing."""
    return provided_directory(TESTCLUSTER_SCRIPT, name)


def load_documents(*paths: Path) -> list[dict[str, Any]]:
    documents = []
    for path in paths:
        documents += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return documents


@dataclass
class Part:
    """One running part of the test cluster."""

    proc: Proc
    kubeconfig: Path

    def stop(self) -> None:
        self.proc.stop()


def _wait_healthy(cp: ControlPlane, proc: Proc, url: str, context: ssl.SSLContext | None = None) -> None:
    try:
        poll_until(
            f"{proc.name} at {url}",
            lambda: http_ready(url, context, None, lambda _: True),
            START_TIMEOUT_S,
            [*cp.processes, proc],
        )
    except BaseException:
        proc.stop()
        raise


def _identity(cp: ControlPlane, workdir: Path, namespace: str, name: str, role_files: list[Path]) -> Path:
    """Applies the part's own ClusterRole(s) and returns a kubeconfig for its ServiceAccount bound to the first."""
    roles = load_documents(*role_files)
    cp.apply(*roles)
    return cp.service_account_kubeconfig(namespace, name, roles[0]["metadata"]["name"], workdir / "kubeconfig")


# ------------------------------------------------------------------------------------------- controller-manager


def start_controller_manager(cp: ControlPlane, workdir: Path) -> Part:
    """kube-controller-manager with CONTROLLERS, each controller with its own ServiceAccount's credentials."""
    bin_dir = find_part("kube-controller-manager")
    kubeconfig = cp.service_account_kubeconfig(
        "kube-system", "kube-controller-manager", "system:kube-controller-manager", workdir / "kubeconfig"
    )
    port = free_port()
    proc = spawn(
        "kube-controller-manager",
        [
            str(bin_dir / "kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--use-service-account-credentials=true",
            f"--controllers={','.join(CONTROLLERS)}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={workdir / 'certs'}",
            "--kube-api-qps=200",
            "--kube-api-burst=400",
            "--concurrent-job-syncs=10",
            "--v=1",
        ],
        workdir / "kube-controller-manager.log",
    )
    unverified = ssl.create_default_context()  # its serving certificate is self-signed at start
    unverified.check_hostname, unverified.verify_mode = False, ssl.CERT_NONE
    _wait_healthy(cp, proc, f"https://127.0.0.1:{port}/healthz", unverified)
    return Part(proc, kubeconfig)


# ------------------------------------------------------------------------------------------- KWOK


def node_manifest(
    name: str,
    gpus: int = 8,
    labels: Mapping[str, str] | None = None,
    *,
    gpu_memory_mib: int | None = None,
    cpu: str = "64",
    memory: str = "512Gi",
    ephemeral_storage: str = "1Ti",
    pods: int = 110,
    taints: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """A Node as a kubelet on a GPU machine registers it (cpu, memory, ephemeral storage, pods and GPUs on its
    status, the GPU operator's labels, the kubelet's `--register-with-taints`), marked for KWOK to run it."""
    node_labels = {"kubernetes.io/hostname": name, "type": "kwok"}
    if gpus:
        node_labels |= {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": str(gpus)}
    if gpu_memory_mib is not None:
        node_labels["nvidia.com/gpu.memory"] = str(gpu_memory_mib)
    resources = {
        "cpu": cpu,
        "memory": memory,
        "ephemeral-storage": ephemeral_storage,
        "pods": str(pods),
        "nvidia.com/gpu": str(gpus),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": node_labels | dict(labels or {}),
            "annotations": dict([KWOK_NODE_ANNOTATION]),
        },
        "spec": {"taints": [dict(t) for t in taints]},
        "status": {"capacity": resources, "allocatable": resources},
    }


def node_is_ready(node: Mapping[str, Any]) -> bool:
    """Ready=True and the admission-time not-ready taint lifted by the node lifecycle controller."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    taints = (node.get("spec") or {}).get("taints") or []
    return ready and not any(t.get("key") == NOT_READY_TAINT for t in taints)


@dataclass
class Kwok(Part):
    """KWOK, with the node helper every test uses to add GPU nodes."""

    cp: ControlPlane

    def node(self, name: str, gpus: int = 8, labels: Mapping[str, str] | None = None, **options: Any) -> dict[str, Any]:
        """Registers a KWOK GPU node (see node_manifest) and waits until it is Ready with no not-ready taint."""
        status, body = self.cp.request("/api/v1/nodes", "POST", node_manifest(name, gpus, labels, **options))
        if status != 201:
            raise AssertionError(f"creating node {name} failed ({status}): {body}")
        found: dict[str, Any] = {}

        def ready() -> bool:
            status, body = self.cp.request(f"/api/v1/nodes/{name}")
            found.update(body if status == 200 else {})
            return status == 200 and node_is_ready(body)

        poll_until(f"node {name} to be Ready without the not-ready taint", ready, 60.0, [*self.cp.processes, self.proc])
        return found


def start_kwok(cp: ControlPlane, workdir: Path) -> Kwok:
    """KWOK managing the nodes annotated kwok.x-k8s.io/node=fake, with KWOK's fast node and pod stages (pods run
    until deleted) plus tests/e2e/stages (the run-for completion)."""
    part_dir = find_part("kwok")
    install_crds(cp, part_dir / "crds")
    cp.apply(*load_documents(*sorted((part_dir / "stages").glob("*.yaml")), *sorted(STAGES_DIR.glob("*.yaml"))))
    kubeconfig = _identity(cp, workdir, "kube-system", "kwok-controller", sorted((part_dir / "rbac").glob("*.yaml")))
    port = free_port()
    proc = spawn(
        "kwok",
        [
            str(part_dir / "kwok"),
            f"--kubeconfig={kubeconfig}",
            f"--manage-nodes-with-annotation-selector={'='.join(KWOK_NODE_ANNOTATION)}",
            "--enable-crds=Stage",
            "--node-lease-duration-seconds=40",  # a kubelet's default: the node lifecycle controller watches it
            "--cidr=10.244.0.0/16",
            "--node-ip=10.240.0.1",
            f"--server-address=127.0.0.1:{port}",
        ],
        workdir / "kwok.log",
        env={"KWOK_WORKDIR": str(workdir / "kwok-home")},  # not ~/.kwok: its kwok.yaml would be loaded
    )
    _wait_healthy(cp, proc, f"http://127.0.0.1:{port}/healthz")
    return Kwok(proc, kubeconfig, cp)


# ------------------------------------------------------------------------------------------- operators


def _start_operator(
    cp: ControlPlane,
    workdir: Path,
    part: str,
    namespace: str,
    argv: list[str],
    mount: Callable[[Proc], None] | None = None,
) -> Part:
    """Installs the operator's CRDs and ClusterRole, runs `argv` (the binary, relative to the part's directory, and
    its flags) as ServiceAccount `namespace/part`, and waits for its /readyz."""
    part_dir = find_part(part)
    install_crds(cp, part_dir / "crds")
    kubeconfig = _identity(cp, workdir, namespace, part, sorted((part_dir / "rbac").glob("*.yaml")))
    probe = free_port()
    proc = spawn(
        part,
        [str(part_dir / argv[0]), *argv[1:], f"--health-probe-bind-address=127.0.0.1:{probe}"],
        workdir / f"{part}.log",
        env={"KUBECONFIG": str(kubeconfig), "MY_POD_NAMESPACE": namespace},  # the downward API's, in a pod
    )
    try:
        if mount is not None:
            mount(proc)
    except BaseException:
        proc.stop()
        raise
    _wait_healthy(cp, proc, f"http://127.0.0.1:{probe}/readyz")
    return Part(proc, kubeconfig)


def start_kuberay(cp: ControlPlane, workdir: Path) -> Part:
    """The KubeRay operator as its Helm chart runs it by default: no batch scheduler, every namespace."""
    argv = ["ray-operator", "--enable-leader-election=false", "--metrics-addr=0", "--log-stdout-encoder=console"]
    return _start_operator(cp, workdir, "kuberay", "ray-system", argv)


def start_training_operator(cp: ControlPlane, workdir: Path) -> Part:
    """The training operator as its standalone manifests run it: every job kind, no gang scheduler."""
    namespace, secret = "kubeflow", "training-operator-webhook-cert"
    cp.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret, "namespace": namespace}},
    )
    argv = ["training-operator", "--metrics-bind-address=0", f"--webhook-server-port={free_port()}"]

    def mount(proc: Proc) -> None:
        _mount_secret(cp, proc, namespace, secret, TRAINING_OPERATOR_CERT_DIR)

    return _start_operator(cp, workdir, "training-operator", namespace, argv, mount)


def _mount_secret(cp: ControlPlane, proc: Proc, namespace: str, name: str, directory: Path) -> None:
    """Writes the Secret's keys as files into `directory` once the operator has filled it (a Secret volume)."""
    data: dict[str, str] = {}

    def filled() -> bool:
        status, body = cp.request(f"/api/v1/namespaces/{namespace}/secrets/{name}")
        data.update((body.get("data") or {}) if status == 200 else {})
        return "tls.crt" in data and "tls.key" in data

    poll_until(f"the operator to fill Secret {namespace}/{name}", filled, START_TIMEOUT_S, [*cp.processes, proc])
    directory.mkdir(parents=True, exist_ok=True)
    for key, value in data.items():
        staged = directory / f".{key}.{os.getpid()}"
        staged.write_bytes(base64.b64decode(value))
        staged.replace(directory / key)  # atomic: another session's operator may read the same path


# ------------------------------------------------------------------------------------------- kube-state-metrics


@dataclass
class KubeStateMetrics(Part):
    port: int


def start_kube_state_metrics(cp: ControlPlane, workdir: Path) -> KubeStateMetrics:
    """kube-state-metrics as its standard manifests run it (its own ClusterRole), exporting nodes only."""
    part_dir = find_part("kube-state-metrics")
    kubeconfig = _identity(cp, workdir, "kube-system", "kube-state-metrics", sorted((part_dir / "rbac").glob("*.yaml")))
    port, telemetry = free_port(), free_port()
    proc = spawn(
        "kube-state-metrics",
        [
            str(part_dir / "kube-state-metrics"),
            f"--kubeconfig={kubeconfig}",
            "--resources=nodes",
            "--host=127.0.0.1",
            f"--port={port}",
            "--telemetry-host=127.0.0.1",
            f"--telemetry-port={telemetry}",
        ],
        workdir / "kube-state-metrics.log",
    )
    _wait_healthy(cp, proc, f"http://127.0.0.1:{port}/healthz")
    return KubeStateMetrics(proc, kubeconfig, port)
