"""`kai all` against a real kube-apiserver: the seed's objects go in through the API, kai schedules, binds and
reports through the API, as it would in a cluster (issue 3, item 5).

Each test starts `kai all --kubeconfig …` as a user would, works in its own namespace, and pins its pods to its own
nodes with a node selector, so tests sharing the control plane cannot place pods on each other's nodes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from controlplane import ControlPlane, free_port
from kube.kube_support import wait_until as poll

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed"
T = TypeVar("T")


def wait_until(what: str, check: Callable[[], T]) -> T:
    """kube_support's poll, with room for a whole `kai all` start, sync and binding round."""
    return poll(what, check, timeout=60.0)


class Kai:
    """A `kai all` process on the test control plane."""

    def __init__(self, cp: ControlPlane, log: Path, *extra: str) -> None:
        self.metrics_port = free_port()
        self.probe_port = free_port()
        self.log = log
        self.cp = cp
        self.extra = extra
        self.process = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        argv = [
            sys.executable, "-m", "kai", "all", f"--kubeconfig={self.cp.kubeconfig_path}",
            "--schedule-period=200ms", f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{self.probe_port}", *self.extra,
        ]  # fmt: skip
        with self.log.open("ab") as out:
            return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)

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


@pytest.fixture
def kai(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Kai]:
    control_plane.kubectl("apply", "-f", str(REPO / "deploy" / "priority-classes.yaml"))
    process = Kai(control_plane, tmp_path / "kai.log")
    try:
        yield process
    finally:
        process.stop()
        if process.process.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL):
            print(process.log.read_text())


def kubectl_json(cp: ControlPlane, *args: str) -> Any:
    return json.loads(cp.kubectl(*args, "-o", "json").stdout)


def apply(cp: ControlPlane, tmp_path: Path, *documents: dict[str, Any]) -> None:
    path = tmp_path / f"apply-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    cp.kubectl("apply", "-f", str(path))


def gpu_node(cp: ControlPlane, tmp_path: Path, name: str, pool: str, gpus: int) -> None:
    """A GPU node created through the API, its capacity set on its status as a kubelet would."""
    apply(cp, tmp_path, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"pool": pool}}})
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    status = {
        "status": {"capacity": resources, "allocatable": resources, "conditions": [{"type": "Ready", "status": "True"}]}
    }
    cp.kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(status))
    # The API server taints new nodes not-ready; the node lifecycle controller (absent here) would lift it.
    cp.kubectl("taint", "nodes", name, "node.kubernetes.io/not-ready:NoSchedule-", check=False)


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


def test_seed_queues_apply_and_list(control_plane: ControlPlane) -> None:
    control_plane.kubectl("apply", "-f", str(SEED / "queues.yaml"))
    listed = control_plane.kubectl("get", "queues").stdout
    for name in ("departement-ml", "equipe-training", "equipe-inference"):
        assert name in listed
    training = kubectl_json(control_plane, "get", "queue", "equipe-training")
    assert training["spec"]["parentQueue"] == "departement-ml"


def test_seed_training_pod_is_bound_to_a_gpu_node(
    control_plane: ControlPlane, namespace: str, kai: Kai, tmp_path: Path
) -> None:
    control_plane.kubectl("apply", "-f", str(SEED / "queues.yaml"))
    pool = f"seed-{namespace}"
    gpu_node(control_plane, tmp_path, f"{pool}-gpu", pool, 8)
    seed = yaml.safe_load((SEED / "training-job.yaml").read_text())
    seed["metadata"]["namespace"] = namespace
    seed["spec"]["nodeSelector"] = {"pool": pool}
    apply(control_plane, tmp_path, seed)
    bound = wait_until(
        "the seed pod to be bound", lambda: pods(control_plane, namespace)["training-job"]["spec"].get("nodeName")
    )
    assert bound == f"{pool}-gpu"
    requests = kubectl_json(control_plane, "get", "bindrequests", "-n", namespace)["items"]
    assert [r["spec"]["selectedNode"] for r in requests] == [bound]
    assert requests[0]["status"]["phase"] == "Succeeded"
    conditions = pods(control_plane, namespace)["training-job"]["status"].get("conditions", [])
    assert any(c["type"] == "PodBound" and c["status"] == "True" for c in conditions)


def test_gang_binds_all_or_none(control_plane: ControlPlane, namespace: str, kai: Kai, tmp_path: Path) -> None:
    pool, queue_name = f"gang-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name)
    for i in range(3):
        gpu_node(control_plane, tmp_path, f"{pool}-{i}", pool, 4)
    podgroup = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "gang", "namespace": namespace},
        "spec": {"minMember": 4, "queue": queue_name, "priorityClassName": "train"},
    }
    apply(
        control_plane,
        tmp_path,
        podgroup,
        *(gpu_pod(namespace, f"worker-{i}", queue_name, pool, 4, "gang") for i in range(4)),
    )

    def waiting_with_reason() -> bool:
        group = kubectl_json(control_plane, "get", "podgroup", "gang", "-n", namespace)
        return bool(group.get("status", {}).get("schedulingConditions"))

    wait_until("the gang to be reported unschedulable", waiting_with_reason)
    assert not any(p["spec"].get("nodeName") for p in pods(control_plane, namespace).values())
    assert kubectl_json(control_plane, "get", "bindrequests", "-n", namespace)["items"] == []
    gpu_node(control_plane, tmp_path, f"{pool}-3", pool, 4)
    wait_until(
        "all four workers to be bound",
        lambda: all(p["spec"].get("nodeName") for p in pods(control_plane, namespace).values()),
    )
    assert sorted(p["spec"]["nodeName"] for p in pods(control_plane, namespace).values()) == [
        f"{pool}-{i}" for i in range(4)
    ]


def test_over_limit_pod_waits_with_kai_reason(
    control_plane: ControlPlane, namespace: str, kai: Kai, tmp_path: Path
) -> None:
    pool, queue_name = f"limit-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name, gpu_limit=2)
    gpu_node(control_plane, tmp_path, f"{pool}-gpu", pool, 8)
    apply(control_plane, tmp_path, gpu_pod(namespace, "greedy", queue_name, pool, 4))

    def podgroup_condition() -> Any:
        groups = kubectl_json(control_plane, "get", "podgroups", "-n", namespace)["items"]
        return groups and groups[0].get("status", {}).get("schedulingConditions")

    condition = wait_until("the PodGroup's scheduling condition", podgroup_condition)[0]
    assert condition["reasons"][0]["reason"] == "OverLimit"
    assert f"{queue_name} quota has reached the allowable limit of GPUs" in condition["message"]
    pod = wait_until(
        "the pod's PodScheduled=False condition",
        lambda: next(
            (
                c
                for c in pods(control_plane, namespace)["greedy"]["status"].get("conditions", [])
                if c["type"] == "PodScheduled"
            ),
            None,
        ),
    )
    assert pod["status"] == "False" and pod["reason"] == "Unschedulable"
    events = kubectl_json(control_plane, "get", "events", "-n", namespace)["items"]
    assert any(e["reason"] == "Unschedulable" and e["involvedObject"]["name"] == "greedy" for e in events)
    assert not pods(control_plane, namespace)["greedy"]["spec"].get("nodeName")


def test_statuses_and_metrics(control_plane: ControlPlane, namespace: str, kai: Kai, tmp_path: Path) -> None:
    pool, queue_name = f"status-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name)
    gpu_node(control_plane, tmp_path, f"{pool}-gpu", pool, 8)
    apply(control_plane, tmp_path, *(gpu_pod(namespace, f"p{i}", queue_name, pool, 2) for i in range(3)))

    def queue_allocated() -> Any:
        return (
            kubectl_json(control_plane, "get", "queue", queue_name)
            .get("status", {})
            .get("allocated", {})
            .get("nvidia.com/gpu")
        )

    assert wait_until("the queue's allocated GPUs", lambda: queue_allocated() == "6")
    groups = kubectl_json(control_plane, "get", "podgroups", "-n", namespace)["items"]
    assert {g["status"]["resourcesStatus"]["allocated"]["nvidia.com/gpu"] for g in groups} == {"2"}
    parent = kubectl_json(control_plane, "get", "queue", "default-parent-queue")
    assert queue_name in parent["status"]["childQueues"]
    text = wait_until("metrics", kai.metrics)
    assert "kai_e2e_scheduling_latency_milliseconds" in text
    assert f'kai_queue_allocated_gpus{{queue_name="{queue_name}"}} 6.0' in text


def test_probes_tell_the_truth_and_metrics_stay_on_their_port(kai: Kai) -> None:
    assert wait_until("readiness", lambda: kai.probe("/readyz") == (200, "ok\n"))
    code, body = kai.probe("/readyz?verbose")
    assert code == 200 and "[+]informers synced: " in body and "Pod" in body and "readyz check passed" in body
    code, body = kai.probe("/healthz?verbose")
    assert code == 200 and "[+]loops running: kai-controllers, kai-podgrouper, kai-binder, kai-scheduler" in body
    assert kai.probe("/metrics")[0] == 404, "metrics are not served on the probe port"
    assert kai.get(kai.metrics_port, "/healthz")[0] == 404, "probes are not served on the metrics port"
    assert kai.get(kai.metrics_port, "/anything")[0] == 404
    assert "kai_e2e_scheduling_latency_milliseconds" in wait_until("metrics", kai.metrics)


def test_a_busy_port_is_one_clear_error(control_plane: ControlPlane, kai: Kai, tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "kai", "binder", f"--kubeconfig={control_plane.kubeconfig_path}",
            f"--health-probe-bind-address=127.0.0.1:{kai.probe_port}", "--metrics-bind-address=0"]  # fmt: skip
    wait_until("the first process to listen", lambda: kai.probe("/healthz")[0] == 200)
    second = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO, check=False)
    assert second.returncode != 0
    assert f"cannot serve health probes on 127.0.0.1:{kai.probe_port}" in second.stderr
    assert "Traceback" not in second.stderr


def test_restart_binds_nothing_twice_and_loses_nothing(
    control_plane: ControlPlane, namespace: str, kai: Kai, tmp_path: Path
) -> None:
    pool, queue_name = f"restart-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name)
    for i in range(4):
        gpu_node(control_plane, tmp_path, f"{pool}-{i}", pool, 8)
    apply(control_plane, tmp_path, *(gpu_pod(namespace, f"a{i}", queue_name, pool, 1) for i in range(16)))
    wait_until(
        "some pods to be bound", lambda: any(p["spec"].get("nodeName") for p in pods(control_plane, namespace).values())
    )
    kai.kill()
    apply(control_plane, tmp_path, *(gpu_pod(namespace, f"b{i}", queue_name, pool, 1) for i in range(16)))
    kai.restart()
    wait_until(
        "all 32 pods to be bound",
        lambda: all(p["spec"].get("nodeName") for p in pods(control_plane, namespace).values()),
    )
    requests = kubectl_json(control_plane, "get", "bindrequests", "-n", namespace)["items"]
    assert sorted(r["spec"]["podName"] for r in requests) == sorted(pods(control_plane, namespace))
    per_node: dict[str, int] = {}
    for pod in pods(control_plane, namespace).values():
        per_node[pod["spec"]["nodeName"]] = per_node.get(pod["spec"]["nodeName"], 0) + 1
    assert all(count <= 8 for count in per_node.values()), per_node


def test_leader_election_lets_one_replica_work_and_hands_over(
    control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    control_plane.kubectl("apply", "-f", str(REPO / "deploy" / "priority-classes.yaml"))
    control_plane.kubectl("create", "namespace", "kai-scheduler", check=False)
    pool, queue_name = f"leader-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name)
    gpu_node(control_plane, tmp_path, f"{pool}-gpu", pool, 8)
    replicas = [Kai(control_plane, tmp_path / f"kai-{i}.log", "--leader-elect") for i in range(2)]
    try:
        apply(control_plane, tmp_path, *(gpu_pod(namespace, f"a{i}", queue_name, pool, 1) for i in range(4)))
        wait_until(
            "the first pods to be bound",
            lambda: all(p["spec"].get("nodeName") for p in pods(control_plane, namespace).values()),
        )
        lease = kubectl_json(control_plane, "get", "lease", "kai-scheduler", "-n", "kai-scheduler")
        holder = lease["spec"]["holderIdentity"]
        leaders = [r for r in replicas if "leads" in r.log.read_text()]
        assert len(leaders) == 1, "exactly one replica leads"
        (follower,) = (r for r in replicas if r is not leaders[0])
        code, body = follower.probe("/readyz?verbose")
        assert code == 200 and f"[+]leader standby (Lease kai-scheduler/kai-scheduler held by {holder})" in body
        assert "[+]leader leading" in leaders[0].probe("/readyz?verbose")[1]
        leaders[0].kill()
        apply(control_plane, tmp_path, *(gpu_pod(namespace, f"b{i}", queue_name, pool, 1) for i in range(4)))
        wait_until(
            "the follower to take over and bind the new pods",
            lambda: all(p["spec"].get("nodeName") for p in pods(control_plane, namespace).values()),
        )
        assert (
            kubectl_json(control_plane, "get", "lease", "kai-scheduler", "-n", "kai-scheduler")["spec"][
                "holderIdentity"
            ]
            != holder
        )
        requests = kubectl_json(control_plane, "get", "bindrequests", "-n", namespace)["items"]
        assert sorted(r["spec"]["podName"] for r in requests) == sorted(pods(control_plane, namespace))
    finally:
        for replica in replicas:
            replica.stop()
