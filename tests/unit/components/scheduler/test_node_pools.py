"""Schedulers of several node pools (KAI's shards) on one cluster, and a PodGroup tried once per pool
(``schedulingBackoff: 1``): each scheduler takes only its pool's nodes, queues and PodGroups, leaves the pods of the
others alone, and names its pool in its texts as KAI does."""

import io
import json
import threading
import urllib.request
import zipfile
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from core_builders import T0, node, pod, podgroup, queue
from rich.console import Console

from kai.cli.commands.explain import render
from kai.cli.main import main
from kai.cli.sources import given_node_pool
from kai.cluster.memory import MemoryCluster
from kai.components.insight.explain import explain_pod, explain_podgroup
from kai.components.insight.inspect import inspect
from kai.components.insight.live import LiveError, SchedulerSide, read, scheduler_side
from kai.components.scheduler.capture import capture
from kai.components.scheduler.loop import SchedulerLoop
from kai.components.scheduler.node_pool import NodePool
from kai.components.scheduler.plugin_server import PluginServer
from kai.components.scheduler.snapshot_format import shard_of, write_zip
from kai.components.sim.runner import Simulation, run_scenario
from kai.components.sim.scenario import Scenario, load_scenario, snapshot_scenario
from kai.core.framework.config import SchedulerConfig

POOL_LABEL = "kai.scheduler/node-pool"
DEFAULT, H100 = NodePool(POOL_LABEL, ""), NodePool(POOL_LABEL, "h100")


def _in_pool(obj: dict[str, Any], pool: str) -> dict[str, Any]:
    return _labelled(obj, {POOL_LABEL: pool})


def _labelled(obj: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    obj["metadata"].setdefault("labels", {}).update(labels)
    return obj


def _cluster(*objects: tuple[str, dict[str, Any]]) -> MemoryCluster:
    cluster = MemoryCluster()
    cluster.create("PriorityClass", {"metadata": {"name": "train"}, "value": 50})
    for kind, obj in objects:
        cluster.create(kind, obj)
    return cluster


def _too_big_for_its_pool(pool: str, **spec: Any) -> MemoryCluster:
    """A pod of 16 GPUs in a pool (``""``: no label) of one 8-GPU node."""
    objects = [("Node", node("n-0", 8)), ("Queue", queue("q")), ("PodGroup", podgroup("big", "q", T0, **spec))]
    return _cluster(
        *[(kind, _in_pool(obj, pool) if pool else obj) for kind, obj in objects], ("Pod", pod("big-0", "big", gpus=16))
    )


def _two_pools() -> MemoryCluster:
    return _cluster(*_two_pools_objects())


def _two_pools_objects() -> list[tuple[str, dict[str, Any]]]:
    """A node, a queue, a PodGroup and its pod in the default pool (``a``) and in ``h100`` (``h``)."""
    return [
        ("Node", node("a-0", 8)),
        ("Node", _in_pool(node("h-0", 8), "h100")),
        ("Queue", queue("q")),
        ("Queue", _in_pool(queue("qh"), "h100")),
        ("PodGroup", podgroup("pg-a", "q", T0)),
        ("PodGroup", _in_pool(podgroup("pg-h", "qh", T0), "h100")),
        ("Pod", pod("a", "pg-a")),
        ("Pod", pod("h", "pg-h")),
    ]


def _events(cluster: MemoryCluster, reason: str) -> dict[str, str]:
    return {e["involvedObject"]["name"]: e["message"] for e in cluster.list("Event") if e["reason"] == reason}


def test_each_pools_scheduler_binds_its_own_and_leaves_the_other_pools_pods_alone() -> None:
    cluster = _two_pools()
    default = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=DEFAULT)
    h100 = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=H100)
    assert [(b.pod_key, b.node) for b in default.run_once().result.binds] == [("default/a", "a-0")]
    assert [(b.pod_key, b.node) for b in h100.run_once().result.binds] == [("default/h", "h-0")]
    assert not default.state.invalid and not h100.state.invalid  # the other pool's pod is not "of no PodGroup"
    for name in ("a", "h"):
        stored = cluster.get("Pod", f"default/{name}")
        assert stored is not None and not (stored.get("status") or {}).get("conditions")
    assert _events(cluster, "Scheduled") == {
        "a": "Successfully assigned pod default/a to node a-0 at node-pool default",
        "h": "Successfully assigned pod default/h to node h-0 at node-pool h100",
    }


def test_a_podgroup_tried_once_per_pool_waits_after_its_first_failure_there() -> None:
    """``schedulingBackoff: 1``: its condition and messages name its pool; once it has failed there, the pool's
    scheduler leaves it out (KAI's isPodGroupUpForScheduler) until it is moved to another pool."""
    cluster = _too_big_for_its_pool("h100", schedulingBackoff=1)
    h100 = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=H100)
    h100.run_once()
    stored = cluster.get("PodGroup", "default/big")
    assert stored is not None
    (condition,) = stored["status"]["schedulingConditions"]
    assert condition["nodePool"] == "h100" and condition["message"].startswith("Node-Pool 'h100': ")
    pod_message = _events(cluster, "Unschedulable")["big-0"]
    assert pod_message.startswith("Node-Pool 'h100': ") and "in the h100 node-pool" in pod_message
    h100.run_once()
    assert "default/big" not in h100.state.podgroups and "default/big" in h100.state.elsewhere
    assert not h100.state.invalid  # its pod waits for it to move, it is not "of no PodGroup"
    assert h100.run_once().result.unschedulable == {}

    moved = _in_pool(stored, "a100")
    cluster.update("PodGroup", moved)
    a100 = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=NodePool(POOL_LABEL, "a100"))
    assert "default/big" in a100.state.podgroups  # its last condition is of h100: up for a100's scheduler


def test_without_a_backoff_a_podgroup_is_tried_every_cycle() -> None:
    cluster = _too_big_for_its_pool("")
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=DEFAULT)
    loop.run_once()
    stored = cluster.get("PodGroup", "default/big")
    assert stored is not None
    (condition,) = stored["status"]["schedulingConditions"]
    assert condition["nodePool"] == "default" and not condition["message"].startswith("Node-Pool")
    assert "default/big" in loop.run_once().result.unschedulable


def test_the_last_scheduling_condition_is_the_one_of_the_highest_transition_id() -> None:
    podgroup_raw = _in_pool(podgroup("pg", "q", T0, schedulingBackoff=1), "h100")
    podgroup_raw["status"] = {
        "schedulingConditions": [
            {"nodePool": "h100", "transitionID": "2"},
            {"nodePool": "a100", "transitionID": "x"},  # unreadable: -1, as KAI reads it
            {"nodePool": "a100", "transitionID": "2"},  # equal: the first stays the last
        ]
    }
    assert not H100.up_for_scheduling("PodGroup", podgroup_raw)
    podgroup_raw["status"]["schedulingConditions"].append({"nodePool": "a100", "transitionID": "3"})
    assert H100.up_for_scheduling("PodGroup", podgroup_raw)
    podgroup_raw["spec"]["schedulingBackoff"] = -1
    podgroup_raw["status"]["schedulingConditions"] = [{"nodePool": "h100", "transitionID": "1"}]
    assert H100.up_for_scheduling("PodGroup", podgroup_raw)


def test_a_new_condition_takes_the_id_after_the_highest_wherever_it_stands() -> None:
    """KAI's setTransitionID: one past the highest ID, so that the new condition is the last one."""
    cluster = _too_big_for_its_pool("h100", schedulingBackoff=1)
    stored = cluster.get("PodGroup", "default/big")
    assert stored is not None
    stored["status"] = {
        "schedulingConditions": [{"nodePool": "a100", "transitionID": "5"}, {"nodePool": "b", "transitionID": "2"}]
    }
    cluster.update_status("PodGroup", stored)
    SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=H100).run_once()
    written = cluster.get("PodGroup", "default/big")
    assert written is not None
    assert [(c["nodePool"], c["transitionID"]) for c in written["status"]["schedulingConditions"]][-1] == ("h100", "6")
    assert not H100.up_for_scheduling("PodGroup", written)


def test_an_elastic_podgroup_with_a_running_pod_gets_no_condition_and_stays() -> None:
    """As KAI (RUN-20673): with a pod allocated or running, the event only, no condition; so a backoff never leaves
    out a job that runs."""
    cluster = _cluster(
        ("Node", node("n-0", 8)),
        ("Queue", queue("q")),
        ("PodGroup", podgroup("el", "q", T0, minMember=1, schedulingBackoff=1)),
        ("Pod", pod("el-0", "el", gpus=4, node_name="n-0")),
        ("Pod", pod("el-1", "el", gpus=8)),
    )
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=DEFAULT)
    assert "default/el" in loop.run_once().result.unschedulable
    stored = cluster.get("PodGroup", "default/el")
    assert stored is not None and not (stored.get("status") or {}).get("schedulingConditions")
    assert _events(cluster, "Unschedulable")["el"].startswith("Node-Pool 'default': ")
    loop.run_once()
    assert "default/el" in loop.state.podgroups


def test_kais_own_conditions_do_not_use_up_a_backoff() -> None:
    """A gang whose pods are still arriving (NotReady) and a PodGroup kai cannot use (InvalidObject) get conditions
    KAI does not write; they stay up for scheduling, so the gang is scheduled once its pods are there and the invalid
    PodGroup is reported once, not flapping."""
    cluster = _cluster(
        ("Node", node("n-0", 8)),
        ("Queue", queue("q")),
        ("PodGroup", podgroup("gang", "q", T0, minMember=2, schedulingBackoff=1)),
        ("Pod", pod("gang-0", "gang")),
        ("PodGroup", podgroup("bad", "q", T0, schedulingBackoff=1, subGroups=[{"name": "a", "parent": "nowhere"}])),
        ("Pod", pod("bad-0", "bad")),
    )
    loop = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=DEFAULT)
    loop.run_once()
    for name in ("gang", "bad"):
        stored = cluster.get("PodGroup", f"default/{name}")
        assert stored is not None and stored["status"]["schedulingConditions"]
    versions = []
    for _ in range(3):
        loop.run_once()
        stored = cluster.get("PodGroup", "default/bad")
        assert stored is not None
        versions.append(stored["metadata"]["resourceVersion"])
    assert len(set(versions)) == 1 and ("PodGroup", "default/bad") in loop.state.invalid
    cluster.create("Pod", pod("gang-1", "gang"))
    assert sorted(b.pod_key for b in loop.run_once().result.binds) == ["default/gang-0", "default/gang-1"]


def test_the_prefix_is_on_a_podgroup_of_a_missing_queue_too() -> None:
    cluster = _cluster(
        ("Node", node("n-0", 8)),
        ("PodGroup", podgroup("lost", "nope", T0, schedulingBackoff=1)),
        ("Pod", pod("lost-0", "lost")),
    )
    SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=DEFAULT).run_once()
    stored = cluster.get("PodGroup", "default/lost")
    assert stored is not None
    (condition,) = stored["status"]["schedulingConditions"]
    assert condition["message"].startswith("Node-Pool 'default': QueueDoesNotExist")


def test_kai_simulate_says_which_podgroups_it_leaves_out(tmp_path: Path) -> None:
    tried = podgroup("tried", "q", T0, schedulingBackoff=1)
    tried["status"] = {"schedulingConditions": [{"nodePool": "default", "transitionID": "1", "reasons": []}]}
    objects = [{"kind": "Queue", **queue("q")}, {"kind": "Node", **node("n-0", 8)}, {"kind": "PodGroup", **tried}]
    objects.append({"kind": "Pod", **pod("tried-0", "tried")})
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"name": "pools", "now": "2025-01-01T00:00:00Z", "objects": objects}))
    run = run_scenario(load_scenario(path))
    (problem,) = [p for p in run.problems if p.kind == "PodGroup"]
    assert (problem.severity, problem.name, problem.field) == ("warning", "default/tried", "spec.schedulingBackoff")
    assert "default/tried-0" not in run.cycles[-1].outcome.pods  # left out of the cycle, not bound


def _shard_snapshot(loop: SchedulerLoop, cluster: MemoryCluster) -> dict[str, Any]:
    """The loop's ``/get-snapshot``, as its snapshot.json document."""
    server = PluginServer(0)
    try:
        server.attach(loop, cluster)
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/get-snapshot", timeout=10) as answer:
            taken = answer.read()
    finally:
        server.close()
    return dict(json.loads(zipfile.ZipFile(io.BytesIO(taken)).read("snapshot.json")))


def _as_zip(document: dict[str, Any], path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("snapshot.json", json.dumps(document))
    return path


def _pool_notes(scenario: Scenario) -> list[str]:
    return [p.problem for p in scenario.problems if p.field == "schedulerParams.partitionParams"]


def test_a_shards_snapshot_holds_its_pool_and_simulates_as_that_pool(tmp_path: Path) -> None:
    """As KAI's snapshot plugin: the shard's nodes, queues and PodGroups (every pod), and its partitionParams; `kai
    simulate` of it schedules that pool, and leaves out what a hand-edited snapshot adds of other pools."""
    cluster = _two_pools()
    document = _shard_snapshot(SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=H100), cluster)
    assert document["schedulerParams"]["partitionParams"] == {
        "NodePoolLabelKey": POOL_LABEL,
        "NodePoolLabelValue": "h100",
    }
    held = {name: sorted(o["metadata"]["name"] for o in items) for name, items in document["rawObjects"].items()}
    assert (held["nodes"], held["queues"], held["podGroups"], held["pods"]) == (["h-0"], ["qh"], ["pg-h"], ["a", "h"])

    document["rawObjects"]["nodes"].append(node("stray", 8))  # a hand-edited snapshot: a node of no pool
    scenario = snapshot_scenario(_as_zip(document, tmp_path / "h100.zip"))
    assert scenario.node_pool == H100 and scenario.config.node_pool == "h100"
    assert _pool_notes(scenario) == [
        f"node pool h100 ({POOL_LABEL}=h100): 1 Node of other pools left out",
        f"node pool h100 ({POOL_LABEL}=h100): the pods of other pools' PodGroups (1) only take room on their nodes",
    ]
    sim = Simulation(scenario)
    record = sim.cycle(1)
    assert record.outcome.pods["default/h"]["node"] == "h-0" and "default/a" not in record.outcome.pods
    assert {p.field for p in sim.problems()} == {"schedulerParams.partitionParams"}  # a is not "missing its PodGroup"
    sim.advance(record)
    assert _events(sim.cluster, "Scheduled")["h"].endswith("to node h-0 at node-pool h100")


def test_a_pod_of_another_pool_on_a_shards_node_takes_its_room_in_the_snapshots_run_too(tmp_path: Path) -> None:
    """A node moved into h100 while a default-pool pod runs on it: neither h100's scheduler nor the run of its
    snapshot places h there; `kai explain` says the pod's PodGroup is another pool's (not that it backed off)."""
    cluster = _cluster(
        ("Node", _in_pool(node("h-0", 8), "h100")),
        ("Queue", queue("q")),
        ("Queue", _in_pool(queue("qh"), "h100")),
        ("PodGroup", podgroup("pg-a", "q", T0)),
        ("PodGroup", _in_pool(podgroup("pg-h", "qh", T0), "h100")),
        ("Pod", pod("a", "pg-a", gpus=8, node_name="h-0")),
        ("Pod", pod("h", "pg-h", gpus=8)),
    )
    h100 = SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=H100)
    assert h100.run_once().result.binds == []
    document = _shard_snapshot(h100, cluster)
    document["rawObjects"]["podGroups"].append(podgroup("pg-b", "q", T0))  # hand-added, of the default pool
    inspection = inspect(snapshot_scenario(_as_zip(document, tmp_path / "h100.zip")))
    assert inspection.session.result.binds == [] and inspection.backed_off == frozenset()
    assert [p.kind for p in inspection.problems] == ["Snapshot", "Snapshot"]  # nothing of a backoff used up
    told = explain_pod(inspection, "default/a")  # the snapshot has not pg-a: its pool is not known
    assert told["state"] == "other pool" and "partitionLabelValue" not in told, told
    assert told["summary"].endswith("podgroup default/pg-a is of another node pool than h100"), told
    told = explain_podgroup(inspection, "default/pg-b")
    assert told["state"] == "other pool" and told["partitionLabelValue"] == "", told
    assert (
        told["summary"] == "podgroup default/pg-b is of node pool default, not h100: that pool's scheduler schedules it"
    )


def test_unreadable_scheduling_conditions_count_as_no_reason() -> None:
    """Whatever a PodGroup's status holds, deciding whether it is up for scheduling never fails."""
    for reasons in ("x", ["x"], None, [{}], [{"reason": 3}]):
        tried = _in_pool(podgroup("pg", "q", T0, schedulingBackoff=1), "h100")
        tried["status"] = {"schedulingConditions": [{"nodePool": "h100", "transitionID": "1", "reasons": reasons}]}
        assert H100.up_for_scheduling("PodGroup", tried) is False, reasons
    for status in ("x", None, {"schedulingConditions": "x"}, {"schedulingConditions": ["x"]}):
        assert H100.up_for_scheduling("PodGroup", {"metadata": {}, "spec": {"schedulingBackoff": 1}, "status": status})


def _plugin_server(loop: SchedulerLoop, cluster: MemoryCluster) -> PluginServer:
    server = PluginServer(0)
    server.attach(loop, cluster)
    return server


def test_kai_explain_and_queues_look_at_the_running_schedulers_pool() -> None:
    """A live look runs as the pool of the scheduler that answers: its nodes and queues only, and a PodGroup of
    another pool is named by that pool, with the flag that looks there."""
    cluster = _two_pools()
    cluster.create("Pod", _in_pool(pod("orphan", "pg-gone"), "h100"))  # a live look holds every PodGroup there is
    server = _plugin_server(SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=H100), cluster)
    try:
        side = scheduler_side(None, f"127.0.0.1:{server.port}")
    finally:
        server.close()
    assert side.reachable and side.node_pool == H100
    scenario = read(cluster, side, "the cluster")  # type: ignore[arg-type]  # the memory cluster lists as a KubeCluster
    assert scenario.name == "the cluster, node pool h100"
    assert (scenario.node_pool, scenario.config.node_pool) == (H100, "h100")
    inspection = inspect(scenario)
    assert [(b.pod_key, b.node) for b in inspection.session.result.binds] == [("default/h", "h-0")]
    told = explain_pod(inspection, "default/a")
    assert (told["state"], told["partitionLabelValue"]) == ("other pool", ""), told
    assert "pod default/a: podgroup default/pg-a is of node pool default, not h100" in told["summary"]
    told = explain_pod(inspection, "default/orphan")
    assert told["state"] == "invalid" and "pg-gone" in told["summary"], told


def test_the_pool_given_wins_and_without_an_answer_it_is_the_default_schedulers() -> None:
    """``--partition-label-value`` wins over the running scheduler's pool; with no scheduler answering, a live look
    is the pool a scheduler with the default flags schedules (the objects without the label); a scheduler without
    shards (an empty label key) has one pool of every object."""
    cluster = _two_pools()
    server = _plugin_server(SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=H100), cluster)
    try:
        assert scheduler_side(None, f"127.0.0.1:{server.port}", DEFAULT).node_pool == DEFAULT
    finally:
        server.close()
    nowhere = f"127.0.0.1:{server.port}"  # closed now
    assert scheduler_side(None, nowhere).node_pool == DEFAULT
    assert scheduler_side(None, nowhere, NodePool("", "")).node_pool is None
    server = _plugin_server(
        SchedulerLoop(cluster, SchedulerConfig(), clock=lambda: T0, node_pool=NodePool("")), cluster
    )
    try:
        side = scheduler_side(None, f"127.0.0.1:{server.port}")
    finally:
        server.close()
    assert side.reachable and side.node_pool is None


def test_kai_explain_of_a_file_runs_as_the_pool_given(tmp_path: Path) -> None:
    """``kai explain -f`` of a whole cluster's manifests, as one pool's scheduler sees it: the other pool's pod is
    named by its pool, with the flag to look there; in that pool it is placed."""
    objects = [{"kind": kind, **obj} for kind, obj in _two_pools_objects()]
    objects.append({"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50})
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    told = CliRunner().invoke(main, ["explain", "pod", "a", "-f", str(path), "--partition-label-value=h100"])
    assert told.exit_code == 0, told.output
    assert "podgroup default/pg-a is of node pool default, not h100" in told.output
    assert "Look at it in its pool: add --partition-label-value=''" in told.output
    told = CliRunner().invoke(main, ["explain", "pod", "a", "-f", str(path), "--partition-label-value="])
    assert told.exit_code == 0 and "placed default/a on a-0" in told.output, told.output
    told = CliRunner().invoke(main, ["explain", "pod", "h", "-f", str(path), "--partition-label-value="])
    assert "of node pool h100, not default" in told.output and "--partition-label-value=h100" in told.output


def test_a_schedulers_snapshot_is_of_its_own_pool() -> None:
    told = CliRunner().invoke(main, ["snapshot", "--from-scheduler", "--partition-label-value=h100"])
    assert told.exit_code == 1 and "does not go with --from-scheduler" in told.output, told.output


def test_the_label_key_alone_is_a_pool_and_the_hint_names_a_key_other_than_kais() -> None:
    """``--nodepool-label-key ''`` alone looks at every object as one pool; a scheduler of another key is asked
    about with that key too."""
    assert given_node_pool({"nodepool_label_key": "", "partition_label_value": None}) == NodePool("", "")
    assert given_node_pool({"nodepool_label_key": POOL_LABEL, "partition_label_value": None}) is None
    cluster = _cluster(
        ("Node", node("a-0", 8)),
        ("Queue", _labelled(queue("q"), {"my/pool": "a"})),
        ("PodGroup", _labelled(podgroup("pg-b", "q", T0), {"my/pool": "b"})),
    )
    side = SchedulerSide(SchedulerConfig(), "test", "nowhere", False, node_pool=NodePool("my/pool", "a"))
    told = explain_podgroup(inspect(read(cluster, side, "the cluster")), "default/pg-b")  # type: ignore[arg-type]
    console = Console(record=True, width=200)
    render(told, T0, console)
    assert "add --partition-label-value=b --nodepool-label-key=my/pool" in console.export_text()


def test_a_malformed_answer_of_the_scheduler_is_one_line() -> None:
    """Whatever the plugin server answers, a live look says what is wrong with it, not a traceback."""

    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"config": {}, "schedulerParams": {"partitionParams": "h100"}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(LiveError, match=r"field schedulerParams.partitionParams: expected a mapping"):
            scheduler_side(None, f"127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        server.server_close()


def test_kai_snapshot_of_a_pool_records_the_other_pools_podgroups(tmp_path: Path) -> None:
    """A pod naming a PodGroup that exists nowhere stays invalid in the run of a pool's snapshot kai took; a pod of
    another pool's PodGroup only takes room on its node. (A KAI snapshot does not say which: every PodGroup it does
    not hold is taken as another pool's.)"""
    cluster = _two_pools()
    cluster.create("Pod", pod("orphan", "pg-gone"))
    shard = shard_of(capture(cluster, SchedulerConfig()), DEFAULT)
    assert shard.podgroups_elsewhere == frozenset({"default/pg-h"})
    path = tmp_path / "default.zip"
    path.write_bytes(write_zip(SchedulerConfig(), shard, T0))
    inspection = inspect(snapshot_scenario(path))
    assert explain_pod(inspection, "default/orphan")["state"] == "invalid"
    assert explain_pod(inspection, "default/h")["state"] == "other pool"
