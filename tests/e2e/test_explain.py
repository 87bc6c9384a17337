"""`kai explain`, `kai queues` and `kai snapshot` as a user runs them against `kai all` on a real kube-apiserver:
the reason, proven fixes and place in line of gangs blocked by a queue limit, by topology and by a victim's min
runtime, and the proven fix applied (a Queue patched, a node added) starting the gang; the seed's queues against
their Queue statuses; a snapshot of the cluster run by `kai simulate`; the scheduler's plugin server paths."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from controlplane import ControlPlane
from kai_support import REPO, SEED, Kai, apply, bound, gang, gpu_pod, kai_cli, kubectl_json, queue_tree, wait_until
from testcluster import Kwok

from kai.core.model.meta import parse_time


def explain_json(cp: ControlPlane, kai: Kai, namespace: str, name: str) -> dict[str, Any]:
    told: dict[str, Any] = json.loads(kai_cli(cp, kai, "explain", "podgroup", name, "-n", namespace, "-o", "json"))
    return told


def condition_reason(cp: ControlPlane, namespace: str, name: str) -> str:
    group = kubectl_json(cp, "get", "podgroup", name, "-n", namespace)
    conditions = group.get("status", {}).get("schedulingConditions") or []
    return str(conditions[0]["reasons"][0]["reason"]) if conditions else ""


def test_explain_a_gang_blocked_by_its_queue_limit(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, parent, queue = f"limit-{namespace}", f"p-{namespace}", f"q-{namespace}"
    queue_tree(control_plane, tmp_path, parent, (queue, {"limit": 4}))
    kwok.node(f"{pool}-gpu", 8, {"pool": pool})
    apply(control_plane, tmp_path, *gang(namespace, "first", queue, pool, 1, 2))
    wait_until("the first job to be bound", lambda: bound(control_plane, namespace, "first-0"))
    apply(control_plane, tmp_path, *gang(namespace, "big", queue, pool, 2, 2))
    wait_until("KAI's OverLimit condition", lambda: condition_reason(control_plane, namespace, "big") == "OverLimit")

    told = explain_json(control_plane, kai, namespace, "big")
    assert told["state"] == "waiting"
    assert told["kai"]["reason"] == "OverLimit"
    assert told["reasons"][0]["kind"] == "QueueLimit"
    assert told["reasons"][0]["evidence"] == {
        "queue": queue, "resource": "GPU", "unit": "GPUs", "bound": 4, "allocated": 2, "requested": 4
    }  # fmt: skip
    (fix, *_) = told["fixes"]["proven"]
    assert fix["text"] == f"raise the GPU limit of queue {queue} from 4 to 6 GPUs" and fix["startsInCycle"] == 1
    assert fix["changes"] == {"queues": {queue: {"gpu": {"limit": 6}}}}
    assert_in_line(told, queue, parent)
    cycles = told["lastCycles"]["cycles"]
    assert told["lastCycles"]["source"] == f"the scheduler at 127.0.0.1:{kai.plugin_port}"
    assert cycles and cycles[-1]["did"] == "waited" and cycles[-1]["kind"] == "QueueLimit"

    text = kai_cli(control_plane, kai, "explain", "podgroup", "big", "-n", namespace)
    assert f"QueueLimit  queue {queue} would exceed its GPU limit: limit 4 GPUs, 2 allocated, 4 requested" in text
    assert f"  1. raise the GPU limit of queue {queue} from 4 to 6 GPUs (starts in cycle 1)" in text
    assert f"In line: 1st of 1 in queue {queue} · {queue} 1st of 1 under {parent} · {parent} " in text
    assert "waited: QueueLimit" in text
    pod_text = kai_cli(control_plane, kai, "explain", "pod", "big-1", "-n", namespace)
    assert f"Pod {namespace}/big-1 of podgroup {namespace}/big" in pod_text and "1. raise the GPU limit" in pod_text

    patch = {"spec": {"resources": {"gpu": fix["changes"]["queues"][queue]["gpu"]}}}
    control_plane.kubectl("patch", "queue", queue, "--type", "merge", "-p", json.dumps(patch))
    wait_until(
        "the gang to start with the fix",
        lambda: bound(control_plane, namespace, "big-0") and bound(control_plane, namespace, "big-1"),
    )


def assert_in_line(told: dict[str, Any], queue: str, parent: str) -> None:
    """First and only in its queue, which is its parent's only child; the parent's place among the top-level
    queues depends on the other tests' queues, so only its range is checked."""
    position = told["position"]
    assert position["inQueue"] == {"queue": queue, "place": 1, "of": 1}
    mine, top = position["queues"]
    assert mine == {"queue": queue, "place": 1, "of": 1, "under": parent}
    assert top["queue"] == parent and top["under"] == "" and 1 <= top["place"] <= top["of"]


def two_racks(
    cp: ControlPlane, kwok: Kwok, tmp_path: Path, namespace: str, pool: str, queue: str, level: dict[str, str]
) -> dict[str, str]:
    """The Topology ``racks-<namespace>`` of one ``level`` and two racks (``<namespace>-r1``, ``-r2``) of two 2-GPU
    nodes, each rack with one GPU held by another scheduler's pod on one node; the rack of each node, by name."""
    topology = {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": f"racks-{namespace}"},
        "spec": {"levels": [level]},
    }
    apply(cp, tmp_path, topology)
    racks = {}
    for rack in ("r1", "r2"):
        for i in range(2):
            name = f"{pool}-{rack}-{i}"
            kwok.node(name, 2, {"pool": pool})
            cp.kubectl("label", "node", name, f"{level['nodeLabel']}={namespace}-{rack}", "--overwrite")
            racks[name] = f"{namespace}-{rack}"
    fillers = []
    for node in (f"{pool}-r1-0", f"{pool}-r2-1"):
        filler = gpu_pod(namespace, f"filler-{node}", queue, pool, 1)
        filler["spec"] |= {"schedulerName": "default-scheduler", "nodeName": node}
        fillers.append(filler)
    apply(cp, tmp_path, *fillers)
    return racks


def test_explain_a_gang_blocked_by_topology(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    """Two racks of two 2-GPU nodes, each rack with one GPU held by another scheduler's pod; a gang of four 1-GPU
    pods must share a rack: each rack has room for 3."""
    pool, parent, queue, rack_label = f"topo-{namespace}", f"p-{namespace}", f"q-{namespace}", "kai.test/rack"
    queue_tree(control_plane, tmp_path, parent, (queue, {}))
    two_racks(control_plane, kwok, tmp_path, namespace, pool, queue, {"nodeLabel": rack_label})
    constraint = {"topology": f"racks-{namespace}", "requiredTopologyLevel": rack_label}
    apply(control_plane, tmp_path, *gang(namespace, "spread", queue, pool, 4, 1, topologyConstraint=constraint))
    wait_until("the gang's scheduling condition", lambda: condition_reason(control_plane, namespace, "spread"))

    told = explain_json(control_plane, kai, namespace, "spread")
    (reason,) = told["reasons"]
    assert reason["kind"] == "TopologyDomain"
    assert reason["evidence"]["requiredLevel"] == rack_label and reason["evidence"]["domains"] == 2
    assert [(c["evidence"]["domain"], c["evidence"]["allocatablePods"]) for c in reason["children"]] == [
        (f"{namespace}-r1", 3),
        (f"{namespace}-r2", 3),
    ]
    (fix, *_) = told["fixes"]["proven"]  # a node in a rack: that rack has room for the gang (the fillers stay)
    assert fix["text"] == f"add 1 node like {pool}-r1-0, 2 GPUs"
    assert fix["changes"] == {"nodes": {"add": [{"like": f"{pool}-r1-0", "count": 1}]}}
    assert_in_line(told, queue, parent)
    text = kai_cli(control_plane, kai, "explain", "pg", "spread", "-n", namespace)
    assert f"  1. add 1 node like {pool}-r1-0, 2 GPUs (starts in cycle 1)" in text
    assert "TopologyDomain" in text and "has room for 3 of the 4 pods" in text

    like = kubectl_json(control_plane, "get", "node", f"{pool}-r1-0")["metadata"]["labels"]
    kwok.node(f"{pool}-r1-2", 2, {"pool": pool, rack_label: like[rack_label]})
    wait_until(
        "the gang to start on the added node",
        lambda: all(bound(control_plane, namespace, f"spread-{i}") for i in range(4)),
    )


def test_explain_a_gang_waiting_for_a_victims_min_runtime(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    """Queue b (quota 2) wants the node's 2 GPUs, held over quota by queue a, whose jobs are protected from reclaim
    for an hour after they start."""
    pool, parent, a, b = f"minrt-{namespace}", f"p-{namespace}", f"a-{namespace}", f"b-{namespace}"
    queue_tree(control_plane, tmp_path, parent, (a, {"quota": 0, "reclaimMinRuntime": "1h"}), (b, {"quota": 2}))
    kwok.node(f"{pool}-gpu", 2, {"pool": pool})
    apply(control_plane, tmp_path, *gang(namespace, "holder", a, pool, 1, 2))
    wait_until("the holder to be bound", lambda: bound(control_plane, namespace, "holder-0"))
    started = wait_until(
        "the holder's last-start annotation",
        lambda: (
            kubectl_json(control_plane, "get", "podgroup", "holder", "-n", namespace)["metadata"]
            .get("annotations", {})
            .get("kai.scheduler/last-start-timestamp")
        ),
    )
    apply(control_plane, tmp_path, *gang(namespace, "wants", b, pool, 1, 2))
    wait_until("the gang's scheduling condition", lambda: condition_reason(control_plane, namespace, "wants"))

    told = explain_json(control_plane, kai, namespace, "wants")
    assert told["reasons"][0]["kind"] == "VictimsProtectedByMinRuntime"
    (victim,) = told["reasons"][0]["evidence"]["victims"]
    assert victim["podgroup"] == f"{namespace}/holder" and victim["queue"] == a and victim["action"] == "reclaim"
    until = victim["until"]
    assert abs(until - (parse_time(started, "PodGroup holder", "last-start") + 3600)) < 1
    wait = told["reasons"][0]["fixes"][0]  # the reason's own end: the estimate rests on it
    assert wait["kind"] == "WaitForJob"
    assert wait["evidence"] == {"podgroup": f"{namespace}/holder", "queue": a, "until": until}
    assert told["estimatedStart"]["at"] == until
    proven = [fix["text"] for fix in told["fixes"]["proven"]]
    assert proven[0] == f"move {namespace}/holder-0 off node {pool}-gpu (evicted: back to pending)", proven
    position = told["position"]
    assert position["inQueue"] == {"queue": b, "place": 1, "of": 1}
    assert position["queues"][0] == {"queue": b, "place": 1, "of": 2, "under": parent}  # a has nothing pending
    assert position["queues"][1]["queue"] == parent
    text = kai_cli(control_plane, kai, "explain", "podgroup", "wants", "-n", namespace)
    assert f"  1. move {namespace}/holder-0 off node {pool}-gpu (evicted: back to pending)" in text
    assert f"In line: 1st of 1 in queue {b} · {b} 1st of 2 under {parent}" in text


SEED_QUEUES = ("departement-ml", "equipe-training", "equipe-inference")


def test_queues_on_the_seed_match_the_queue_statuses(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    control_plane.kubectl("apply", "-f", str(SEED / "queues.yaml"))
    pool = f"seed-q-{namespace}"
    kwok.node(f"{pool}-gpu", 8, {"pool": pool})
    # one after the other: submitted together, the training gang may take the node first (the seed queues also
    # hold other tests' pods, which decides their order) and the inference job would then never bind
    apply(control_plane, tmp_path, *gang(namespace, "inference", "equipe-inference", pool, 1, 3))
    wait_until("the inference job to be bound", lambda: bound(control_plane, namespace, "inference-0"))
    apply(control_plane, tmp_path, *gang(namespace, "training", "equipe-training", pool, 2, 4))
    wait_until("the training gang's condition", lambda: condition_reason(control_plane, namespace, "training"))

    def compare() -> list[str]:
        shown = {row["queue"]: row for row in json.loads(kai_cli(control_plane, kai, "queues", "-o", "json"))["queues"]}
        mismatches = []
        for name in SEED_QUEUES:
            status = kubectl_json(control_plane, "get", "queue", name).get("status", {})
            gpu = shown[name]["resources"]["gpu"]
            for field in ("allocated", "requested"):
                want = float(status.get(field, {}).get("nvidia.com/gpu", 0))
                if gpu[field] != want:
                    mismatches.append(f"{name} {field}: kai queues {gpu[field]}, Queue status {want}")
        return mismatches

    last: list[str] = []

    def agree() -> bool:
        last[:] = compare()
        return not last

    try:
        wait_until("kai queues to agree with the Queue statuses", agree)
    except AssertionError as error:
        dump = control_plane.kubectl("get", "podgroups,pods,ns", "-A", "-o", "wide", check=False)
        raise AssertionError(f"{error}: {last}\n{dump.stdout}") from None
    shown = {row["queue"]: row for row in json.loads(kai_cli(control_plane, kai, "queues", "-o", "json"))["queues"]}
    training = shown["equipe-training"]["resources"]["gpu"]
    assert (training["quota"], training["limit"], training["weight"]) == (10, 20, 2)
    assert shown["equipe-training"]["parent"] == "departement-ml" and shown["equipe-training"]["depth"] == 1
    text = kai_cli(control_plane, kai, "queues", "equipe-training")
    assert "Queues (GPUs)" in text and ("└ equipe-training" in text or "├ equipe-training" in text)
    assert f"{namespace}/training" in text and "Pending in equipe-training" in text


def test_a_snapshot_of_the_test_cluster_runs_in_kai_simulate(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, parent, queue = f"snap-{namespace}", f"p-{namespace}", f"q-{namespace}"
    queue_tree(control_plane, tmp_path, parent, (queue, {"limit": 4}))
    kwok.node(f"{pool}-gpu", 8, {"pool": pool})
    apply(control_plane, tmp_path, *gang(namespace, "first", queue, pool, 1, 2))
    wait_until("the first job to be bound", lambda: bound(control_plane, namespace, "first-0"))
    apply(control_plane, tmp_path, *gang(namespace, "big", queue, pool, 2, 2))
    wait_until("KAI's OverLimit condition", lambda: condition_reason(control_plane, namespace, "big") == "OverLimit")
    taken = tmp_path / "cluster.zip"
    out = kai_cli(control_plane, kai, "snapshot", "-o", str(taken))
    assert out.startswith(f"wrote {taken}: ") and "scheduler config: the scheduler at" in out
    served = tmp_path / "served.zip"
    kai_cli(control_plane, kai, "snapshot", "--from-scheduler", "-o", str(served))
    for path in (taken, served):
        document = json.loads(zipfile.ZipFile(path).read("snapshot.json"))
        assert {"config", "schedulerParams", "rawObjects"} <= set(document)
        assert any(p["metadata"]["name"] == "big-0" for p in document["rawObjects"]["pods"])
        done = subprocess.run(
            [sys.executable, "-m", "kai", "simulate", str(path), "--json"],
            capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        (run,) = json.loads(done.stdout)
        groups = run["cycles"][-1]["podGroups"]
        assert groups[f"{namespace}/first"]["status"] in ("Bound", "Running")
        assert "OverLimit" in groups[f"{namespace}/big"]["fitErrorMessage"]


def test_the_plugin_server_serves_kai_paths_on_loopback(kai: Kai) -> None:
    def get(path: str) -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{kai.plugin_port}{path}", timeout=10) as answer:
            return bytes(answer.read())

    def cycles_run() -> list[dict[str, Any]]:
        code, body = Kai.get(kai.plugin_port, "/get-cycles")
        return list(json.loads(body)["cycles"]) if code == 200 else []

    last = wait_until("the scheduler's first cycles", cycles_run)[-1]
    assert {"cycle", "at", "binds", "pipelined", "evictions", "unschedulable"} == set(last)
    order = json.loads(get("/get-job-order"))
    assert set(order) == {"global_order", "queue_order"}
    with zipfile.ZipFile(io.BytesIO(get("/get-snapshot"))) as archive:
        assert archive.namelist() == ["snapshot.json"]
    assert Kai.get(kai.plugin_port, "/metrics")[0] == 404
