"""What the tests that run kai on the cluster share: the `kai` process (started the way a user would, with
`--kubeconfig`), and the queues and pods they create through the API as a user would; nodes come from the `kwok`
fixture (testcluster.Kwok.node).

Each test works in its own namespace and pins its pods to its own nodes with a node selector, so tests sharing the
cluster cannot place pods on each other's nodes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import yaml
from controlplane import REPO, ControlPlane, free_port
from kube.kube_support import wait_until as poll

SEED = REPO / "examples" / "seed"
PRIORITY_CLASSES = REPO / "deploy" / "priority-classes.yaml"
T = TypeVar("T")


def wait_until(what: str, check: Callable[[], T]) -> T:
    """kube_support's poll, with room for a whole `kai` start, sync and binding round."""
    return poll(what, check, timeout=60.0)


class Kai:
    """A `kai all` (or `kai <component>`) process on the test control plane, logging to `log`."""

    def __init__(
        self, cp: ControlPlane, log: Path, *extra: str, component: str = "all", env: Mapping[str, str] | None = None
    ) -> None:
        """``env``: added to this process's environment."""
        self.metrics_port = free_port()
        self.probe_port = free_port()
        self.plugin_port = free_port()
        self.log = log
        self.cp = cp
        self.extra = extra
        self.component = component
        self.env = {**os.environ, **(env or {})}
        self.process = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        argv = [
            sys.executable, "-m", "kai", self.component, f"--kubeconfig={self.cp.kubeconfig_path}",
            "--schedule-period=200ms", f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.probe_port}",
            *([f"--plugin-server-port={self.plugin_port}"] if self.component in ("all", "scheduler") else []),
            *self.extra,
        ]  # fmt: skip
        with self.log.open("ab") as out:
            return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=self.env)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def restart(self) -> None:
        self.process = self._start()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def metrics(self) -> str:
        """The metrics text ("" until the process serves it)."""
        code, body = self.get(self.metrics_port, "/metrics")
        return body if code == 200 else ""

    def metric(self, name: str, **labels: str) -> float:
        """One sample's value (0 when it has not been recorded yet)."""
        wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
        match = re.search(rf"^{re.escape(name)}{{{re.escape(wanted)}}} (\S+)$", self.metrics(), re.MULTILINE)
        return float(match.group(1)) if match else 0.0

    def probe(self, path: str) -> tuple[int, str]:
        return self.get(self.probe_port, path)

    @staticmethod
    def get(port: int, path: str) -> tuple[int, str]:
        """(status, body) of GET http://127.0.0.1:<port><path>, error statuses included; (0, why) while nothing
        listens there yet."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
                return response.status, str(response.read().decode())
        except urllib.error.HTTPError as error:
            return error.code, str(error.read().decode())
        except urllib.error.URLError as error:
            return 0, str(error.reason)

    def log_lines(self, containing: str = "") -> list[str]:
        return [line for line in self.log.read_text().splitlines() if containing in line]


def get(cp: ControlPlane, path: str) -> Any:
    """The object at an API path, or None when it does not exist (or cannot be read)."""
    status, body = cp.request(path)
    return body if status == 200 else None


def items(cp: ControlPlane, path: str) -> list[Any]:
    return (get(cp, path) or {}).get("items") or []


def create(cp: ControlPlane, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, created = cp.request(path, "POST", body)
    assert status == 201, f"creating {body['kind']} {body['metadata']['name']} failed ({status}): {created}"
    return created


def owners(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(o["kind"], o["name"]) for o in obj["metadata"].get("ownerReferences") or []]


@contextmanager
def kai_all(cp: ControlPlane, log: Path) -> Iterator[Kai]:
    """`kai all` on the test cluster (KAI's priority classes applied) for the block; its log is printed if it ended
    otherwise than by being stopped."""
    cp.kubectl("apply", "-f", str(PRIORITY_CLASSES))
    process = Kai(cp, log)
    try:
        yield process
    finally:
        process.stop()
        if process.process.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL):
            print(process.log.read_text())


WIDE = {**os.environ, "COLUMNS": "200"}
"""The environment of a kai command whose text a test reads: its tables 200 columns wide (pytest hands its children
the width of its own terminal in ``COLUMNS``)."""


def kai_cli(cp: ControlPlane, kai: Kai, *args: str) -> str:
    """A kai command against the test cluster and the running scheduler, as a user types it; its stdout."""
    argv = [
        sys.executable, "-m", "kai", *args, f"--kubeconfig={cp.kubeconfig_path}",
        f"--scheduler-address=127.0.0.1:{kai.plugin_port}",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO, check=False, env=WIDE)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    return done.stdout


def kubectl_json(cp: ControlPlane, *args: str) -> Any:
    return json.loads(cp.kubectl(*args, "-o", "json").stdout)


def apply(cp: ControlPlane, tmp_path: Path, *documents: dict[str, Any]) -> None:
    path = tmp_path / f"apply-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    cp.kubectl("apply", "-f", str(path))


def queue(cp: ControlPlane, tmp_path: Path, name: str, gpu_limit: int = -1) -> None:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec = {
        "parentQueue": "default-parent-queue",
        "resources": {
            "gpu": {"quota": -1, "limit": gpu_limit, "overQuotaWeight": 1},
            "cpu": unlimited,
            "memory": unlimited,
        },
    }
    apply(
        cp, tmp_path, {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}
    )


def queue_tree(cp: ControlPlane, tmp_path: Path, parent: str, *children: tuple[str, dict[str, Any]]) -> None:
    """A top-level queue of its own per test (so places in line do not depend on other tests) and its children (each
    child's ``quota`` and ``limit`` of GPUs, ``annotations``, and other spec fields)."""
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}

    def spec(gpu: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"resources": {"gpu": gpu, "cpu": unlimited, "memory": unlimited}, **extra}

    queues = [
        {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": parent}, "spec": spec(unlimited)}
    ]
    for name, child in children:
        gpu = {"quota": child.pop("quota", -1), "limit": child.pop("limit", -1), "overQuotaWeight": 1}
        meta = {"name": name, "annotations": child.pop("annotations", {})}
        body = spec(gpu, parentQueue=parent, **child)
        queues.append({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": meta, "spec": body})
    apply(cp, tmp_path, *queues)


def bound(cp: ControlPlane, namespace: str, pod: str) -> str:
    return str(kubectl_json(cp, "get", "pod", pod, "-n", namespace)["spec"].get("nodeName") or "")


def gang(namespace: str, name: str, queue: str, pool: str, size: int, gpus: int, **spec: Any) -> list[dict[str, Any]]:
    podgroup = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": size, "queue": queue, "priorityClassName": "train", **spec},
    }
    return [podgroup, *(gpu_pod(namespace, f"{name}-{i}", queue, pool, gpus, name) for i in range(size))]


def gpu_pod(namespace: str, name: str, queue_name: str, pool: str, gpus: int, podgroup: str = "") -> dict[str, Any]:
    annotations = {"pod-group-name": podgroup} if podgroup else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kai.scheduler/queue": queue_name},
            "annotations": annotations,
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "nodeSelector": {"pool": pool},
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
        },
    }


def pods(cp: ControlPlane, namespace: str) -> dict[str, Any]:
    return {p["metadata"]["name"]: p for p in kubectl_json(cp, "get", "pods", "-n", namespace)["items"]}


def wait_cycles(kai: Kai, n: int) -> None:
    """Waits for at least ``n`` more scheduling cycles: each one sets KAI's e2e latency gauge to its own duration."""
    seen: list[str] = []

    def latency() -> str:
        found = re.search(r"^kai_e2e_scheduling_latency_milliseconds (\S+)$", kai.metrics(), re.MULTILINE)
        return found.group(1) if found else ""

    def counted() -> bool:
        value = latency()
        if not seen or value != seen[-1]:
            seen.append(value)
        return len(seen) > n

    wait_until(f"{n} more scheduling cycles", counted)
