"""The seed's manifests work unchanged in `kai simulate`: several YAML documents in one file, a pod without a
namespace or PodGroup (grouped as the pod-grouper would), placed on a GPU node."""

import json
from pathlib import Path

from click.testing import CliRunner
from repo import REPO

from kai.cli.main import main
from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import load_scenario

SEED = REPO / "examples" / "seed"
EXTRA = """
---
apiVersion: v1
kind: Node
metadata: {name: gpu-node}
status: {allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8", pods: "110"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: train}
value: 50
"""


def test_seed_queues_and_training_pod_simulate_unchanged(tmp_path: Path) -> None:
    manifest = tmp_path / "seed.yaml"
    manifest.write_text(
        (SEED / "queues.yaml").read_text() + "\n---\n" + (SEED / "training-job.yaml").read_text() + EXTRA
    )
    run = run_scenario(load_scenario(manifest))
    pod = run.cycles[-1].outcome.pods["default/training-job"]
    assert pod["status"] == "Binding" and pod["node"] == "gpu-node"
    assert run.cycles[-1].outcome.podgroups[pod["podgroup"]]["queue"] == "equipe-training"


def test_manifests_given_together_form_one_cluster_and_scenarios_stay_apart(tmp_path: Path) -> None:
    """`kai simulate queues.yaml pod.yaml nodes.yaml` is one cluster, as `kubectl apply -f … -f …` would make it;
    a scenario file among them is its own run; an object named twice across files is reported, the first kept."""
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(EXTRA + "---\n{apiVersion: scheduling.run.ai/v2, kind: Queue, metadata: {name: departement-ml}}\n")
    scenario = REPO / "tests" / "conformance" / "kai-v0.17" / "allocate" / "allocateGang_test"
    scenario /= "000-allocate-train-gang-job.yaml"
    files = [SEED / "queues.yaml", scenario, SEED / "inference-light.yaml", nodes]
    result = CliRunner().invoke(main, ["simulate", "--json", *map(str, files)])
    assert result.exit_code == 0, result.output
    runs = json.loads(result.output)
    assert [run["name"] for run in runs] == ["queues + inference-light + nodes", "Allocate train gang job"]
    pods = runs[0]["cycles"][-1]["pods"]
    assert pods["default/inference-light"]["status"] == "Binding"
    (duplicate,) = (p for p in runs[0]["problems"] if p["severity"] == "error")
    assert (duplicate["kind"], duplicate["name"], duplicate["field"]) == ("Queue", "departement-ml", "metadata.name")
    assert f"duplicate of {SEED / 'queues.yaml'} objects[0]" in duplicate["problem"]
