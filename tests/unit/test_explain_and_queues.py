"""`kai explain` and `kai queues` on a scenario file, as a user runs them: what they print and their JSON."""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kai.cli.main import main
from kai.cluster.memory import MemoryCluster
from kai.components.insight.inspect import inspect
from kai.components.insight.queues import pending, queue_tree
from kai.components.insight.workload_podgroups import workload_kind, workload_podgroups
from kai.components.sim.scenario import load_scenario

NOW = "2025-01-01T00:10:00Z"


def _queue(name: str, parent: str = "", quota: float = -1, limit: float = -1) -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {"resources": {"gpu": {"quota": quota, "limit": limit, "overQuotaWeight": 1}}}
    spec["resources"] |= {"cpu": unlimited, "memory": unlimited}
    if parent:
        spec["parentQueue"] = parent
    return {"kind": "Queue", "metadata": {"name": name, "creationTimestamp": "2025-01-01T00:00:00Z"}, "spec": spec}


def _group(name: str, queue: str, size: int, created: str = "2025-01-01T00:01:00Z", **spec: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "team", "creationTimestamp": created}
    return {"kind": "PodGroup", "metadata": meta, "spec": {"queue": queue, "minMember": size, **spec}}


def _pod(name: str, group: str, gpus: int, node: str = "", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "schedulerName": "kai-scheduler",
        "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}],
        **spec,
    }
    if node:
        body["nodeName"] = node
    meta = {"name": name, "namespace": "team", "annotations": {"pod-group-name": group} if group else {}}
    return {"kind": "Pod", "metadata": meta, "spec": body, "status": {"phase": "Running" if node else "Pending"}}


def _node(name: str, gpus: int) -> dict[str, Any]:
    allocatable = {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}}


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    """dept → a (GPU limit 4), b (quota 2), c (quota 1) on one 8-GPU node: a holds 2 GPUs and wants 4 more as a
    gang; b has a 1-GPU job that fits and a gated one; c holds 3 GPUs; one podgroup kai cannot read; one pod of
    another scheduler."""
    objects = [
        {"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50},
        _queue("dept"),
        _queue("a", "dept", limit=4),
        _queue("b", "dept", quota=2),
        _queue("c", "dept", quota=1),
        _node("n0", 8),
        _group("first", "a", 1, "2025-01-01T00:00:00Z"),
        _pod("first-0", "first", 2, "n0"),
        _group("held", "c", 1, "2025-01-01T00:00:00Z"),
        _pod("held-0", "held", 3, "n0"),
        _group("big", "a", 2),
        _pod("big-0", "big", 2),
        _pod("big-1", "big", 2),
        _group("small", "b", 1),
        _pod("small-0", "small", 1),
        _group("later", "b", 1, "2025-01-01T00:02:00Z"),
        _pod("later-0", "later", 1, schedulingGates=[{"name": "data"}]),
        _group("broken", "b", 1, minMember="two"),
        _pod("other", "", 1, schedulerName="default-scheduler"),
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(
        yaml.safe_dump({"name": "team cluster", "now": NOW, "config": {"actions": "allocate"}, "objects": objects})
    )
    return path


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def explain_json(path: Path, *args: str) -> dict[str, Any]:
    told: dict[str, Any] = json.loads(run("explain", *args, "-n", "team", "-f", str(path), "-o", "json"))
    return told


def test_a_gang_over_its_queue_limit(scenario: Path) -> None:
    told = explain_json(scenario, "podgroup", "big")
    assert told["state"] == "waiting"
    assert told["kai"]["reason"] == "OverLimit"
    assert [r["kind"] for r in told["reasons"]] == ["QueueLimit"]
    assert told["nearestFix"]["text"] == "raise the GPU limit of queue a by 2 GPUs (to 6)"
    assert told["position"] == {
        "inLine": True,
        "inQueue": {"queue": "a", "place": 1, "of": 1},
        "queues": [
            {"queue": "a", "place": 2, "of": 3, "under": "dept"},  # b, below its quota, comes first
            {"queue": "dept", "place": 1, "of": 1, "under": ""},
        ],
        "cluster": {"place": 2, "of": 2},
    }
    assert told["estimatedStart"]["at"] is None
    assert told["lastCycles"]["cycles"] == [
        {
            "cycle": 1,
            "at": 1735690200.0,
            "did": "waited",
            "reason": "OverLimit",
            "kind": "QueueLimit",
            "text": "queue a would exceed its GPU limit: limit 4 GPUs, 2 allocated, 4 requested",
        }
    ]
    text = run("explain", "podgroup", "team/big", "-f", str(scenario))
    for line in (
        "PodGroup team/big  queue a · 2 pods (minMember 2) · priority 50 · preemptible",
        "State: waiting",
        "QueueLimit  queue a would exceed its GPU limit: limit 4 GPUs, 2 allocated, 4 requested",
        "KAI: OverLimit: OverLimit.",
        "Nearest fix: raise the GPU limit of queue a by 2 GPUs (to 6)",
        "In line: 1st of 1 in queue a · a 2nd of 3 under dept · dept 1st of 1 at the top · 2nd of 2 in the cluster",
        "cycle 1 (00:10:00Z (now)): waited: QueueLimit: queue a would exceed its GPU limit",
    ):
        assert line in text, f"{line!r} not in:\n{text}"


def test_a_job_the_cycle_places_starts_next_cycle(scenario: Path) -> None:
    told = explain_json(scenario, "podgroup", "small")
    assert told["state"] == "starting" and told["reasons"] == [] and told["nearestFix"] is None
    assert told["pods"] == [
        {"name": "team/small-0", "status": "Pending", "node": "", "nextCycle": "placed on n0", "reason": None}
    ]
    assert told["estimatedStart"] == {"at": 1735690200.0, "basis": "the next cycle binds it (this cycle placed it)"}
    assert told["lastCycles"]["cycles"][0]["did"] == "placed"


def test_a_gated_job_is_not_in_line_and_names_its_gates(scenario: Path) -> None:
    told = explain_json(scenario, "podgroup", "later")
    assert told["position"] == {"inLine": False, "why": "it is not ready: too few of its pods exist or they are gated"}
    assert told["reasons"][0]["kind"] == "SchedulingGate"
    assert told["nearestFix"]["text"] == "remove the scheduling gates of team/later-0"


def test_a_pod_is_explained_with_its_podgroup(scenario: Path) -> None:
    told = explain_json(scenario, "pod", "big-1")
    assert told["podgroup"] == "team/big" and told["explanation"]["nearestFix"]["kind"] == "RaiseQueueLimit"
    text = run("explain", "pod", "big-1", "-n", "team", "-f", str(scenario))
    assert "Pod team/big-1 of podgroup team/big" in text and "Nearest fix: raise the GPU limit of queue a" in text


def test_objects_kai_cannot_use_or_does_not_schedule(scenario: Path) -> None:
    told = explain_json(scenario, "podgroup", "broken")
    assert told["state"] == "invalid" and told["reasons"][0]["kind"] == "InvalidObject"
    assert told["nearestFix"]["text"].startswith("fix PodGroup team/broken, field spec.minMember:")
    other = explain_json(scenario, "pod", "other")
    assert other["summary"] == "pod team/other is scheduled by default-scheduler, not by kai"
    result = CliRunner().invoke(main, ["explain", "podgroup", "nowhere", "-n", "team", "-f", str(scenario)])
    assert result.exit_code == 1 and "Error: podgroup team/nowhere not found in team cluster" in result.output


def test_queue_tree_numbers_borrowing_and_pending_order(scenario: Path) -> None:
    inspection = inspect(load_scenario(scenario))
    rows = {row["queue"]: row for row in queue_tree(inspection)}
    assert [row["queue"] for row in queue_tree(inspection)] == ["dept", "a", "b", "c"]
    c = rows["c"]["resources"]["gpu"]
    assert (c["quota"], c["deserved"], c["allocated"], c["requested"]) == (1, 1, 3, 3)
    assert c["borrows"] == [{"from": "b", "amount": 2}] and c["unassigned"] == 0
    assert rows["b"]["resources"]["gpu"]["lends"] == [{"to": "c", "amount": 2}]
    assert rows["a"]["resources"]["gpu"]["limit"] == 4 and rows["dept"]["depth"] == 0 and rows["b"]["depth"] == 1
    waiting = pending(inspection, "dept")
    assert [(row["podgroup"], row["place"], row["state"]) for row in waiting] == [
        ("team/small", 1, "starting"),  # queue b is below its quota: it comes first
        ("team/big", 2, "waiting"),
        ("team/later", None, "waiting"),
    ]
    text = run("queues", "b", "-f", str(scenario))
    assert "├ a" in text and "└ c" in text and "borrows 2 from b" in text and "lends 2 to c" in text
    assert "Pending in b" in text and "team/small" in text and "team/later" in text
    shown = json.loads(run("queues", "-f", str(scenario), "-o", "json", "--resource", "all"))
    assert shown["source"] == "team cluster" and "pending" not in shown
    result = CliRunner().invoke(main, ["queues", "nowhere", "-f", str(scenario)])
    assert result.exit_code == 1 and "queue nowhere does not exist" in result.output


def test_queues_watch_shows_each_look_and_stops_on_ctrl_c(scenario: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`kai queues --watch -f FILE` reads the file again at every refresh: a quota raised between two looks shows,
    and Ctrl-C ends it quietly (exit 0)."""
    looks: list[float] = []

    def between_looks(seconds: float) -> None:
        looks.append(seconds)
        if len(looks) == 2:
            raise KeyboardInterrupt
        document = yaml.safe_load(scenario.read_text())
        for obj in document["objects"]:
            if obj["kind"] == "Queue" and obj["metadata"]["name"] == "c":
                obj["spec"]["resources"]["gpu"]["quota"] = 5
        scenario.write_text(yaml.safe_dump(document))

    monkeypatch.setattr("kai.cli.commands.queues.time.sleep", between_looks)
    monkeypatch.setenv("COLUMNS", "200")
    result = CliRunner().invoke(main, ["queues", "--watch", "--interval", "1s", "-f", str(scenario)])
    assert result.exit_code == 0, result.output
    assert looks == [1.0, 1.0]
    rows = [line for line in result.output.splitlines() if "└ c" in line]
    assert rows, result.output
    assert rows[-1].split("│")[3].strip() == "5", rows[-1]  # the quota column (a terminal shows each look in place)


def _workloads(tmp_path: Path) -> Path:
    """Manifests of a PyTorchJob of 4 GPUs, too big for the 3-GPU node, and a Deployment of 2 one-GPU replicas,
    with a pod of another Job named like the PyTorchJob."""
    container = {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    template = {"spec": {"schedulerName": "kai-scheduler", "containers": [container]}}
    labels = {"kai.scheduler/queue": "a"}
    specs = {"Master": {"replicas": 1, "template": template}, "Worker": {"replicas": 3, "template": template}}
    objects = [
        _queue("dept"),
        _queue("a", "dept"),
        _node("n0", 3),
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "bert", "namespace": "team", "labels": labels},
            "spec": {"pytorchReplicaSpecs": specs},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "serve", "namespace": "team", "labels": labels},
            "spec": {"replicas": 2, "template": template},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "bert", "namespace": "team", "labels": labels},
            "spec": {"suspend": True, "template": template},
        },
    ]
    path = tmp_path / "workloads.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path


def test_a_workload_is_explained_by_its_kind_and_name(tmp_path: Path) -> None:
    path = _workloads(tmp_path)
    told = explain_json(path, "pytorchjobs", "bert")
    assert (told["kind"], told["name"]) == ("pytorchjobs", "team/bert")
    (podgroup,) = told["podgroups"]
    assert podgroup["name"].startswith("team/pg-bert-") and podgroup["minMember"] == 4
    assert podgroup["state"] == "waiting" and podgroup["nearestFix"] is not None
    deployment = explain_json(path, "deploy", "serve")
    assert len(deployment["podgroups"]) == 2
    assert {p["state"] for p in deployment["podgroups"]} == {"starting"}
    text = run("explain", "PyTorchJob", "team/bert", "-f", str(path))
    assert text.startswith("PyTorchJob team/bert: 1 podgroup\n") and "minMember 4" in text


def test_a_workload_without_pods_is_an_error_that_says_why(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["explain", "job", "bert", "-n", "team", "-f", str(_workloads(tmp_path))])
    assert result.exit_code == 1
    assert "job team/bert: no podgroup or pod of it in workloads" in result.output


def test_pending_podgroups_in_a_queue_name_their_workload(tmp_path: Path) -> None:
    report = json.loads(run("queues", "a", "-f", str(_workloads(tmp_path)), "-o", "json"))
    workloads = sorted(row["workload"] for row in report["pending"])
    assert workloads[-1] == "PyTorchJob/bert"
    assert [w.split("/")[0] for w in workloads[:-1]] == ["Pod", "Pod"]  # a Deployment's pods own their podgroups
    text = run("queues", "a", "-f", str(_workloads(tmp_path)))
    assert "(PyTorchJob bert)" in text


def test_a_cron_jobs_podgroups_are_the_ones_its_jobs_own() -> None:
    def owned(kind: str, name: str, owner: tuple[str, str]) -> dict[str, Any]:
        ref = {"kind": owner[0], "name": owner[1], "uid": owner[1]}
        return {"kind": kind, "metadata": {"name": name, "namespace": "team", "ownerReferences": [ref]}}

    cluster = MemoryCluster(
        [
            owned("Job", "nightly-100", ("CronJob", "nightly")),
            owned("Job", "other-100", ("CronJob", "other")),
            owned("PodGroup", "pg-nightly-100-x", ("Job", "nightly-100")),
            owned("PodGroup", "pg-other-100-x", ("Job", "other-100")),
        ]
    )
    assert workload_podgroups(cluster, workload_kind("cj"), "team", "nightly") == ["team/pg-nightly-100-x"]


def test_a_podgroup_that_used_up_its_scheduling_backoff_is_explained_as_left_out(tmp_path: Path) -> None:
    """Tried once in its pool (``schedulingBackoff: 1``) and found unschedulable there: kai leaves it out, and says
    so of it and of its pods instead of not knowing them."""
    once = _group("once", "a", 1, schedulingBackoff=1)
    once["status"] = {
        "schedulingConditions": [{"type": "UnschedulableOnNodePool", "nodePool": "default", "transitionID": "1"}]
    }
    objects = [_queue("a"), _node("n0", 8), once, _pod("once-0", "once", 16)]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"name": "team cluster", "now": NOW, "objects": objects}))
    told = explain_json(path, "podgroup", "once")
    assert told["state"] == "left out" and "schedulingBackoff is used up" in told["summary"]
    pod = explain_json(path, "pod", "once-0")
    assert pod["summary"].startswith("pod team/once-0: podgroup team/once was found unschedulable")
    shown = run("explain", "podgroup", "once", "-n", "team", "-f", str(path))
    assert "moved to another pool" in " ".join(shown.split())
