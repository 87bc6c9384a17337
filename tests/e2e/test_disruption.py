"""What kai does to running work, beyond KAI (issue 29), on the real cluster: kube-apiserver's eviction subresource
judging PodDisruptionBudgets whose status kube-controller-manager's disruption controller keeps, the Job
controller and KubeRay suspending and resuming workloads, KWOK running the pods, ``kai admission`` gating pods.

Each test has its own queues under a parent of its own and its own pool of nodes (a node selector pins its pods).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from admission_support import serving
from controlplane import ControlPlane
from kai_support import Kai, apply, gang, gpu_pod, kai_cli, kubectl_json, queue_tree, wait_cycles, wait_until
from testcluster import RUN_FOR_ANNOTATION, Kwok, Part

from kai.core.model import names
from kai.core.model.meta import parse_time

VISION = {"app": "vision"}
KAI_ACTIONS = "allocate, consolidation, reclaim, preempt, stalegangeviction"
PREEMPTOR = {"priorityClassName": "build-preemptible"}
PRIORITY_CLASSES = Path(__file__).resolve().parents[2] / "deploy" / "priority-classes.yaml"


# ------------------------------------------------------------------------------------------- helpers


def labelled(pod: dict[str, Any], labels: dict[str, str] | None = None, **annotations: str) -> dict[str, Any]:
    pod["metadata"]["labels"] |= labels or {}
    pod["metadata"]["annotations"] |= annotations
    return pod


def phases(cp: ControlPlane, namespace: str) -> dict[str, str]:
    """Each live pod's phase (a pod being deleted counts as gone)."""
    found = kubectl_json(cp, "get", "pods", "-n", namespace)["items"]
    return {
        p["metadata"]["name"]: p["status"].get("phase", "") for p in found if not p["metadata"].get("deletionTimestamp")
    }


def running(cp: ControlPlane, namespace: str, prefix: str) -> list[str]:
    return sorted(
        name for name, phase in phases(cp, namespace).items() if name.startswith(prefix) and phase == "Running"
    )


def events(cp: ControlPlane, namespace: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in kubectl_json(cp, "get", "events", "-n", namespace)["items"] if e["reason"] == reason]


def podgroups(cp: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    return list(kubectl_json(cp, "get", "podgroups", "-n", namespace)["items"])


def annotations(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def explain(cp: ControlPlane, kai: Kai, namespace: str, pod: str) -> dict[str, Any]:
    told: dict[str, Any] = json.loads(kai_cli(cp, kai, "explain", "pod", pod, "-n", namespace, "-o", "json"))
    return told["explanation"]


def disruption_budget(namespace: str, min_available: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "vision", "namespace": namespace},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": VISION}},
    }


def allowed(cp: ControlPlane, namespace: str) -> int:
    status = kubectl_json(cp, "get", "pdb", "vision", "-n", namespace).get("status") or {}
    return int(status.get("disruptionsAllowed", -1))


@contextmanager
def kai_with(cp: ControlPlane, tmp_path: Path, config: dict[str, Any]) -> Iterator[Kai]:
    """`kai all` with this scheduler config (KAI's priority classes applied) for the block."""
    cp.kubectl("apply", "-f", str(PRIORITY_CLASSES))
    path = tmp_path / "scheduler.yaml"
    path.write_text(yaml.safe_dump(config))
    process = Kai(cp, tmp_path / "kai.log", f"--scheduler-conf={path}")
    try:
        yield process
    finally:
        process.stop()


# ------------------------------------------------------------------------------------------- PDBs


@pytest.mark.usefixtures("controllers")
def test_a_reclaim_a_pdb_allows_one_disruption_evicts_one_pod_the_rest_wait_saying_why(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, parent, vision, llm = f"pdb-{namespace}", f"p-{namespace}", f"vision-{namespace}", f"llm-{namespace}"
    queue_tree(control_plane, tmp_path, parent, (vision, {"quota": 0}), (llm, {"quota": 4}))
    kwok.node(f"{pool}-gpu", 4, {"pool": pool})
    jobs = [gang(namespace, f"v{i}", vision, pool, 1, 1) for i in range(4)]  # PodGroups of their own: kept
    apply(
        control_plane,
        tmp_path,
        *(obj if obj["kind"] == "PodGroup" else labelled(obj, VISION) for job in jobs for obj in job),
    )
    wait_until("team-vision's four pods to run", lambda: len(running(control_plane, namespace, "v")) == 4)
    apply(control_plane, tmp_path, disruption_budget(namespace, 3))
    wait_until("the disruption controller to allow one disruption", lambda: allowed(control_plane, namespace) == 1)

    apply(control_plane, tmp_path, *(gpu_pod(namespace, f"llm-{i}", llm, pool, 1) for i in range(3)))
    wait_until("one reclaimer to run", lambda: len(running(control_plane, namespace, "llm")) == 1)
    wait_cycles(kai, 10)
    assert len(running(control_plane, namespace, "v")) == 3  # the PDB's one disruption, no more
    assert len(running(control_plane, namespace, "llm")) == 1
    assert allowed(control_plane, namespace) == 0
    [evicted] = [e for e in events(control_plane, namespace, "Evict") if e["involvedObject"]["kind"] == "Pod"]
    assert evicted["message"].startswith(f"evicted by reclaim for {namespace}/")
    assert f": {llm} below its quota by 4 GPUs, {vision} over its quota by 4 GPUs\n" in evicted["message"]
    waiting = next(p for p in ("llm-0", "llm-1", "llm-2") if phases(control_plane, namespace).get(p) == "Pending")
    told = explain(control_plane, kai, namespace, waiting)
    kinds = [reason["kind"] for reason in told["reasons"]]
    assert "VictimsProtectedByDisruptionBudget" in kinds, kinds
    protected = next(r for r in told["reasons"] if r["kind"] == "VictimsProtectedByDisruptionBudget")
    assert protected["evidence"]["budgets"][0]["budget"] == f"{namespace}/vision"
    [victim] = [g for g in podgroups(control_plane, namespace) if names.EVICTION_RECORD_ANNOTATION in annotations(g)]
    record = json.loads(annotations(victim)[names.EVICTION_RECORD_ANNOTATION])
    assert (record["action"], record["pods"], record["by"].split("/")[0]) == ("reclaim", 1, namespace)
    name = victim["metadata"]["name"]
    told = json.loads(kai_cli(control_plane, kai, "explain", "podgroup", name, "-n", namespace, "-o", "json"))
    assert told["lastEviction"]["text"].endswith(f"by reclaim for {record['by']}: {record['why']} (1 pod)")
    assert "Last eviction: evicted at" in kai_cli(control_plane, kai, "explain", "podgroup", name, "-n", namespace)

    # the PDB relaxed: the next cycle takes one more, and again only as many as it allows
    apply(control_plane, tmp_path, disruption_budget(namespace, 2))
    wait_until("a second reclaimer to run", lambda: len(running(control_plane, namespace, "llm")) == 2)
    wait_cycles(kai, 10)
    assert (len(running(control_plane, namespace, "v")), len(running(control_plane, namespace, "llm"))) == (2, 2)


# ------------------------------------------------------------------------------------------- the eviction budget


def priority(pod: dict[str, Any], name: str) -> dict[str, Any]:
    pod["spec"]["priorityClassName"] = name
    return pod


def test_the_eviction_budget_caps_a_50_pod_preemption(
    control_plane: ControlPlane, namespace: str, kwok: Kwok, tmp_path: Path
) -> None:
    pool, parent, team = f"budget-{namespace}", f"p-{namespace}", f"team-{namespace}"
    queue_tree(control_plane, tmp_path, parent, (team, {"quota": 50}))
    for i in range(5):
        kwok.node(f"{pool}-{i}", 10, {"pool": pool})
    low = [obj for i in range(50) for obj in gang(namespace, f"low-{i}", team, pool, 1, 1)]  # PodGroups kept
    apply(control_plane, tmp_path, *low)
    high = [obj for i in range(50) for obj in gang(namespace, f"high-{i}", team, pool, 1, 1, **PREEMPTOR)]
    budget = {"disruption": {"evictionBudget": {"perCycle": 10, "perMinute": 25}}}
    with kai_with(control_plane, tmp_path, budget) as configured:
        wait_until("the 50 low-priority pods to run", lambda: len(running(control_plane, namespace, "low")) == 50)
        apply(control_plane, tmp_path, *high)
        wait_until("25 preemptors to run", lambda: len(running(control_plane, namespace, "high")) == 25)
        # what the scheduler says while the minute of its first evictions lasts (asked first: on a loaded machine
        # the rest of the test may outlast that minute, and the budget then lets the next evictions go)
        assert configured.metric("kai_evictions_sent_total", action="preempt", outcome="evicted") == 25
        assert configured.metric("kai_eviction_budget_remaining", window="minute") == 0
        assert configured.metric("kai_eviction_held_podgroups", reason="EvictionBudgetSpent") > 0
        waiting = next(f"high-{i}-0" for i in range(50) if phases(control_plane, namespace)[f"high-{i}-0"] == "Pending")
        kinds = [reason["kind"] for reason in explain(control_plane, configured, namespace, waiting)["reasons"]]
        assert "EvictionBudgetSpent" in kinds, kinds  # kai explain's dry cycle counts them from the PodGroups' records
        wait_cycles(configured, 10)
        sent = sorted(
            parse_time(e["lastTimestamp"], "Event", "lastTimestamp")
            for e in events(control_plane, namespace, "Evict")
            if e["involvedObject"]["kind"] == "Pod"
        )
        assert len(sent) >= 25 and sent[24] - sent[0] < 60  # the first minute took 25 ...
        assert all(later - sent[i] >= 58 for i, later in enumerate(sent[25:])), sent  # ... and never more in one


# ------------------------------------------------------------------------------------------- preemptionPolicy: Never


def test_a_podgroup_whose_priority_class_never_preempts_waits_without_preempting(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, parent, team, never = f"never-{namespace}", f"p-{namespace}", f"team-{namespace}", f"never-{namespace}"
    queue_tree(control_plane, tmp_path, parent, (team, {}))
    never_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": never},
        "value": 90,
        "preemptionPolicy": "Never",
    }
    kwok.node(f"{pool}-gpu", 1, {"pool": pool})
    apply(control_plane, tmp_path, never_class, priority(gpu_pod(namespace, "low", team, pool, 1), "train"))
    wait_until("the low-priority pod to run", lambda: running(control_plane, namespace, "low") == ["low"])
    apply(control_plane, tmp_path, priority(gpu_pod(namespace, "urgent", team, pool, 1), never))

    wait_until("kai to say why it waits", lambda: "urgent" in explained_waiting(control_plane, kai, namespace))
    wait_cycles(kai, 10)
    assert phases(control_plane, namespace) == {"low": "Running", "urgent": "Pending"}
    assert not events(control_plane, namespace, "Evict")
    told = explain(control_plane, kai, namespace, "urgent")
    kinds = [reason["kind"] for reason in told["reasons"]]
    assert "PreemptionPolicyNever" in kinds, kinds

    control_plane.kubectl("delete", "pod", "low", "-n", namespace)  # room frees up: it takes it
    wait_until("the never-preempting pod to run", lambda: running(control_plane, namespace, "urgent") == ["urgent"])


def explained_waiting(cp: ControlPlane, kai: Kai, namespace: str) -> str:
    """The pods whose explanation has a reason (one line each)."""
    found = kubectl_json(cp, "get", "pods", "-n", namespace)["items"]
    return " ".join(
        p["metadata"]["name"]
        for p in found
        if p["status"].get("phase") == "Pending" and explain(cp, kai, namespace, p["metadata"]["name"])["reasons"]
    )


# ------------------------------------------------------------------------------------------- suspend


def suspending_job(namespace: str, queue: str, pool: str, run_for: str) -> dict[str, Any]:
    """A batch Job of two one-GPU pods that asks to be suspended rather than have its pods deleted."""
    pod = gpu_pod(namespace, "unused", queue, pool, 1)
    template = {
        "metadata": {"labels": {names.QUEUE_LABEL: queue}, "annotations": {RUN_FOR_ANNOTATION: run_for}},
        "spec": {**pod["spec"], "restartPolicy": "Never"},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": namespace,
            "labels": {names.QUEUE_LABEL: queue},
            "annotations": {names.EVICTION_STRATEGY_ANNOTATION: names.SUSPEND},
        },
        "spec": {"parallelism": 2, "completions": 2, "backoffLimit": 0, "template": template},
    }


def job(cp: ControlPlane, namespace: str) -> dict[str, Any]:
    return dict(kubectl_json(cp, "get", "job", "train", "-n", namespace))


def test_a_suspended_batch_job_resumes_and_runs_to_completion(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, controllers: Part, tmp_path: Path
) -> None:
    pool, parent, vision, llm = f"susp-{namespace}", f"p-{namespace}", f"vision-{namespace}", f"llm-{namespace}"
    queue_tree(control_plane, tmp_path, parent, (vision, {"quota": 0}), (llm, {"quota": 2}))
    kwok.node(f"{pool}-gpu", 2, {"pool": pool})
    apply(control_plane, tmp_path, suspending_job(namespace, vision, pool, "15s"))
    wait_until("the Job's two pods to run", lambda: len(running(control_plane, namespace, "train")) == 2)
    # one gang that needs both GPUs, so that a cycle evicts the Job whole and suspends it (two lone reclaimers seen in
    # two cycles took one pod each by eviction, which the Job controller counts as failed: backoffLimit 0 failed it)
    reclaimers = [
        obj if obj["kind"] == "PodGroup" else labelled(obj, **{RUN_FOR_ANNOTATION: "3s"})
        for obj in gang(namespace, "llm", llm, pool, 2, 1)
    ]
    apply(control_plane, tmp_path, *reclaimers)

    wait_until("the Job to be suspended", lambda: job(control_plane, namespace)["spec"].get("suspend") is True)
    [podgroup] = [g for g in podgroups(control_plane, namespace) if g["metadata"]["name"].startswith("pg-train")]
    assert names.SUSPENDED_PODS_ANNOTATION in annotations(podgroup)  # written before the Job's suspend

    def record() -> dict[str, Any] | None:  # written once the cycle's evictions are sent
        found = kubectl_json(control_plane, "get", "podgroup", podgroup["metadata"]["name"], "-n", namespace)
        text = annotations(found).get(names.EVICTION_RECORD_ANNOTATION)
        return json.loads(text) if text else None

    assert wait_until("the PodGroup's eviction record", record)["suspended"] == "Job train"
    wait_until("the reclaimers to run and finish", lambda: phases(control_plane, namespace).get("llm-1") == "Succeeded")
    wait_until("the Job to be resumed", lambda: job(control_plane, namespace)["spec"].get("suspend") is False)
    wait_until("the Job's pods to run again", lambda: len(running(control_plane, namespace, "train")) == 2)
    wait_until("the Job to complete", lambda: job(control_plane, namespace).get("status", {}).get("succeeded") == 2)
    resumed = [e for e in events(control_plane, namespace, "Resumed") if e["involvedObject"]["kind"] == "PodGroup"]
    assert [e["message"] for e in resumed] == ["Job train resumed: its pods fit again"]  # the Job controller's too
    podgroup = kubectl_json(control_plane, "get", "podgroup", podgroup["metadata"]["name"], "-n", namespace)
    assert names.SUSPENDED_PODS_ANNOTATION not in annotations(podgroup)  # its pods came back


@pytest.mark.usefixtures("kuberay")
def test_a_suspended_rayjob_resumes_and_its_ray_cluster_runs_again(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, controllers: Part, tmp_path: Path
) -> None:
    pool, parent, vision, llm = f"ray-{namespace}", f"p-{namespace}", f"vision-{namespace}", f"llm-{namespace}"
    suspend = {names.EVICTION_STRATEGY_ANNOTATION: names.SUSPEND}
    queue_tree(control_plane, tmp_path, parent, (vision, {"quota": 0, "annotations": suspend}), (llm, {"quota": 1}))
    kwok.node(f"{pool}-gpu", 1, {"pool": pool})
    worker = gpu_pod(namespace, "unused", vision, pool, 1)["spec"]
    head = {**worker, "containers": [{"name": "ray-head", "image": "busybox"}]}
    cluster = {
        "rayVersion": "2.46.0",
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": head}},
        "workerGroupSpecs": [{"groupName": "gpu", "replicas": 1, "rayStartParams": {}, "template": {"spec": worker}}],
    }
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "tune", "namespace": namespace, "labels": {names.QUEUE_LABEL: vision}},
        "spec": {"entrypoint": "python tune.py", "shutdownAfterJobFinishes": True, "rayClusterSpec": cluster},
    }
    apply(control_plane, tmp_path, rayjob)
    wait_until("the Ray cluster's head and worker to run", lambda: len(running(control_plane, namespace, "tune")) == 2)
    reclaimer = labelled(gpu_pod(namespace, "llm-0", llm, pool, 1), **{RUN_FOR_ANNOTATION: "3s"})
    apply(control_plane, tmp_path, reclaimer)

    def suspended() -> bool:
        return bool(kubectl_json(control_plane, "get", "rayjob", "tune", "-n", namespace)["spec"].get("suspend"))

    wait_until("the RayJob to be suspended (its queue opted in)", suspended)
    wait_until("KubeRay to take the Ray cluster down", lambda: not running(control_plane, namespace, "tune"))
    wait_until("the reclaimer to finish", lambda: phases(control_plane, namespace).get("llm-0") == "Succeeded")
    wait_until("the RayJob to be resumed", lambda: not suspended())
    wait_until(
        "the new Ray cluster's head and worker to run", lambda: len(running(control_plane, namespace, "tune")) == 2
    )


# ------------------------------------------------------------------------------------------- gating


@pytest.mark.parametrize(
    ("held_by", "priority_class"),
    [({"limit": 1}, ""), ({"quota": 1}, "inference")],
    ids=["limit", "quota-non-preemptible"],
)
def test_a_pod_its_queue_quota_or_limit_blocks_carries_the_gate_and_loses_it_when_the_queue_admits_it(
    control_plane: ControlPlane,
    namespace: str,
    kwok: Kwok,
    tmp_path: Path,
    held_by: dict[str, int],
    priority_class: str,
) -> None:
    """The queue holds one of the two 1-GPU pods: by its limit, or, for pods that are not preemptible, by its quota
    (a preemptible pod may run over its quota: only a limit holds it)."""
    pool, parent, team = f"gate-{namespace}", f"p-{namespace}", f"team-{namespace}"
    gating = {names.QUEUE_ADMISSION_GATING_ANNOTATION: "true"}
    queue_tree(control_plane, tmp_path, parent, (team, {**held_by, "annotations": gating}))
    kwok.node(f"{pool}-gpu", 4, {"pool": pool})
    control_plane.kubectl("apply", "-f", str(PRIORITY_CLASSES))  # before the pods: the API server checks the name
    with serving(control_plane, tmp_path, "--queue-admission-gating=true"):
        made = [labelled(gpu_pod(namespace, name, team, pool, 1), **{RUN_FOR_ANNOTATION: "4s"}) for name in ("a", "b")]
        for pod in made:
            pod["spec"] |= {"priorityClassName": priority_class} if priority_class else {}
        apply(control_plane, tmp_path, *made)  # created together: either may be admitted first
    pods = {p["metadata"]["name"]: p for p in kubectl_json(control_plane, "get", "pods", "-n", namespace)["items"]}
    assert all(p["spec"]["schedulingGates"] == [{"name": names.QUEUE_ADMISSION_GATE}] for p in pods.values())

    with kai_with(control_plane, tmp_path, {"actions": f"{KAI_ACTIONS}, ungate"}) as kai:
        [first] = wait_until("one pod to run", lambda: running(control_plane, namespace, ""))
        [second] = {"a", "b"} - {first}
        wait_cycles(kai, 10)
        held = kubectl_json(control_plane, "get", "pod", second, "-n", namespace)
        assert held["spec"]["schedulingGates"] == [{"name": names.QUEUE_ADMISSION_GATE}]  # the queue's cap is used
        assert not [c for c in held["status"].get("conditions", []) if c.get("reason") == "Unschedulable"]
        wait_until("the first pod to finish", lambda: phases(control_plane, namespace)[first] == "Succeeded")
        wait_until("the second pod to lose the gate and run", lambda: running(control_plane, namespace, second))
        admitted = kubectl_json(control_plane, "get", "pod", second, "-n", namespace)
        assert not admitted["spec"].get("schedulingGates")
        assert names.QUEUE_ADMITTED_ANNOTATION in admitted["metadata"]["annotations"]


# ------------------------------------------------------------------------------------------- quota cuts


def set_gpu(cp: ControlPlane, queue: str, **values: int) -> None:
    cp.kubectl("patch", "queue", queue, "--type=merge", "-p", json.dumps({"spec": {"resources": {"gpu": values}}}))


def test_a_quota_cut_reclaims_down_to_the_new_quota_without_a_loop(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, parent, vision, llm = f"cut-{namespace}", f"p-{namespace}", f"vision-{namespace}", f"llm-{namespace}"
    queue_tree(control_plane, tmp_path, parent, (vision, {"quota": 4}), (llm, {"quota": 0}))
    kwok.node(f"{pool}-gpu", 4, {"pool": pool})
    jobs = [gang(namespace, f"v{i}", vision, pool, 1, 1) for i in range(4)]
    apply(control_plane, tmp_path, *(obj for job in jobs for obj in job))
    wait_until("team-vision's four pods to run", lambda: len(running(control_plane, namespace, "v")) == 4)
    apply(control_plane, tmp_path, *(gpu_pod(namespace, f"llm-{i}", llm, pool, 1) for i in range(3)))
    wait_cycles(kai, 5)
    assert len(running(control_plane, namespace, "v")) == 4  # within its quota: nothing to reclaim

    set_gpu(control_plane, vision, quota=2)
    set_gpu(control_plane, llm, quota=2)
    wait_until("team-llm to reclaim two GPUs", lambda: len(running(control_plane, namespace, "llm")) == 2)
    wait_cycles(kai, 15)
    assert (len(running(control_plane, namespace, "v")), len(running(control_plane, namespace, "llm"))) == (2, 2)
    assert len([e for e in events(control_plane, namespace, "Evict") if e["involvedObject"]["kind"] == "Pod"]) == 2


def test_a_limit_cut_evicts_down_to_the_new_limit_without_a_loop(
    control_plane: ControlPlane, namespace: str, kwok: Kwok, tmp_path: Path
) -> None:
    pool, parent, team = f"lcut-{namespace}", f"p-{namespace}", f"team-{namespace}"
    queue_tree(control_plane, tmp_path, parent, (team, {"limit": 4}))
    kwok.node(f"{pool}-gpu", 8, {"pool": pool})
    with kai_with(control_plane, tmp_path, {"actions": f"{KAI_ACTIONS}, overlimiteviction"}) as kai:
        jobs = [gang(namespace, f"j{i}", team, pool, 1, 1) for i in range(4)]
        apply(control_plane, tmp_path, *(obj for job in jobs for obj in job))
        wait_until("the four jobs to run", lambda: len(running(control_plane, namespace, "j")) == 4)
        set_gpu(control_plane, team, limit=2)
        wait_until("two jobs to be evicted", lambda: len(running(control_plane, namespace, "j")) == 2)
        wait_cycles(kai, 15)
        assert len(running(control_plane, namespace, "j")) == 2
        evicted = [e for e in events(control_plane, namespace, "Evict") if e["involvedObject"]["kind"] == "Pod"]
        assert len(evicted) == 2
        text = f"evicted by overlimiteviction: queue {team} over its GPU limit"
        assert all(e["message"].startswith(text) for e in evicted)
