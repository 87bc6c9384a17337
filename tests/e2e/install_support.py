"""What the install tests need beside the test cluster: helm, and stand-ins for what a real cluster does with the
pods of the kai-scheduler namespace.

- ``SystemPods`` is the default scheduler of those pods (the test cluster runs none): it binds each new pod to a KWOK
  node, where KWOK runs it as a stand-in. The CRD upgrade hook's pod is different: its Job must finish for helm to
  go on, so it is bound to a node no KWOK manages and ``SystemPods`` is its kubelet: it runs the container's real
  ``kai`` command on the host, with a token of the pod's ServiceAccount, and writes how it ended.
- ``HostComponent`` runs a component as its Deployment says (its args, its ServiceAccount's token, its ConfigMap and
  Secret as files), on the host, on loopback ports: so the real kai components work with exactly the RBAC and
  configuration the operator rendered (``kai admission`` with the serving certificate the operator issued, so the
  API server checks it against the webhook configurations' CA bundle).
- ``Judged`` is a host component as a fault drill (drill_support.Drill) judges the kai processes it started.
- ``Install`` is the seed's install on the test cluster (helm, then the operator and the components on the host),
  which tests/e2e/test_install.py and tests/e2e/test_monitoring.py drive.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from controlplane import REPO, ControlPlane, free_port, http_ready
from kai_support import Kai, kubectl_json
from kube.kube_support import wait_until
from testcluster import Kwok, find_part

from kai.components.admission import webhooks
from kai.components.operator.workloads import COMPONENTS as DEPLOYED

NAMESPACE = "kai-scheduler"
CHART = REPO / "deploy" / "helm" / "kai-scheduler"
HOOK_NODE = "kai-hooks"
HOOK_APP = "crd-upgrader"
IMAGE_CRDS = "/kai/crds"
"""Where the image keeps the chart's CRDs (Dockerfile)."""
SYSTEM_NODE = "kai-system"
"""The KWOK node the kai-scheduler namespace's pods run on (as stand-ins: the components run on the host)."""
TIMEOUT_S = 90.0


def helm(cp: ControlPlane, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    binary = find_part("helm") / "helm"
    home = cp.workdir / "helm-home"
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    argv = [str(binary), f"--kubeconfig={cp.kubeconfig_path}", *args]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def kai_argv(args: list[str], kubeconfig: Path) -> list[str]:
    return [sys.executable, "-m", "kai", *args, f"--kubeconfig={kubeconfig}"]


class SystemPods:
    """The scheduler of the kai-scheduler namespace's pods, and the kubelet of the CRD upgrade hook's."""

    def __init__(self, cp: ControlPlane, node: str, workdir: Path) -> None:
        self.cp, self.node, self.workdir = cp, node, workdir
        self.hook_runs: list[subprocess.CompletedProcess[str]] = []
        self._stop = threading.Event()
        status, body = cp.request("/api/v1/nodes", "POST", {"metadata": {"name": HOOK_NODE}})
        if status not in (201, 409):
            raise AssertionError(f"creating node {HOOK_NODE} failed ({status}): {body}")
        self._thread = threading.Thread(target=self._run, name="system-pods", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            status, body = self.cp.request(f"/api/v1/namespaces/{NAMESPACE}/pods")
            for pod in body.get("items", []) if status == 200 else []:
                if not pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
                    self._place(pod)

    def _place(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        hook = (pod["metadata"].get("labels") or {}).get("app") == HOOK_APP
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "target": {"apiVersion": "v1", "kind": "Node", "name": HOOK_NODE if hook else self.node},
        }
        status, _ = self.cp.request(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/binding", "POST", binding)
        if status == 201 and hook:
            self._run_hook(pod)

    def _run_hook(self, pod: dict[str, Any]) -> None:
        """Runs the hook's container on the host as its ServiceAccount, then reports how it ended, as a kubelet."""
        name = pod["metadata"]["name"]
        account = pod["spec"]["serviceAccountName"]
        kubeconfig = self.cp.token_kubeconfig(NAMESPACE, account, self.workdir / f"{name}.kubeconfig")
        container = pod["spec"]["containers"][0]
        args = [str(REPO / "deploy" / "crds") if arg == IMAGE_CRDS else arg for arg in container["args"]]
        run = subprocess.run(kai_argv(args, kubeconfig), capture_output=True, text=True, timeout=120, cwd=REPO)
        self.hook_runs.append(run)
        terminated = {"exitCode": run.returncode, "reason": "Completed" if run.returncode == 0 else "Error"}
        status = {
            "phase": "Succeeded" if run.returncode == 0 else "Failed",
            "containerStatuses": [
                {
                    "name": container["name"],
                    "image": container["image"],
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"terminated": terminated},
                }
            ],
        }
        path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/status"
        code, body = self.cp.request(path, "PATCH", {"status": status}, "application/merge-patch+json")
        if code != 200:
            raise AssertionError(f"cannot report hook pod {name} ({code}): {body}")


def _existing(cp: ControlPlane, path: str) -> dict[str, Any]:
    """A ConfigMap or Secret of the namespace, once it exists (the kubelet waits for a pod's volumes too)."""

    def found() -> dict[str, Any]:
        status, body = cp.request(f"/api/v1/namespaces/{NAMESPACE}/{path}")
        return dict(body) if status == 200 else {}

    return wait_until(f"{NAMESPACE}/{path}", found, 60.0)


def mounted_files(cp: ControlPlane, deployment: dict[str, Any], workdir: Path) -> dict[str, Path]:
    """Each mount's path in the Deployment's pod → where its ConfigMap or Secret is written on the host."""
    name = deployment["metadata"]["name"]
    spec = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    files = {}
    for mount in spec["containers"][0].get("volumeMounts") or []:
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            obj = _existing(cp, f"configmaps/{volume['configMap']['name']}")
            data = {k: v.encode() for k, v in obj["data"].items()}
        else:
            obj = _existing(cp, f"secrets/{volume['secret']['secretName']}")
            data = {k: base64.b64decode(v) for k, v in obj["data"].items()}
        folder = workdir / f"{name}-{mount['name']}"
        folder.mkdir(exist_ok=True)
        for key, value in data.items():
            (folder / key).write_bytes(value)
        sub_path = mount.get("subPath")
        files[mount["mountPath"]] = folder / sub_path if sub_path else folder
    return files


class HostComponent:
    """One component run on the host from its Deployment (see the module docstring)."""

    def __init__(self, cp: ControlPlane, deployment: dict[str, Any], workdir: Path, env: dict[str, str]) -> None:
        self.name = deployment["metadata"]["name"]
        self.log = workdir / f"{self.name}.log"
        spec = deployment["spec"]["template"]["spec"]
        kubeconfig = cp.token_kubeconfig(NAMESPACE, spec["serviceAccountName"], workdir / f"{self.name}.kubeconfig")
        files = mounted_files(cp, deployment, workdir)
        self.ports: dict[str, int] = {}
        args = [self._local(arg, files) for arg in spec["containers"][0]["args"]]
        if args[:1] == ["scheduler"] and not any(arg.startswith("--plugin-server-port") for arg in args):
            self.ports["--plugin-server-port"] = free_port()  # its default, 8081, may be another test run's
            args.append(f"--plugin-server-port={self.ports['--plugin-server-port']}")
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                kai_argv(args, kubeconfig), stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ, **env}
            )

    def _local(self, arg: str, files: dict[str, Path]) -> str:
        flag, _, value = arg.partition("=")
        if flag in ("--metrics-bind-address", "--health-probe-bind-address", "--webhook-addr"):
            self.ports[flag] = free_port()
            port = self.ports[flag]
            return f"{flag}=127.0.0.1:{port}" if flag != "--webhook-addr" else f"{flag}={port}"
        return f"{flag}={files[value]}" if value in files else arg

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def kill(self) -> None:
        """SIGKILL (kill -9): no shutdown at all, as when a node dies or the kernel's OOM killer ends the pod."""
        self.process.kill()
        self.process.wait(timeout=30)


class Judged:
    """Host component ``name`` with the surface of kai_support.Kai that drill_support.Drill judges (process,
    probes, metrics, log): whichever process of ``host`` runs it now (it may be restarted meanwhile), and only what
    it logs from now on, since what it logged before is not the drill's."""

    def __init__(self, host: dict[str, HostComponent], name: str) -> None:
        self.host, self.component = host, name
        self.log = host[name].log
        self._skip = len(self.log.read_text(errors="replace").splitlines())

    @property
    def process(self) -> subprocess.Popen[bytes]:
        return self.host[self.component].process

    def _port(self, flag: str) -> int:
        return self.host[self.component].ports[flag]

    def probe(self, path: str) -> tuple[int, str]:
        return Kai.get(self._port("--health-probe-bind-address"), path)

    def metrics(self) -> str:
        code, body = Kai.get(self._port("--metrics-bind-address"), "/metrics")
        return body if code == 200 else ""

    def log_lines(self, containing: str = "") -> list[str]:
        lines = self.log.read_text(errors="replace").splitlines()[self._skip :]
        return [line for line in lines if containing in line]


# ------------------------------------------------------------------------------------------- the install

COMPONENTS = tuple(component.operand for component in DEPLOYED if component.name != "admission")
"""The Deployments the operator renders that run on the host here (admission is served apart)."""
SCHEDULER = "kai-scheduler-default"
CHART_OWNED = (
    *(("priorityclass", name, "") for name in ("train", "build-preemptible", "build", "inference")),
    ("namespace", "kai-resource-reservation", ""),
    ("serviceaccount", "kai-resource-reservation", "kai-resource-reservation"),
)
"""Cluster objects the chart makes that other e2e tests may have applied before (adopted by the release, as Helm
documents for existing objects)."""
WEBHOOKS = tuple((kind.lower(), name) for name, kind in webhooks.CONFIGURATIONS.items())


class Install:
    def __init__(self, cp: ControlPlane, kwok: Kwok, workdir: Path) -> None:
        self.cp, self.workdir = cp, workdir
        if cp.request(f"/api/v1/nodes/{SYSTEM_NODE}")[0] != 200:  # another install test of the session made it
            kwok.node(SYSTEM_NODE, gpus=0, labels={"pool": SYSTEM_NODE})
        self.system = SystemPods(cp, SYSTEM_NODE, workdir)
        self.host: dict[str, HostComponent] = {}
        self.routes: list[tuple[str, int]] = []
        self.install_s = 0.0

    def helm_install(self, *values: str) -> subprocess.CompletedProcess[str]:
        started = time.monotonic()
        run = helm(
            self.cp, "upgrade", "-i", "kai-scheduler", str(CHART), "-n", NAMESPACE, "--create-namespace", *values
        )
        self.install_s = time.monotonic() - started
        return run

    def deployment(self, name: str) -> dict[str, Any]:
        status, body = self.cp.request(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{name}")
        return dict(body) if status == 200 else {}

    def service(self, name: str) -> dict[str, Any]:
        """The Service, once the operator has made it (it applies the Deployment first)."""

        def found() -> dict[str, Any]:
            status, body = self.cp.request(f"/api/v1/namespaces/{NAMESPACE}/services/{name}")
            return dict(body) if status == 200 else {}

        return wait_until(f"Service {name}", found, TIMEOUT_S)

    def cluster_ip(self, service: str) -> str:
        return str(self.service(service)["spec"]["clusterIP"])

    def run_on_host(self, name: str) -> HostComponent:
        """Starts (or restarts) the host process of Deployment ``name`` and waits for its /readyz."""
        if name in self.host:
            self.host[name].stop()
        deployment = wait_until(f"Deployment {name}", lambda: self.deployment(name), TIMEOUT_S)
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e["value"] for e in container.get("env") or [] if "value" in e}
        component = HostComponent(self.cp, deployment, self.workdir, env)
        self.host[name] = component
        probe = f"http://127.0.0.1:{component.ports['--health-probe-bind-address']}/readyz"

        def ready() -> bool:
            if component.process.poll() is not None:
                raise AssertionError(f"{name} exited:\n{component.log.read_text()[-3000:]}")
            return http_ready(probe, None, None, lambda _: True)

        wait_until(f"{name} on the host to be ready", ready, TIMEOUT_S)
        return component

    def forbidden(self) -> list[str]:
        """What the API server refused the host components (their logs' "forbidden" lines): none, if the RBAC is
        enough."""
        lines = (line for c in self.host.values() for line in c.log.read_text().splitlines())
        return [line for line in lines if "forbidden" in line.lower()]

    def serve_admission(self) -> None:
        """``kai admission`` as its Deployment says, reached by the API server at the Service's ClusterIP (webhook
        calls) and at its pod's IP (the service proxy, which goes to the Service's endpoints)."""
        admission = self.run_on_host("admission")
        port = admission.ports["--webhook-addr"]
        self.route(self.cluster_ip("admission"), 443, port)

        def pod_ip() -> str:
            pods = kubectl_json(self.cp, "get", "pods", "-n", NAMESPACE, "-l", "app=admission")["items"]
            return str(pods[0]["status"].get("podIP") or "") if pods else ""

        target = next(p["targetPort"] for p in self.service("admission")["spec"]["ports"] if p["name"] == "webhook")
        self.route(wait_until("the admission pod's IP", pod_ip, TIMEOUT_S), target, port)

    def route(self, address: str, port: int, local_port: int) -> None:
        self.cp.network.route(address, port, local_port)
        self.routes.append((address, port))

    def admitted(self) -> set[str]:
        """The webhook paths ``kai admission`` has answered (its ``kai_admission_requests_total`` series)."""
        port = self.host["admission"].ports["--metrics-bind-address"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            metrics = answer.read().decode()
        return set(re.findall(r'^kai_admission_requests_total\{[^}]*webhook="([^"]+)"', metrics, re.MULTILINE))

    def doctor(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``kai doctor`` as an operator runs it, with the admin kubeconfig."""
        argv = [sys.executable, "-m", "kai", "doctor", f"--kubeconfig={self.cp.kubeconfig_path}", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=REPO)

    def stop(self) -> None:
        for component in self.host.values():
            component.stop()
        for address, port in self.routes:
            self.cp.network.unroute(address, port)
        for kind, name in WEBHOOKS:  # later tests' pods and queues must not wait for a webhook no one serves
            self.cp.kubectl("delete", kind, name, "--ignore-not-found", check=False)
        helm(self.cp, "uninstall", "kai-scheduler", "-n", NAMESPACE, "--wait", check=False)
        self.system.stop()


def adopt(cp: ControlPlane) -> None:
    """Cluster objects the chart makes that other e2e tests may have applied before become the release's."""
    for kind, name, namespace in CHART_OWNED:
        where = ["-n", namespace] if namespace else []
        if cp.kubectl("get", kind, name, *where, check=False).returncode != 0:
            continue
        cp.kubectl("label", "--overwrite", kind, name, *where, "app.kubernetes.io/managed-by=Helm")
        cp.kubectl(
            "annotate", "--overwrite", kind, name, *where,
            "meta.helm.sh/release-name=kai-scheduler", f"meta.helm.sh/release-namespace={NAMESPACE}",
        )  # fmt: skip


def workload_pod(
    namespace: str, name: str, queue: str, pool: str, priority: str, request: dict[str, str]
) -> dict[str, Any]:
    """A kai pod of ``queue`` with a priority class, pinned to a pool of nodes, requesting ``request``."""
    resources = {"requests": request, "limits": request}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kai.scheduler/queue": queue}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "priorityClassName": priority,
            "nodeSelector": {"pool": pool},
            "containers": [{"name": "main", "image": "busybox", "resources": resources}],
        },
    }


def team_queues(parent: str, child: str, gpu_quota: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A top-level queue and its child, each with ``gpu_quota`` GPUs deserved (room for non-preemptible pods, which
    the chart's default-parent-queue has not), CPU and memory unlimited."""
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": {"quota": gpu_quota, "limit": -1, "overQuotaWeight": 1}, "cpu": unlimited, "memory": unlimited}
    return (
        {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": parent},
         "spec": {"resources": resources}},
        {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": child},
         "spec": {"parentQueue": parent, "resources": resources}},
    )  # fmt: skip
