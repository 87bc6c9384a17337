"""The example `make run` shows: the department's gang placed whole; the simulated components' clock."""

from pathlib import Path

import pytest
import yaml
from insight_support import NOW, node_obj, pod_obj, queue_obj
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
