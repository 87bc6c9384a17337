"""KAI's snapshot format: a snapshot KAI's plugin wrote runs in `kai simulate`, kai's own round-trips, a broken one
is one line; the scheduler's plugin server serves snapshots, the job order and its last cycles."""

import io
import json
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kai.cli.main import main
from kai.cluster.memory import MemoryCluster
from kai.components.scheduler.loop import SchedulerLoop
from kai.components.scheduler.plugin_server import PluginServer
from kai.components.scheduler.snapshot_format import read_zip, shard_of, write_zip
from kai.components.sim.scenario import load_scenarios
from kai.core.config import parse_config
from kai.core.model.meta import format_time

T0 = 1_735_689_600.0


def _unlimited() -> dict[str, Any]:
    return {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def kai_objects() -> dict[str, list[dict[str, Any]]]:
    """rawObjects as KAI's listers hold them: no kind, no apiVersion."""
    resources = {"gpu": _unlimited(), "cpu": _unlimited(), "memory": _unlimited()}
    node_status = {"allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2", "pods": "110"}}
    pod_spec = {
        "schedulerName": "kai-scheduler",
        "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}],
    }
    return {
        "pods": [
            {"metadata": {"name": "p-0", "namespace": "ns", "annotations": {"pod-group-name": "pg"}}, "spec": pod_spec}
        ],
        "nodes": [{"metadata": {"name": "n0"}, "status": node_status}],
        "queues": [{"metadata": {"name": "q"}, "spec": {"resources": resources}}],
        "podGroups": [
            {
                "metadata": {"name": "pg", "namespace": "ns", "creationTimestamp": "2025-01-01T00:00:00Z"},
                "spec": {"queue": "q", "minMember": 1},
            }
        ],
        "bindRequests": [],
        "priorityClasses": None,
        "configMaps": [{"metadata": {"name": "kai-config", "namespace": "kai-scheduler"}}],
    }


def kai_zip(tmp_path: Path, document: dict[str, Any], name: str = "snapshot.zip") -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("snapshot.json", json.dumps(document))
    return path


def simulate_json(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["simulate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.output)
    return dict(run)


def test_a_snapshot_kai_scheduler_wrote_runs_in_kai_simulate(tmp_path: Path) -> None:
    """Go's JSON: schedulerParams leaves out false and zero fields and writes durations in nanoseconds. The shard
    (partitionParams) lists its own nodes, queues and PodGroups, and the run schedules that pool."""
    raw = kai_objects()
    for name in ("nodes", "queues", "podGroups"):
        for item in raw[name]:
            item["metadata"]["labels"] = {"kai.scheduler/node-pool": "a"}
    document = {
        "config": {"actions": "allocate", "tiers": [{"plugins": [{"name": "predicates"}, {"name": "proportion"}]}]},
        "schedulerParams": {
            "schedulerName": "kai-scheduler",
            "fullHierarchyFairness": True,
            "stuckInReleasingThreshold": 120_000_000_000,
            "partitionParams": {"NodePoolLabelKey": "kai.scheduler/node-pool", "NodePoolLabelValue": "a"},
        },
        "rawObjects": raw,
    }
    run = simulate_json(kai_zip(tmp_path, document))
    assert run["cycles"][0]["pods"]["ns/p-0"]["node"] == "n0"
    assert {(p["field"], p["problem"]) for p in run["problems"]} == {
        ("rawObjects.configMaps", "1 objects kai does not schedule with; not used"),
        (
            "kai.capturedAt",
            "not set (KAI does not record it); kai runs it at 2025-01-01T00:00:00Z, the newest time in it",
        ),
    }
    ((_, scenario),) = load_scenarios([tmp_path / "snapshot.zip"])
    assert not isinstance(scenario, Exception)
    config = scenario.config
    assert (config.actions, config.use_scheduling_signatures, config.allow_consolidating_reclaim) == (
        ("allocate",),
        False,
        False,
    )
    assert config.max_consolidation_preemptees == 0 and config.stuck_in_releasing_s == 120.0
    assert config.node_pool == "a"
    assert [option.name for option in config.plugins] == ["predicates", "proportion"]


def test_kai_snapshots_round_trip(tmp_path: Path) -> None:
    config = parse_config(
        {
            "actions": "allocate, reclaim",
            "tiers": [{"plugins": [{"name": "proportion", "arguments": {"kValue": 0.5}}, {"name": "minruntime"}]}],
            "queueDepthPerAction": {"reclaim": 3},
            "scenarioSearchBudgets": {"maxJobSearchDuration": "30s"},
            "globalDefaultStalenessGracePeriod": "90s",
            "featureGates": {"DynamicResourceAllocation": True},
            "disruption": {"evictionBudget": {"perCycle": 4}},
        }
    )
    objects = {
        kind: [{"apiVersion": "v1", "kind": kind, **item} for item in kai_objects()[plural]]
        for kind, plural in (("Pod", "pods"), ("Node", "nodes"), ("Queue", "queues"), ("PodGroup", "podGroups"))
    }
    path = tmp_path / "taken.zip"
    path.write_bytes(write_zip(config, shard_of(objects, None), T0 + 30))
    document = json.loads(zipfile.ZipFile(path).read("snapshot.json"))
    assert document["config"]["tiers"][0]["plugins"][0] == {"name": "proportion", "arguments": {"kValue": "0.5"}}
    assert document["schedulerParams"]["globalDefaultStalenessGracePeriod"] == 90_000_000_000
    assert document["kai"] == {"capturedAt": format_time(T0 + 30)}
    ((_, scenario),) = load_scenarios([path])
    assert not isinstance(scenario, Exception)
    assert scenario.now == T0 + 30 and scenario.problems == []
    again = scenario.config
    assert (again.actions, again.queue_depth_per_action, again.staleness_grace_s) == (
        ("allocate", "reclaim"),
        {"reclaim": 3},
        90.0,
    )
    assert again.search_budgets.job_s == 30.0 and again.feature_gates == {"DynamicResourceAllocation": True}
    assert again.disruption == config.disruption
    assert sorted((o["kind"], o["metadata"]["name"]) for o in scenario.objects) == [
        ("Node", "n0"),
        ("Pod", "p-0"),
        ("PodGroup", "pg"),
        ("Queue", "q"),
    ]


def test_a_broken_snapshot_is_one_line(tmp_path: Path) -> None:
    no_json = tmp_path / "empty.zip"
    with zipfile.ZipFile(no_json, "w") as archive:
        archive.writestr("other.txt", "x")
    cases = {
        no_json: "holds no snapshot.json (not a KAI snapshot)",
        kai_zip(tmp_path, {"config": {}}, "raw.zip"): "snapshot.json has no rawObjects mapping",
        kai_zip(
            tmp_path, {"rawObjects": {"pods": {"a": 1}}}, "pods.zip"
        ): "rawObjects.pods: expected a list of objects",
        kai_zip(tmp_path, {"rawObjects": {}, "config": {"actions": "fly"}}, "config.zip"): "unknown action 'fly'",
    }
    for path, message in cases.items():
        result = CliRunner().invoke(main, ["simulate", str(path)])
        assert result.exit_code == 1 and message in result.output, result.output
        assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def _get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, bytes(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, bytes(error.read())


def test_the_plugin_server_answers_from_the_scheduler_loop() -> None:
    plural = {"pods": "Pod", "nodes": "Node", "queues": "Queue", "podGroups": "PodGroup"}
    cluster = MemoryCluster(
        [{"kind": kind, **item} for name, kind in plural.items() for item in kai_objects()[name]],
        clock=lambda: format_time(T0),
    )
    loop = SchedulerLoop(cluster, parse_config({}), clock=lambda: T0)
    server = PluginServer(0)
    try:
        code, body = _get(server.port, "/get-cycles")
        assert code == 503 and b"not running yet" in body
        server.attach(loop, cluster)
        code, body = _get(server.port, "/get-job-order")
        assert code == 200
        order = json.loads(body)
        assert [entry["priority"] for entry in order["global_order"]] == [50] and list(order["queue_order"]) == ["q"]
        loop.run_once()
        cycles = json.loads(_get(server.port, "/get-cycles?podgroup=ns/pg")[1])
        assert cycles["podgroup"] == "ns/pg" and cycles["config"]["actions"].startswith("allocate")
        assert cycles["cycles"] == [{"cycle": 1, "at": T0, "did": "placed", "pods": [{"pod": "ns/p-0", "node": "n0"}]}]
        code, body = _get(server.port, "/get-snapshot")
        snapshot = read_zip(body, "served")
        assert code == 200 and {obj["kind"] for obj in snapshot.objects} >= {"Pod", "Node", "Queue", "PodGroup"}
        code, body = _get(server.port, "/metrics")
        assert code == 404 and b"/get-snapshot" in body
        summary = json.loads(_get(server.port, "/get-cycles")[1])["cycles"]
        assert summary == [{"cycle": 1, "at": T0, "binds": 1, "pipelined": 0, "evictions": 0, "unschedulable": 0}]
    finally:
        server.close()
    assert zipfile.is_zipfile(io.BytesIO(write_zip(parse_config({}), shard_of({}, None), T0)))
