"""The example `make run` shows: the department's gang placed whole; the simulated components' clock."""

import dataclasses
import itertools
from pathlib import Path

import pytest
import yaml
from insight_support import NOW, node_obj, pod_obj, podgroup_obj, queue_obj
from repo import REPO

from kai.components.podgrouper import component
from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import load_scenario


def test_make_run_example_places_the_gang_whole() -> None:
    run = run_scenario(load_scenario(REPO / "examples" / "department.yaml"))
    pods = run.cycles[-1].outcome.pods
    workers = [p for k, p in pods.items() if "distributed-training-worker" in k]
    assert len(workers) == 4 and all(p["status"] == "Binding" for p in workers)
    assert pods["ml/training-job"]["status"] == "Binding"
    assert pods["ml/inference-light"]["status"] == "Binding"
    assert pods["ml/inference-light"]["acceptedGPUs"] == 0.5


def test_the_pod_grouper_groups_every_pod_however_long_a_pass_takes_on_the_wall_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The running pod-grouper ends a pass after PASS_S of its clock; the simulated one's clock is the
    simulation's, which stands still within a cycle, so a loaded machine (here: a pass of no time at all) does not
    leave pods ungrouped, nor change the answer."""
    monkeypatch.setattr(component, "PASS_S", 0.0)
    objects = [queue_obj("dept"), queue_obj("a", "dept"), node_obj("n0", 8)]
    for index in range(6):
        pod = pod_obj(f"p{index}", "", 1)
        pod["metadata"]["labels"] = {"kai.scheduler/queue": "a"}
        objects.append(pod)
    path = tmp_path / "bare.yaml"
    path.write_text(yaml.safe_dump({"name": "bare", "now": NOW, "config": {"actions": "allocate"}, "objects": objects}))
    pods = run_scenario(load_scenario(path)).cycles[-1].outcome.pods
    assert sorted(pod["status"] for pod in pods.values()) == ["Binding"] * 6


def test_the_victim_search_stops_at_its_budget_on_a_running_search_clock(tmp_path: Path) -> None:
    """A file's run searches on a frozen clock (the same answer on any machine); a live cluster's dry cycle on the
    scheduler's own (``Scenario.search_timer``), so that its scenarioSearchBudgets end its search as they end the
    scheduler's: here a clock on which every budget has run out before the search begins."""
    objects = [
        queue_obj("dept"),
        queue_obj("a", "dept", quota=0),
        queue_obj("b", "dept", quota=4),
        node_obj("n0", 4),
        podgroup_obj("held", "a", 1, "2025-01-01T00:00:00Z"),
        pod_obj("held-0", "held", 4, "n0"),
        podgroup_obj("wants", "b", 1),
        pod_obj("wants-0", "wants", 4),
    ]
    path = tmp_path / "reclaim.yaml"
    config = {"actions": "allocate, reclaim"}
    path.write_text(yaml.safe_dump({"name": "reclaim", "now": NOW, "config": config, "objects": objects}))
    frozen = load_scenario(path)
    late = itertools.count(0.0, 1000.0).__next__
    for scenario, want in (
        (frozen, {"team/held-0": "Releasing", "team/wants-0": "Pipelined"}),
        (dataclasses.replace(frozen, search_timer=late), {"team/held-0": "Running", "team/wants-0": "Pending"}),
    ):
        pods = run_scenario(scenario).cycles[-1].outcome.pods
        assert {key: pod["status"] for key, pod in pods.items()} == want
