"""``kai simulate`` with a clock: time advances between cycles, pods finish after their run time, finished jobs are
submitted again, and the per-queue allocation over time is reported; a scenario's frozen clock stays the default."""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kai.cli.main import main
from kai.components.sim.clock import SimClock
from kai.components.sim.runner import Simulation, run_scenario
from kai.components.sim.scenario import ClockSpec, ScenarioError, load_scenario

NOW = "2026-01-01T00:00:00Z"


def queue(name: str, quota: float = 0) -> dict[str, Any]:
    resources = {
        r: {"quota": quota if r == "gpu" else -1, "limit": -1, "overQuotaWeight": 1} for r in ("gpu", "cpu", "memory")
    }
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"resources": resources},
    }


def job(
    name: str, queue_name: str, gpus: int = 8, run_time: str = "", resubmit: bool = False, **spec: Any
) -> list[dict[str, Any]]:
    annotations = {"simulate.kai.scheduler/resubmit": "true"} if resubmit else {}
    podgroup = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml", "creationTimestamp": NOW, "annotations": annotations},
        "spec": {"queue": queue_name, "priorityClassName": "train", "minMember": 1, **spec},
    }
    pod_annotations = {"pod-group-name": name}
    if run_time:
        pod_annotations["simulate.kai.scheduler/run-time"] = run_time
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{name}-0", "namespace": "ml", "annotations": pod_annotations},
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)}}}],
        },
        "status": {"phase": "Pending"},
    }
    return [podgroup, pod]


NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-0", "labels": {"nvidia.com/gpu.count": "8"}},
    "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}},
}


def scenario_file(tmp_path: Path, objects: list[dict[str, Any]], **top: Any) -> Path:
    base = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50},
        NODE,
    ]
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({"name": "clock", "now": NOW, "objects": base + objects, **top}))
    return path


def holders(run: Any, queue_name: str) -> list[float]:
    return [sample.queues[queue_name].allocated["gpu"] for sample in run.timeline]


def test_the_frozen_clock_is_the_default(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, [queue("a"), *job("one", "a", run_time="1s")])
    scenario = load_scenario(path, cycles=3)
    sim = Simulation(scenario)
    assert not sim.clock.running
    run = run_scenario(scenario)
    assert [s.time for s in run.timeline] == [scenario.now] * 3
    assert run.completed == 0 and len(run.cycles) == 3


def test_pods_finish_after_their_run_time_and_free_their_gpus(tmp_path: Path) -> None:
    """Two 8-GPU jobs on one 8-GPU node: the second starts when the first has run its 30 minutes."""
    objects = [queue("a"), *job("first", "a", run_time="30m"), *job("second", "a", run_time="30m")]
    run = run_scenario(load_scenario(scenario_file(tmp_path, objects), clock=ClockSpec(600, 2 * 3600)))
    assert len(run.timeline) == 12
    assert holders(run, "a") == [8.0] * 6 + [0.0] * 6
    assert [s.binds for s in run.timeline][:4] == [1, 0, 0, 1]  # "first" bound at 0, "second" at +30m
    assert run.completed == 2
    pods = run.cycles[-1].outcome.pods
    assert pods["ml/first-0"]["status"] == pods["ml/second-0"]["status"] == "Succeeded"


def test_a_resubmitting_job_keeps_the_queues_demand_steady(tmp_path: Path) -> None:
    objects = [queue("a"), *job("train", "a", run_time="20m", resubmit=True)]
    run = run_scenario(load_scenario(scenario_file(tmp_path, objects), clock=ClockSpec(600, 3600)))
    assert holders(run, "a") == [8.0] * 6
    assert run.completed == 2
    podgroups = run.cycles[-1].outcome.podgroups
    assert sorted(podgroups) == ["ml/train-3"]  # finished generations are removed
    assert run.cycles[-1].outcome.pods["ml/train-3-0"]["status"] == "Running"


def test_an_ungrouped_pod_can_be_resubmitted_too(tmp_path: Path) -> None:
    pod = job("solo", "a", run_time="10m")[1]
    del pod["metadata"]["annotations"]["pod-group-name"]
    pod["metadata"]["annotations"]["simulate.kai.scheduler/resubmit"] = "true"
    pod["metadata"]["labels"] = {"kai.scheduler/queue": "a"}
    run = run_scenario(load_scenario(scenario_file(tmp_path, [queue("a"), pod]), clock=ClockSpec(300, 3600)))
    assert run.completed >= 4
    assert len(run.cycles[-1].outcome.podgroups) == 1  # the pod-grouper's PodGroup goes with each finished pod


def test_preemption_delay_plays_out_over_simulated_time(tmp_path: Path) -> None:
    """b deserves the node but may evict a's job only after waiting its 30m preemption delay."""
    objects = [queue("a"), queue("b", quota=8), *job("a-job", "a"), *job("b-job", "b", preemptionDelay="30m")]
    objects[3]["metadata"]["creationTimestamp"] = "2025-12-31T23:00:00Z"  # a's job is older, so it started first
    path = scenario_file(tmp_path, objects, config={"actions": "allocate, reclaim"})
    scenario = load_scenario(path, clock=ClockSpec(300, 3600))
    scenario.objects = [o for o in scenario.objects if o["metadata"]["name"] not in ("b-job", "b-job-0")]
    sim = Simulation(scenario)
    first = sim.cycle(1)
    sim.advance(first)  # a's job runs; then b's job arrives
    for obj in job("b-job", "b", preemptionDelay="30m"):
        obj["metadata"]["creationTimestamp"] = "2026-01-01T00:05:00Z"
        sim.cluster.create(obj["kind"], obj)
    evicted_at = []
    for number in range(2, 13):
        record = sim.cycle(number)
        if record.session.result.evictions:
            evicted_at.append(sim.clock.elapsed_s)
        sim.advance(record)
    assert evicted_at == [35 * 60]  # pending since +5m, allowed to reclaim 30 minutes later


def test_a_bad_run_time_is_reported_and_the_pod_runs_on(tmp_path: Path) -> None:
    run = run_scenario(
        load_scenario(scenario_file(tmp_path, [queue("a"), *job("x", "a", run_time="soon")]), clock=ClockSpec(60, 600))
    )
    assert [p.message for p in run.problems] == [
        "Pod ml/x-0: field metadata.annotations[simulate.kai.scheduler/run-time]: got 'soon'; expected a duration "
        "such as 60s, 1m30s, 2h or -1s; the pod runs until evicted"
    ]
    assert holders(run, "a") == [8.0] * 10


def test_the_clock_block_of_a_scenario(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, [queue("a")], clock={"period": "1m", "duration": "1h", "sampleEvery": "15m"})
    scenario = load_scenario(path)
    assert scenario.clock == ClockSpec(60, 3600, 900)
    assert scenario.runner.cycles_before_check == 60
    assert load_scenario(path, clock=ClockSpec(600)).runner.cycles_before_check == 6
    assert SimClock(0, 60).cycles_for(90) == 2


@pytest.mark.parametrize(
    ("clock", "message"),
    [
        ({"duration": "1h"}, "field clock.duration: needs a period (clock.period or --period) to advance by"),
        ({"period": "0s", "duration": "1h"}, "field clock.period: got '0s'; must be longer than 0"),
        ({"period": "1m", "every": "5m"}, "field clock.every: unknown key; allowed: period, duration, sampleEvery"),
        ({"period": "a minute"}, "field clock.period: got 'a minute'; expected a duration"),
    ],
)
def test_a_bad_clock_block_names_the_field(tmp_path: Path, clock: dict[str, str], message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_scenario(scenario_file(tmp_path, [queue("a")], clock=clock))


def test_kai_simulate_with_a_clock_prints_the_timeline_and_json(tmp_path: Path) -> None:
    objects = [queue("a"), queue("b"), *job("a1", "a", run_time="1h", resubmit=True), *job("b1", "b", run_time="1h")]
    path = scenario_file(tmp_path, objects)
    runner = CliRunner()
    result = runner.invoke(main, ["simulate", str(path), "--period", "10m", "--duration", "3h", "--sample-every", "1h"])
    assert result.exit_code == 0, result.output
    assert "GPUs over time, after each cycle: allocated / fair share" in result.output
    rows = [line for line in result.output.splitlines() if line.startswith("+")]
    assert [row.split()[0] for row in rows] == ["+0s", "+1h0m0s", "+2h0m0s", "+2h50m0s"]
    result = runner.invoke(main, ["simulate", str(path), "--period", "10m", "--cycles", "4", "--json"])
    document = json.loads(result.output)[0]
    assert [s["elapsedSeconds"] for s in document["timeline"]] == [0, 600, 1200, 1800]
    assert document["timeline"][0]["queues"]["a"]["allocated"]["gpu"] == 8
    assert document["clock"] == {"start": NOW, "periodSeconds": 600}
    assert len(document["cycles"]) == 1


def test_kai_simulate_clock_flags_are_checked(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, [queue("a")])
    result = CliRunner().invoke(main, ["simulate", str(path), "--period", "1m"])
    assert result.exit_code == 2 and "--period needs --duration or --cycles" in result.output
    result = CliRunner().invoke(main, ["simulate", str(path), "--period", "soon", "--cycles", "2"])
    assert result.exit_code == 2 and "Invalid value for '--period': got 'soon'; expected a duration" in result.output
    result = CliRunner().invoke(main, ["simulate", str(path), "--duration", "1h"])
    assert result.exit_code == 1 and "field clock.duration: needs a period" in result.output


def test_a_resubmitted_job_skips_names_the_input_already_uses(tmp_path: Path) -> None:
    objects = [queue("a"), *job("train", "a", run_time="10m", resubmit=True), *job("train-2", "a", gpus=0)]
    run = run_scenario(load_scenario(scenario_file(tmp_path, objects), clock=ClockSpec(600, 1800)))
    assert sorted(run.cycles[-1].outcome.podgroups) == ["ml/train-2", "ml/train-4"]
    assert run.completed == 2


def _failing(name: str, fail_after: str, restart_policy: str = "Never", run_time: str = "") -> list[dict[str, Any]]:
    podgroup, pod = job(name, "a", run_time=run_time)
    pod["metadata"]["annotations"]["simulate.kai.scheduler/fail-after"] = fail_after
    pod["spec"]["restartPolicy"] = restart_policy
    return [podgroup, pod]


def test_a_pod_fails_after_its_fail_after_and_frees_its_gpus(tmp_path: Path) -> None:
    """fail-after 20m before a run time of 1h: the pod fails at +20m and the next job takes the node; a run time
    that ends first wins (the pod succeeds)."""
    objects = [queue("a"), *_failing("crash", "20m", run_time="1h"), *job("next", "a", run_time="2h")]
    objects += _failing("quick", "1h", run_time="10m")
    objects[-1]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "0"
    run = run_scenario(load_scenario(scenario_file(tmp_path, objects), clock=ClockSpec(600, 3600)))
    pods = run.cycles[-1].outcome.pods
    assert (pods["ml/crash-0"]["status"], pods["ml/quick-0"]["status"]) == ("Failed", "Succeeded")
    assert pods["ml/next-0"]["status"] == "Running"
    assert (run.failed, run.completed) == (1, 1)
    assert [s.binds for s in run.timeline][:3] == [2, 0, 1]  # crash and quick at 0, next once crash failed at +20m


def test_fail_after_fails_only_pods_of_restart_policy_never(tmp_path: Path) -> None:
    objects = [queue("a"), *_failing("restarts", "10m", restart_policy="OnFailure")]
    run = run_scenario(load_scenario(scenario_file(tmp_path, objects), clock=ClockSpec(600, 3600)))
    assert run.failed == 0 and run.cycles[-1].outcome.pods["ml/restarts-0"]["status"] == "Running"
    (problem,) = run.problems
    assert problem.field == "metadata.annotations[simulate.kai.scheduler/fail-after]"
    assert problem.problem.startswith("the pod's restartPolicy is OnFailure: its containers restart in place")
    run = run_scenario(
        load_scenario(scenario_file(tmp_path, [queue("a"), *_failing("x", "later")]), clock=ClockSpec(600, 1200))
    )
    assert [p.problem for p in run.problems] == [
        "got 'later'; expected a duration such as 60s, 1m30s, 2h or -1s; the pod does not fail"
    ]


def test_a_start_time_kai_cannot_read_is_reported_and_the_pod_runs_on(tmp_path: Path) -> None:
    podgroup, pod = job("x", "a", run_time="10m")
    pod["status"] = {"phase": "Running", "startTime": "yesterday"}
    pod["spec"]["nodeName"] = "node-0"
    run = run_scenario(load_scenario(scenario_file(tmp_path, [queue("a"), podgroup, pod]), clock=ClockSpec(600, 1800)))
    assert run.completed == 0
    assert [(p.name, p.field) for p in run.problems] == [("ml/x-0", "status.startTime")]


def test_manifests_start_at_the_newest_time_they_mention(tmp_path: Path) -> None:
    """Plain manifests have no `now`: kai ran them at 1970-01-01, so a pod exported with its creation time waited
    "0s" ("since 2026-… (in 56 years)"). Their clock starts at the newest time an object mentions, as a KAI
    snapshot's does: the pod created two hours before the newest object has waited two hours."""
    pending = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "old", "namespace": "ml", "creationTimestamp": "2026-01-01T10:00:00Z"},
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "16"}}}],
        },
    }
    team = {**queue("team"), "metadata": {"name": "team", "creationTimestamp": "2026-01-01T12:00:00Z"}}
    pending["metadata"]["labels"] = {"kai.scheduler/queue": "team"}
    path = tmp_path / "manifests.yaml"
    path.write_text(yaml.safe_dump_all([team, NODE, pending]))
    assert load_scenario(path).now == 1767268800.0  # 2026-01-01T12:00:00Z
    text = CliRunner().invoke(main, ["explain", "pod", "ml/old", "-f", str(path), "--fix-budget", "0"]).output
    assert "State: waiting · waiting 2h0m0s, since 10:00:00Z (2h0m0s ago)" in text, text


def test_an_input_without_times_is_told_from_the_start_of_its_run(tmp_path: Path) -> None:
    """Manifests that mention no time run on a clock that starts at 0 (so that runs repeat, cron schedules
    included); kai tells those times from the start of the run, not as dates in 1970."""
    pending = job("big", "team", gpus=16)
    for obj in pending:
        obj["metadata"].pop("creationTimestamp", None)
    path = tmp_path / "manifests.yaml"
    path.write_text(yaml.safe_dump_all([queue("team"), NODE, *pending]))
    assert load_scenario(path).now == 0.0
    args = ["-f", str(path), "--fix-budget", "0"]
    told = CliRunner().invoke(main, ["explain", "podgroup", "ml/big", *args]).output
    assert "waiting 0s, since the start of the run (the input gives no times)" in told, told
    assert "cycle 1 (now): waited" in told and "1970" not in told and "00:00:00Z" not in told
    later = CliRunner().invoke(main, ["simulate", str(path), "--period", "1m", "--duration", "1h"]).output
    assert "after cycle 60, 59m0s into the run (the input gives no times)" in later.splitlines()[0], later
