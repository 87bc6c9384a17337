"""What-if runs of ``kai simulate``: a scenario run as it is and changed, side by side on the simulated clock;
changes of queue quotas, nodes and the scheduler config, and bad changes as one clear line."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from research_cluster import FILES, RESEARCH

from kai.cli.main import main
from kai.components.sim.scenario import ClockSpec, ScenarioError, load_scenario, load_scenarios
from kai.components.sim.whatif import plots
from kai.components.sim.whatif.apply import apply_changes
from kai.components.sim.whatif.changes import ChangeError, Changes, parse_add_nodes, parse_changes, parse_set
from kai.components.sim.whatif.compare import Assumptions, Comparison, compare, wait_stats

NOW = "2026-01-01T00:00:00Z"
HOUR = 3600.0


def queue(name: str, quota: float) -> dict[str, Any]:
    gpu = {"quota": quota, "limit": -1, "overQuotaWeight": 1}
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"resources": {"gpu": gpu, "cpu": unlimited, "memory": unlimited}},
    }


def node(name: str, gpus: int = 8) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.count": str(gpus), "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}},
    }


def jobs(queue_name: str, count: int, gpus: int = 1) -> list[dict[str, Any]]:
    """``count`` one-pod jobs of ``gpus`` GPUs each in ``queue_name``, all waiting at the start."""
    objects: list[dict[str, Any]] = []
    for i in range(count):
        name = f"{queue_name}-{i}"
        objects.append(
            {
                "apiVersion": "scheduling.run.ai/v2alpha2",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "ml", "creationTimestamp": NOW},
                "spec": {"queue": queue_name, "priorityClassName": "train", "minMember": 1},
            }
        )
        resources = {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)}}
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-0",
                    "namespace": "ml",
                    "creationTimestamp": NOW,
                    "annotations": {"pod-group-name": name},
                },
                "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c", "resources": resources}]},
                "status": {"phase": "Pending"},
            }
        )
    return objects


def scenario_file(tmp_path: Path, *objects: dict[str, Any]) -> Path:
    train = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "what-if", "now": NOW, "objects": [train, *objects]}))
    return path


def two_queues(tmp_path: Path) -> Path:
    return scenario_file(tmp_path, queue("a", 4), queue("b", 4), node("node-0"), *jobs("a", 8), *jobs("b", 8))


def run(path: Path, changes: Changes, hours: float = 3, run_time_s: float | None = HOUR) -> Comparison:
    period = 600.0
    scenario = load_scenario(path, clock=ClockSpec(period, hours * HOUR))
    changed = apply_changes(scenario, changes)
    given = Assumptions((str(path),), scenario.now, scenario.runner.cycles_before_check, period, run_time_s)
    return compare(scenario, changed, given, changes.describe())


def test_a_queue_quota_change_moves_gpus_between_queues(tmp_path: Path) -> None:
    changes = parse_set("queue.a.gpu.quota=6")
    changes.extend(parse_set("queue.b.gpu.quota=2"))
    comparison = run(two_queues(tmp_path), changes, run_time_s=None)
    base, changed = comparison.base, comparison.changed
    assert base.mean_queue("a", "allocated") == pytest.approx(4)
    assert base.mean_queue("b", "allocated") == pytest.approx(4)
    assert changed.mean_queue("a", "allocated") == pytest.approx(6)
    assert changed.mean_queue("b", "allocated") == pytest.approx(2)
    assert changed.mean_queue("a", "fair_share") > base.mean_queue("a", "fair_share")
    assert (len(base.waits["a"]), len(changed.waits["a"])) == (4, 6)
    assert (base.pending["b"], changed.pending["b"]) == (4, 6)
    assert comparison.changes == ["queue a: gpu.quota = 6", "queue b: gpu.quota = 2"]


def test_an_added_node_lowers_the_time_to_start(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, queue("a", 8), node("node-0"), *jobs("a", 16))
    comparison = run(path, parse_changes({"nodes": {"add": [{"like": "node-0", "count": 1}]}}, "test"))
    base, changed = comparison.base, comparison.changed
    assert base.capacity[-1] == 8 and changed.capacity[-1] == 16
    assert wait_stats(base.waits["a"]) == (pytest.approx(HOUR / 2), pytest.approx(HOUR))
    assert wait_stats(changed.waits["a"]) == (0.0, 0.0)
    assert len(base.started) == len(changed.started) == 16
    assert changed.utilisation()[0] == 1.0 and base.utilisation()[0] == 1.0
    assert base.completed == changed.completed == 16


def test_the_default_run_time_counts_from_the_start_of_the_run(tmp_path: Path) -> None:
    """Pods running in the input for longer than the default run time do not all finish at the first step."""
    running = jobs("a", 8)
    for obj in running:
        if obj["kind"] == "Pod":
            obj["spec"]["nodeName"] = "node-0"
            obj["status"] = {"phase": "Running", "startTime": "2025-12-31T00:00:00Z"}
    path = scenario_file(tmp_path, queue("a", 8), queue("b", 0), node("node-0"), *running, *jobs("b", 8))
    comparison = run(path, Changes(), hours=2)
    waits = sorted(comparison.base.waits["b"])
    assert waits[0] == pytest.approx(HOUR) and waits[-1] == pytest.approx(HOUR)


def test_a_removed_node_sends_its_pods_back_to_pending(tmp_path: Path) -> None:
    running = jobs("a", 4)
    for obj in running:
        if obj["kind"] == "Pod":
            obj["spec"]["nodeName"] = "node-1"
            obj["status"] = {"phase": "Running", "startTime": NOW}
    path = scenario_file(tmp_path, queue("a", 8), node("node-0", 2), node("node-1"), *running)
    comparison = run(path, Changes(remove_nodes=["node-1"]), hours=1, run_time_s=None)
    assert comparison.base.started == set() and comparison.changed.capacity[-1] == 2
    assert len(comparison.changed.started) == 2 and comparison.changed.pending["a"] == 2


def test_an_evicted_pod_goes_back_to_pending_and_is_placed_again(tmp_path: Path) -> None:
    """Evicting a pod moves it: its BindRequest and the reservation pod of its shared GPU go with it, and the
    scheduler places it again (here on the other node, the one with room)."""
    running = jobs("a", 2)
    running[1]["spec"]["nodeName"] = "node-0"
    running[1]["status"] = {"phase": "Running", "startTime": NOW}
    running[1]["metadata"]["labels"] = {"runai-gpu-group": "g1"}
    running[3]["metadata"]["annotations"]["gpu-fraction"] = "0.5"
    reservation = {
        "kind": "Pod",
        "metadata": {"name": "gpu-reservation-node-0-x", "namespace": "kai-resource-reservation"},
        "spec": {"nodeName": "node-0", "containers": [{"name": "c"}]},
    }
    reservation["metadata"]["labels"] = {"runai-gpu-group": "g1", "app": "kai-resource-reservation"}
    bind_request = {
        "apiVersion": "scheduling.run.ai/v1alpha2",
        "kind": "BindRequest",
        "metadata": {"name": "a-0-0", "namespace": "ml"},
        "spec": {"podName": "a-0-0", "selectedNode": "node-0"},
    }
    path = scenario_file(
        tmp_path, queue("a", 8), node("node-0", 1), node("node-1"), *running, reservation, bind_request
    )
    scenario = load_scenario(path)
    changed = apply_changes(scenario, parse_changes({"pods": {"evict": ["ml/a-0-0"]}}, "test"))
    pod = next(o for o in changed.objects if o["metadata"]["name"] == "a-0-0")
    assert "nodeName" not in pod["spec"] and pod["status"] == {"phase": "Pending"}
    assert "runai-gpu-group" not in pod["metadata"]["labels"]
    assert not [o for o in changed.objects if o["kind"] == "BindRequest" or "reservation" in o["metadata"]["name"]]
    assert [o for o in scenario.objects if o["kind"] == "BindRequest"]  # the input is untouched
    comparison = run(path, parse_changes({"pods": {"evict": ["ml/a-0-0"]}}, "test"), hours=0.5, run_time_s=None)
    assert comparison.changed.started == {"ml/a-0-0", "ml/a-1-0"} and comparison.base.started == {"ml/a-1-0"}


def test_changes_written_as_a_document_are_read_back_the_same() -> None:
    """What ``kai explain -o json`` gives as a fix is a change file ``kai simulate --what-if`` takes as it is."""
    document = {
        "queues": {"a": {"gpu": {"quota": 6, "limit": 8.5}, "priority": 3}},
        "nodes": {"add": [{"like": "node-0", "count": 2}], "remove": ["node-1"]},
        "pods": {"evict": ["ml/a-0-0"]},
        "scheduler": {"actions": "allocate", "placement": {"gpu": "spread"}},
    }
    changes = parse_changes(document, "test")
    assert changes.as_document() == document
    assert parse_changes(changes.as_document(), "again") == changes
    cli = parse_set("queue.a.gpu.quota=6")
    cli.extend(parse_add_nodes("2:like=node-0"))
    assert cli.as_document() == {
        "queues": {"a": {"gpu": {"quota": 6}}},
        "nodes": {"add": [{"like": "node-0", "count": 2}]},
    }


def test_scheduler_changes_replace_actions_and_placement(tmp_path: Path) -> None:
    scenario = load_scenario(two_queues(tmp_path))
    changes = parse_changes({"scheduler": {"actions": "allocate", "placement": {"gpu": "spread"}}}, "test")
    config = apply_changes(scenario, changes).config
    assert config.actions == ("allocate",)
    placement = [o for tier in config.tiers for o in tier if o.name == "nodeplacement"]
    assert [o.arguments["gpu"] for o in placement] == ["spread"]
    assert scenario.config.actions != ("allocate",)


def test_a_submitted_workload_runs_in_the_changed_world_only(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, queue("a", 4), queue("b", 4), node("node-0"), *jobs("a", 2))
    submitted = [{**obj, "metadata": {**obj["metadata"], "creationTimestamp": None}} for obj in jobs("b", 3, gpus=2)]
    comparison = run(path, parse_changes({"submit": submitted}, "test"), hours=1, run_time_s=None)
    assert "b" not in comparison.base.waits and comparison.changed.waits["b"] == [0.0, 0.0, 0.0]
    assert comparison.changes == ["6 object(s) submitted at the start"]
    assert comparison.changed.utilisation()[0] == 1.0 and comparison.base.utilisation()[0] == 0.25


def test_a_submitted_pytorchjob_runs_as_one_gang_of_its_replicas(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, queue("a", 4), queue("b", 4), node("node-0"), *jobs("a", 2))
    container = {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"}}}
    template = {"spec": {"schedulerName": "kai-scheduler", "containers": [container]}}
    specs = {"Master": {"replicas": 1, "template": template}, "Worker": {"replicas": 2, "template": template}}
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "bert", "namespace": "ml", "labels": {"kai.scheduler/queue": "b"}},
        "spec": {"pytorchReplicaSpecs": specs},
    }
    comparison = run(path, parse_changes({"submit": [job]}, "test"), hours=1, run_time_s=None)
    assert comparison.changed.waits["b"] == [0.0, 0.0, 0.0]  # its three pods started together, at once
    assert comparison.changed.utilisation()[0] == 1.0


def test_the_command_prints_base_beside_changed(tmp_path: Path) -> None:
    path = two_queues(tmp_path)
    changes = tmp_path / "changes.yaml"
    changes.write_text(yaml.safe_dump({"queues": {"a": {"gpu": {"quota": 6}}, "b": {"gpu": {"quota": 2}}}}))
    args = ["simulate", str(path), "--what-if", str(changes), "--period", "10m", "--duration", "2h"]
    result = CliRunner().invoke(main, [*args, "--default-run-time", "none"])
    assert result.exit_code == 0, result.output
    assert f"input: {path}" in result.output
    assert "horizon: 2h0m0s from 2026-01-01T00:00:00Z, one cycle every 10m0s (12 cycles)" in result.output
    assert "run times: pods without a run time run until evicted" in result.output
    assert "queue a: gpu.quota = 6" in result.output and "Result: the runs differ" in result.output
    lines = {line.split()[0]: line for line in result.output.splitlines() if line.strip()}
    assert "4.00 → 6.00" in lines["a"] and "4.00 → 2.00" in lines["b"]
    started = next(line for line in result.output.splitlines() if line.startswith("pods started"))
    assert started.split()[-2:] == ["8", "8"]  # base and changed


BAD_FILES = [
    ({"queues": {"a": {"gpu": {"quota": "lots"}}}}, "field queues.a.gpu.quota: got 'lots'; expected a number"),
    ({"queues": {"a": {"gpu": {"quotas": 4}}}}, "field queues.a.gpu.quotas: unknown; allowed: quota, limit"),
    ({"queues": {"a": {"gpus": {"quota": 4}}}}, "field queues.a.gpus: unknown; allowed: gpu, cpu, memory"),
    ({"queues": {"nope": {"gpu": {"quota": 4}}}}, "queue nope: no such Queue in the input; its queues: a, b"),
    ({"queue": {}}, "field queue: unknown; allowed: queues, nodes, pods, scheduler, submit"),
    ({"nodes": {"add": [{"like": "node-0", "count": 0}]}}, "field nodes.add[0].count: got 0"),
    ({"nodes": {"add": [{"like": "gone"}]}}, "like=gone: no such Node in the input; its nodes: node-0"),
    ({"nodes": {"remove": "node-0"}}, "field nodes.remove: expected a list, got str"),
    ({"scheduler": {"actions": "allocate, shuffle"}}, "field scheduler.actions: unknown action 'shuffle'"),
    ({"scheduler": {"placement": {"gpu": "pack"}}}, "field scheduler.placement.gpu: got 'pack'; allowed: binpack"),
    ({"submit": [{"kind": "Pod"}]}, "submit: Pod submit[0]: field metadata: got null"),
    ({"pods": {"evict": ["a-0"]}}, "field pods.evict[0]: got 'a-0'; expected a pod as namespace/name"),
    ({"pods": {"move": []}}, "field pods.move: unknown; allowed: evict"),
    ({"pods": {"evict": ["ml/a-0-0"]}}, "--evict-pod ml/a-0-0: it runs on no node in the input"),
    ({"pods": {"evict": ["ml/gone"]}}, "--evict-pod ml/gone: no such Pod in the input"),
    ([1, 2], "expected one mapping with queues, nodes, pods, scheduler, submit"),
]


@pytest.mark.parametrize(("content", "told"), BAD_FILES)
def test_a_bad_change_file_is_one_line_naming_the_field(tmp_path: Path, content: Any, told: str) -> None:
    changes = tmp_path / "changes.yaml"
    changes.write_text(yaml.safe_dump(content))
    args = ["simulate", str(two_queues(tmp_path)), "--what-if", str(changes), "--cycles", "2"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert told in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "told"),
    [
        (["--set", "queue.a.gpu.quota"], "expected FIELD=VALUE"),
        (["--set", "queue.a.gpu.quota=x"], "queue a gpu.quota: got 'x'; expected a number"),
        (["--set", "placement.gpu=pack"], "placement.gpu: got 'pack'; allowed: binpack, spread"),
        (["--add-nodes", "two:like=node-0"], "expected N:like=<node>"),
        (["--remove-node", "node-9"], "--remove-node node-9: no such Node in the input"),
        (["--evict-pod", "a-0"], "--evict-pod a-0: got 'a-0'; expected a pod as namespace/name"),
        (["--set", "queue.a.gpu.quota=2", "--default-run-time", "soon"], "--default-run-time"),
        (["--set", "queue.a.gpu.quota=2", "--check"], "a what-if run compares two runs"),
        (["--plot", "out"], "--default-run-time and --plot are for what-if runs"),
    ],
)
def test_bad_changes_on_the_command_line_are_one_clear_error(tmp_path: Path, args: list[str], told: str) -> None:
    result = CliRunner().invoke(main, ["simulate", str(two_queues(tmp_path)), "--cycles", "2", *args])
    assert result.exit_code != 0
    assert told in result.output, result.output
    assert "Traceback" not in result.output


def test_a_negative_amount_other_than_unlimited_is_refused() -> None:
    with pytest.raises(ChangeError, match=re.escape("queues.a.cpu.limit: got -2; expected 0 or more, or -1")):
        parse_changes({"queues": {"a": {"cpu": {"limit": -2}}}}, "test")


def test_the_plots_draw_a_panel_per_queue_and_say_when_no_pod_started(tmp_path: Path) -> None:
    """Queue b's quota drops to 0 with no GPUs over it: its pods start in the base run only; the time-to-start plot
    says "none started" for the changed run rather than a 0 that reads as "at once"."""
    changes = parse_set("queue.b.gpu.quota=0")
    changes.extend(parse_set("queue.b.gpu.limit=0"))
    comparison = run(two_queues(tmp_path), changes, run_time_s=None)
    assert comparison.base.waits["b"] and not comparison.changed.waits.get("b")
    allocation = plots._allocation(comparison)
    assert [axes.get_title() for axes in allocation.axes] == ["queue a", "queue b"]
    labels = [text.get_text() for text in plots._time_to_start(comparison).axes[0].texts]
    assert labels.count("none\nstarted") == 2  # p50 and max of queue b, changed run


def test_services_run_to_the_horizon_and_reservation_pods_are_no_workload(tmp_path: Path) -> None:
    """Issue 27's cluster for 3 hours with the default run time of 1 hour: the Deployment's and the RayCluster's
    pods (restartPolicy Always, long-running controllers) used to succeed after the hour and never come back, so the
    PyTorchJob "started after 1h", which would never happen; the GPU-sharing reservation pods counted as pods that
    finished. Now team-vision holds its 9.5 GPUs to the end, nothing finishes, the PyTorchJob still waits."""
    scenario = load_scenarios(list(FILES), clock=ClockSpec(600.0, 3 * HOUR))[0][1]
    assert not isinstance(scenario, ScenarioError)
    given = Assumptions(("research",), scenario.now, scenario.runner.cycles_before_check, 600.0, HOUR)
    comparison = compare(scenario, apply_changes(scenario, Changes()), given, [])
    base = comparison.base
    assert [sample.queues["team-vision"].allocated["gpu"] for sample in base.timeline] == [9.5] * 18
    assert base.completed == 0 and len(base.started) == 8  # the reservation pods are neither
    assert dict(base.pending) == {"team-llm": 5, "team-visoin": 1}
    assert "team-llm" not in base.waits


def test_identical_runs_say_so_and_the_assumptions_head_the_text_the_page_and_the_json(tmp_path: Path) -> None:
    """A quota raise that changes nothing that runs (the PyTorchJob needs whole free nodes, not quota) says so; the
    horizon, period, run times and inputs come first, in the terminal, on the page and in --json."""
    args = ["simulate", str(RESEARCH), "--duration", "3h", "--set", "queue.team-llm.gpu.quota=32"]
    text = CliRunner().invoke(main, [*args, "--plot", str(tmp_path / "plots")]).output
    head = text.splitlines()[:8]
    assert any(line.strip() == f"input: {RESEARCH}" for line in head), text
    horizon = "horizon: 3h0m0s from the start (the input gives no times), one cycle every 1m0s (180 cycles)"
    assert any(horizon in line for line in head), head  # not 1970-01-01T00:00:00Z
    assert any("batch pods without a run time run 1h0m0s" in line for line in head)
    assert "Result: identical: the changes made no difference in 3h0m0s" in " ".join(text.split())
    page = (tmp_path / "plots" / "index.html").read_text()
    assert page.index("<h2>Assumptions</h2>") < page.index("<h2>Changes</h2>") < page.index("<h2>Cluster</h2>")
    assert "horizon: 3h0m0s" in page and "run to the horizon" in page and "Result:</b> identical" in page
    document = json.loads(CliRunner().invoke(main, [*args, "--json"]).output)
    assert document["identical"] is True and document["inputs"] == [str(RESEARCH)]
    assert document["assumptions"][1].startswith("horizon: 3h0m0s")
