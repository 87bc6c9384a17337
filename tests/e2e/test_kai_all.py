"""`kai all` against a real kube-apiserver: the seed's objects go in through the API, kai schedules, binds and
reports through the API, as it would in a cluster (issue 3, item 5).

Each test starts `kai all --kubeconfig …` as a user would (helpers in kai_support), and its nodes are KWOK nodes (the
`kwok` fixture: pods bound there run).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from controlplane import ControlPlane
from kai_support import PRIORITY_CLASSES, REPO, SEED, Kai, apply, gpu_pod, kubectl_json, pods, queue, wait_until
from testcluster import Kwok


def test_seed_queues_apply_and_list(control_plane: ControlPlane) -> None:
    control_plane.kubectl("apply", "-f", str(SEED / "queues.yaml"))
    listed = control_plane.kubectl("get", "queues").stdout
    for name in ("departement-ml", "equipe-training", "equipe-inference"):
        assert name in listed
    training = kubectl_json(control_plane, "get", "queue", "equipe-training")
    assert training["spec"]["parentQueue"] == "departement-ml"


def test_seed_training_pod_is_bound_to_a_gpu_node_and_runs(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    control_plane.kubectl("apply", "-f", str(SEED / "queues.yaml"))
    pool = f"seed-{namespace}"
    kwok.node(f"{pool}-gpu", 8, {"pool": pool})
    seed = yaml.safe_load((SEED / "training-job.yaml").read_text())
    seed["metadata"]["namespace"] = namespace
    seed["spec"]["nodeSelector"] = {"pool": pool}
    apply(control_plane, tmp_path, seed)
    bound = wait_until(
        "the seed pod to be bound", lambda: pods(control_plane, namespace)["training-job"]["spec"].get("nodeName")
    )
    assert bound == f"{pool}-gpu"

    def requests() -> Any:
        return kubectl_json(control_plane, "get", "bindrequests", "-n", namespace)["items"]

    # the binder writes the request's status just after the bind (and the pod's PodBound condition before that)
    wait_until("the request to succeed", lambda: requests()[0].get("status", {}).get("phase") == "Succeeded")
    assert [r["spec"]["selectedNode"] for r in requests()] == [bound]
    conditions = pods(control_plane, namespace)["training-job"]["status"].get("conditions", [])
    assert any(c["type"] == "PodBound" and c["status"] == "True" for c in conditions)
    wait_until(
        "KWOK to run the pod", lambda: pods(control_plane, namespace)["training-job"]["status"]["phase"] == "Running"
    )


def test_gang_binds_all_or_none(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, queue_name = f"gang-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name)
    for i in range(3):
        kwok.node(f"{pool}-{i}", 4, {"pool": pool})
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
    kwok.node(f"{pool}-3", 4, {"pool": pool})
    wait_until(
        "all four workers to be bound",
        lambda: all(p["spec"].get("nodeName") for p in pods(control_plane, namespace).values()),
    )
    assert sorted(p["spec"]["nodeName"] for p in pods(control_plane, namespace).values()) == [
        f"{pool}-{i}" for i in range(4)
    ]


def test_over_limit_pod_waits_with_kai_reason(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, queue_name = f"limit-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name, gpu_limit=2)
    kwok.node(f"{pool}-gpu", 8, {"pool": pool})
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


def test_statuses_and_metrics(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, queue_name = f"status-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name)
    kwok.node(f"{pool}-gpu", 8, {"pool": pool})
    apply(control_plane, tmp_path, *(gpu_pod(namespace, f"p{i}", queue_name, pool, 2) for i in range(3)))

    def queue_allocated() -> Any:
        return (
            kubectl_json(control_plane, "get", "queue", queue_name)
            .get("status", {})
            .get("allocated", {})
            .get("nvidia.com/gpu")
        )

    assert wait_until("the queue's allocated GPUs", lambda: queue_allocated() == "6")

    def podgroups_allocated() -> set[Any]:  # written once they held for a pass (docs/deviations.md)
        groups = kubectl_json(control_plane, "get", "podgroups", "-n", namespace)["items"]
        return {
            ((g.get("status") or {}).get("resourcesStatus") or {}).get("allocated", {}).get("nvidia.com/gpu")
            for g in groups
        }

    assert wait_until("the podgroups' allocated GPUs", lambda: podgroups_allocated() == {"2"})
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
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, queue_name = f"restart-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name)
    for i in range(4):
        kwok.node(f"{pool}-{i}", 8, {"pool": pool})
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
    control_plane: ControlPlane, namespace: str, kwok: Kwok, tmp_path: Path
) -> None:
    control_plane.kubectl("apply", "-f", str(PRIORITY_CLASSES))
    control_plane.kubectl("create", "namespace", "kai-scheduler", check=False)
    pool, queue_name = f"leader-{namespace}", f"q-{namespace}"
    queue(control_plane, tmp_path, queue_name)
    kwok.node(f"{pool}-gpu", 8, {"pool": pool})
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

        def standing_by() -> bool:
            code, body = follower.probe("/readyz?verbose")
            return code == 200 and f"[+]leader standby (Lease kai-scheduler/kai-scheduler held by {holder})" in body

        # the leader may have bound the pods while the follower still lists the cluster: it is ready once it has
        wait_until("the follower to be ready and to stand by", standing_by)
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
