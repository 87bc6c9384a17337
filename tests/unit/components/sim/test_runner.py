"""The example `make run` shows: the department's gang placed whole."""

from repo import REPO

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
